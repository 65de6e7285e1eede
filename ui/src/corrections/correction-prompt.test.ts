// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import type { BlockCorrection, CorrectedBlock } from "../api";
import type { Block, CorrectedPage, DifferingCorrection } from "../events";
import type { CorrectionApi } from "./corrected-page";
import { CorrectionPrompts } from "./correction-prompt";

const BLOCKS: Block[] = [0, 1, 2].map((id) => ({ id, label: "text", boxes: [], markdown: `new ${id}`, warning: null }));

function page(differing: DifferingCorrection[], corrected: number[] = []): CorrectedPage {
  return { page: 2, markdown: "", blocks: BLOCKS, corrected, added: [], differing };
}

const AT_BLOCK_1: DifferingCorrection = { correctedBlock: 1, mine: "my <b>text</b>", block: 1, now: "new 1" };
const NOWHERE: DifferingCorrection = { correctedBlock: 4, mine: "gone", block: null, now: "" };

function setup() {
  const section = document.createElement("section");
  section.dataset["page"] = "2";
  for (const block of BLOCKS) {
    const element = document.createElement("div");
    element.className = "markdown-block";
    element.dataset["blockId"] = String(block.id);
    section.append(element);
  }
  const notice = document.createElement("p");
  notice.className = "page-notice";
  section.append(notice);
  document.body.append(section);
  const blockElement = (id: number) => section.querySelector<HTMLElement>(`[data-block-id="${id}"]`) ?? undefined;
  const api = {
    correctBlock: vi.fn((_correction: BlockCorrection) => Promise.resolve(page([], [1]))),
    forgetCorrection: vi.fn((_block: CorrectedBlock) => Promise.resolve(page([]))),
  } satisfies CorrectionApi;
  // As the session does: the answer is shown, its prompts replacing the page's.
  const answered = vi.fn((answer: CorrectedPage, _blockId: number | null) => prompts.show(section, answer, blockElement));
  const prompts = new CorrectionPrompts("doc-1", api, answered);
  const all = () => [...section.querySelectorAll<HTMLElement>(".correction-prompt")];
  const click = (prompt: HTMLElement, name: "keep" | "drop") =>
    prompt.querySelector<HTMLButtonElement>(`.correction-${name}`)!.click();
  return { section, notice, blockElement, api, answered, prompts, all, click };
}

afterEach(() => document.body.replaceChildren());

