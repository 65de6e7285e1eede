// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import type { BlockCorrection, CorrectedBlock } from "../api";
import type { CorrectedPage } from "../events";
import { BlockEditor, rowsFor, type EditedBlock } from "./block-editor";
import type { CorrectionApi } from "./corrected-page";

const ANSWER: CorrectedPage = {
  page: 1,
  markdown: "# Fixed",
  blocks: [{ id: 0, label: "title", boxes: [], markdown: "# Fixed", warning: null }],
  corrected: [0],
  added: [],
  differing: [],
};

/** A promise the test settles when it wants, to look at the editor while the command is waiting. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

function setup() {
  const section = document.createElement("section");
  section.dataset["page"] = "1";
  for (const id of [0, 1]) {
    const block = document.createElement("div");
    block.className = "markdown-block";
    block.dataset["blockId"] = String(id);
    block.textContent = `block ${id}`;
    section.append(block);
  }
  document.body.append(section);
  const api = {
    correctBlock: vi.fn((_correction: BlockCorrection) => Promise.resolve(ANSWER)),
    forgetCorrection: vi.fn((_block: CorrectedBlock) => Promise.resolve(ANSWER)),
  } satisfies CorrectionApi;
  const answered = vi.fn((_answer: CorrectedPage, _blockId: number | null) => {});
  const editor = new BlockEditor("doc-1", api, answered);
  const blockElement = (id: number) => section.querySelector<HTMLElement>(`[data-block-id="${id}"]`)!;
  const block = (id: number, markdown: string, mark: EditedBlock["mark"] = null): EditedBlock => ({
    page: 1,
    blockId: id,
    element: blockElement(id),
    markdown,
    mark,
  });
  const form = () => section.querySelector<HTMLFormElement>("form.block-editor");
  const text = () => form()!.querySelector("textarea")!;
  const button = (name: string) => form()!.querySelector<HTMLButtonElement>(`.block-editor-${name}`);
  const error = () => form()!.querySelector<HTMLElement>(".block-editor-error")!;
  const key = (key: string, init: KeyboardEventInit = {}) =>
    text().dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true, ...init }));
  const settle = () => new Promise((resolve) => setTimeout(resolve));
  return { section, api, answered, editor, blockElement, block, form, text, button, error, key, settle };
}

afterEach(() => document.body.replaceChildren());

describe("BlockEditor", () => {
  it("stands in for the block: its Markdown in a focused field sized to it, the block hidden", () => {
    const { editor, block, blockElement, form, text, button } = setup();
    editor.edit(block(1, "| a | b |\n|---|---|\n| 1 | 2 |"));
    expect(form()?.nextElementSibling).toBe(blockElement(1));
    expect(blockElement(1).hidden).toBe(true);
    expect(blockElement(0).hidden).toBe(false);
    expect(text().value).toBe("| a | b |\n|---|---|\n| 1 | 2 |");
    expect(text().getAttribute("rows")).toBe("4");
    expect(document.activeElement).toBe(text());
    expect(button("save")?.type).toBe("submit");
    expect(button("cancel")?.textContent).toBe("Cancel");
    expect(button("revert"), "nothing to revert to: the block shows the reading's text").toBeNull();
    expect(form()!.querySelector<HTMLElement>(".block-editor-error")!.hidden).toBe(true);
  });

  it("sizes the field from the lines of the Markdown, within bounds, as it is typed", () => {
    expect(rowsFor("one line")).toBe(3);
    expect(rowsFor("a\nb\nc\nd")).toBe(5);
    expect(rowsFor("x\n".repeat(100))).toBe(24);
    const { editor, block, text } = setup();
    editor.edit(block(0, "short"));
    text().value = "a\nb\nc\nd\ne";
    text().dispatchEvent(new Event("input", { bubbles: true }));
    expect(text().getAttribute("rows")).toBe("6");
  });

  it("saves what was typed as the block's correction, closes, and passes the answer on", async () => {
    const { editor, block, blockElement, form, text, button, api, answered, settle } = setup();
    editor.edit(block(0, "# Fixd"));
    text().value = "# Fixed";
    button("save")!.click();
    await settle();
    expect(api.correctBlock).toHaveBeenCalledWith({ id: "doc-1", page: 1, blockId: 0, markdown: "# Fixed", replacing: null });
    expect(api.forgetCorrection).not.toHaveBeenCalled();
    expect(form()).toBeNull();
    expect(blockElement(0).hidden).toBe(false);
    expect(answered).toHaveBeenCalledWith(ANSWER, 0);
  });

  it("stays open with the text typed and says why when the correction cannot be kept", async () => {
    const { editor, block, form, text, button, error, api, answered } = setup();
    const answer = deferred<CorrectedPage>();
    api.correctBlock.mockReturnValueOnce(answer.promise);
    editor.edit(block(0, "# Fixd"));
    text().value = "# Fixed";
    form()!.dispatchEvent(new Event("submit", { cancelable: true }));
    expect(button("save")!.disabled).toBe(true);
    expect(text().readOnly).toBe(true);
    answer.reject("The cache cannot be written: disk full");
    await vi.waitFor(() => expect(error().hidden).toBe(false));
    expect(error().textContent).toBe("The cache cannot be written: disk full");
    expect(text().value).toBe("# Fixed");
    expect(button("save")!.disabled).toBe(false);
    expect(text().readOnly).toBe(false);
    expect(answered).not.toHaveBeenCalled();

    // A second try that is kept clears the message and closes.
    button("save")!.click();
    await vi.waitFor(() => expect(form()).toBeNull());
    expect(api.correctBlock).toHaveBeenCalledTimes(2);
    expect(answered).toHaveBeenCalledTimes(1);
  });

  it("saves on Ctrl+Enter, once however often it is pressed, and cancels on Esc", async () => {
    const { editor, block, blockElement, form, text, key, api, settle } = setup();
    const answer = deferred<CorrectedPage>();
    api.correctBlock.mockReturnValueOnce(answer.promise);
    editor.edit(block(0, "a"));
    text().value = "b";
    key("Enter");
    expect(api.correctBlock, "a plain Enter is a new line").not.toHaveBeenCalled();
    key("Enter", { ctrlKey: true });
    key("Enter", { ctrlKey: true });
    expect(api.correctBlock).toHaveBeenCalledTimes(1);
    answer.resolve(ANSWER);
    await settle();
    expect(form()).toBeNull();

    editor.edit(block(1, "c"));
    key("Escape");
    expect(form()).toBeNull();
    expect(blockElement(1).hidden).toBe(false);
    expect(api.correctBlock).toHaveBeenCalledTimes(1);
  });

  it("keeps its keys from the window's shortcuts", () => {
    const { editor, block, key } = setup();
    const windowKeys = vi.fn();
    window.addEventListener("keydown", windowKeys);
    try {
      editor.edit(block(0, "a"));
      for (const pressed of ["e", "j", "Escape"]) key(pressed);
      editor.edit(block(0, "a"));
      key("c", { ctrlKey: true });
      expect(windowKeys).not.toHaveBeenCalled();
    } finally {
      window.removeEventListener("keydown", windowKeys);
    }
  });

  it("cancels with the Cancel button, leaving the block as it was", () => {
    const { editor, block, blockElement, form, text, button, api } = setup();
    editor.edit(block(0, "a"));
    text().value = "changed";
    button("cancel")!.click();
    expect(form()).toBeNull();
    expect(blockElement(0).hidden).toBe(false);
    expect(blockElement(0).textContent).toBe("block 0");
    expect(api.correctBlock).not.toHaveBeenCalled();
  });

  it("edits one block at a time: opening another closes the first", () => {
    const { section, editor, block, blockElement, text } = setup();
    editor.edit(block(0, "first"));
    editor.edit(block(1, "second"));
    expect(section.querySelectorAll("form.block-editor")).toHaveLength(1);
    expect(blockElement(0).hidden).toBe(false);
    expect(blockElement(1).hidden).toBe(true);
    expect(text().value).toBe("second");

    text().value = "second, typed";
    editor.edit(block(1, "second"));
    expect(text().value, "the same block again: what was typed stays").toBe("second, typed");
  });

  it("offers the reading's text back for a corrected block, dropping the correction", async () => {
    const { editor, block, form, button, api, answered, settle } = setup();
    editor.edit(block(1, "mine", "corrected"));
    expect(button("revert")?.textContent).toBe("Use the reading's text");
    button("revert")!.click();
    await settle();
    expect(api.forgetCorrection).toHaveBeenCalledWith({ id: "doc-1", page: 1, blockId: 1 });
    expect(api.correctBlock).not.toHaveBeenCalled();
    expect(form()).toBeNull();
    expect(answered).toHaveBeenCalledWith(ANSWER, 1);
  });

  it("offers to remove a block the person added, which drops it", async () => {
    const { editor, block, form, button, api, answered, settle } = setup();
    editor.edit(block(1, "| added |", "added"));
    expect(button("revert")?.textContent).toBe("Remove this block");
    button("revert")!.click();
    await settle();
    expect(api.forgetCorrection).toHaveBeenCalledWith({ id: "doc-1", page: 1, blockId: 1 });
    expect(form()).toBeNull();
    expect(answered).toHaveBeenCalledWith(ANSWER, 1);
  });

  it("closes when its page is read again, or when the page no longer has its block", () => {
    const { editor, block, blockElement, form } = setup();
    editor.edit(block(0, "a"));
    editor.closePage(0);
    expect(form(), "another page").not.toBeNull();
    editor.closePage(1);
    expect(form()).toBeNull();
    expect(blockElement(0).hidden).toBe(false);

    editor.edit(block(1, "b"));
    editor.closeIfGone();
    expect(form(), "the block is still there").not.toBeNull();
    blockElement(1).remove();
    editor.closeIfGone();
    expect(form()).toBeNull();
  });

  it("passes on an answer that comes after the editor was closed: the correction was kept", async () => {
    const { editor, block, button, api, answered } = setup();
    const answer = deferred<CorrectedPage>();
    api.correctBlock.mockReturnValueOnce(answer.promise);
    editor.edit(block(0, "a"));
    button("save")!.click();
    editor.edit(block(1, "b"));
    answer.resolve(ANSWER);
    await vi.waitFor(() => expect(answered).toHaveBeenCalledWith(ANSWER, 0));
    expect(document.querySelector<HTMLTextAreaElement>("form.block-editor textarea")?.value, "the other editor stays").toBe("b");
  });
});