describe("CorrectionPrompts", () => {
  it("asks before the block now where the corrected one was, showing the person's Markdown as text", () => {
    const { section, blockElement, prompts, all } = setup();
    prompts.show(section, page([AT_BLOCK_1]), blockElement);
    const [prompt] = all();
    expect(all()).toHaveLength(1);
    expect(prompt!.nextElementSibling).toBe(blockElement(1));
    expect(prompt!.querySelector(".correction-prompt-text")?.textContent).toBe(
      "You corrected this block, and the page was read again with different text here.",
    );
    const mine = prompt!.querySelector("details")!;
    expect(mine.textContent).toContain("my <b>text</b>");
    expect(mine.querySelector("b"), "the person's Markdown is never HTML").toBeNull();
    expect(prompt!.querySelector(".correction-keep")?.textContent).toBe("Keep mine");
    expect(prompt!.querySelector(".correction-drop")?.textContent).toBe("Use the new reading");
    expect(prompt!.querySelector<HTMLElement>(".correction-prompt-error")!.hidden).toBe(true);
  });

  it("asks at the end of the page, before its notice, when no block is where the corrected one was", () => {
    const { section, notice, blockElement, prompts, all } = setup();
    prompts.show(section, page([NOWHERE]), blockElement);
    expect(all()[0]?.nextElementSibling).toBe(notice);
    expect(all()[0]?.previousElementSibling).toBe(blockElement(2));
    notice.remove();
    prompts.show(section, page([NOWHERE]), blockElement);
    expect(section.lastElementChild).toBe(all()[0]);
  });

  it("replaces the page's prompts on each showing, and removes them when asked", () => {
    const { section, blockElement, prompts, all } = setup();
    prompts.show(section, page([AT_BLOCK_1, NOWHERE]), blockElement);
    expect(all().map((p) => p.dataset["correctedBlock"])).toEqual(["1", "4"]);
    prompts.show(section, page([NOWHERE]), blockElement);
    expect(all().map((p) => p.dataset["correctedBlock"])).toEqual(["4"]);
    prompts.remove(section);
    expect(all()).toEqual([]);
  });

  it("keeps the person's Markdown for the block now there, replacing the stored correction", async () => {
    const { section, blockElement, api, answered, prompts, all, click } = setup();
    prompts.show(section, page([AT_BLOCK_1, NOWHERE]), blockElement);
    click(all()[0]!, "keep");
    expect(api.correctBlock).toHaveBeenCalledWith({
      id: "doc-1",
      page: 2,
      blockId: 1,
      markdown: "my <b>text</b>",
      replacing: 1,
    });
    await vi.waitFor(() => expect(answered).toHaveBeenCalledWith(page([], [1]), 1));
    expect(all(), "the answer no longer differs").toEqual([]);
    expect(api.forgetCorrection).not.toHaveBeenCalled();
  });

  it("keeps a correction with no block to show it in by only putting the question away", () => {
    const { section, blockElement, api, answered, prompts, all, click } = setup();
    prompts.show(section, page([NOWHERE]), blockElement);
    click(all()[0]!, "keep");
    expect(all()).toEqual([]);
    expect(api.correctBlock).not.toHaveBeenCalled();
    expect(api.forgetCorrection).not.toHaveBeenCalled();
    expect(answered).not.toHaveBeenCalled();
  });

  it("uses the new reading by dropping the correction under the block it was stored for", async () => {
    const { section, blockElement, api, answered, prompts, all, click } = setup();
    const moved = { ...AT_BLOCK_1, correctedBlock: 3 };
    prompts.show(section, page([moved, NOWHERE]), blockElement);
    api.forgetCorrection.mockResolvedValueOnce(page([NOWHERE]));
    click(all()[0]!, "drop");
    expect(api.forgetCorrection).toHaveBeenCalledWith({ id: "doc-1", page: 2, blockId: 3 });
    await vi.waitFor(() => expect(answered).toHaveBeenCalledWith(page([NOWHERE]), 1));
    expect(all().map((p) => p.dataset["correctedBlock"])).toEqual(["4"]);

    click(all()[0]!, "drop");
    expect(api.forgetCorrection).toHaveBeenLastCalledWith({ id: "doc-1", page: 2, blockId: 4 });
    await vi.waitFor(() => expect(answered).toHaveBeenLastCalledWith(page([]), null));
    expect(all()).toEqual([]);
  });

  it("says in the prompt why a choice could not be kept, and lets the person choose again", async () => {
    const { section, blockElement, api, answered, prompts, all, click } = setup();
    prompts.show(section, page([AT_BLOCK_1]), blockElement);
    let refuse!: (error: unknown) => void;
    api.correctBlock.mockReturnValueOnce(new Promise((_resolve, reject) => (refuse = reject)));
    const prompt = all()[0]!;
    click(prompt, "keep");
    const buttons = [...prompt.querySelectorAll("button")];
    expect(buttons.every((b) => b.disabled), "one choice at a time").toBe(true);
    refuse("The cache cannot be written");
    const error = prompt.querySelector<HTMLElement>(".correction-prompt-error")!;
    await vi.waitFor(() => expect(error.hidden).toBe(false));
    expect(error.textContent).toBe("The cache cannot be written");
    expect(buttons.some((b) => b.disabled)).toBe(false);
    expect(all()).toEqual([prompt]);
    expect(answered).not.toHaveBeenCalled();
  });
});
