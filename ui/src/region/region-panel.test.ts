// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AddedBlock, BlockCorrection, RegionRead, RegionRequest } from "../api";
import type { CorrectedPage } from "../events";
import { DEFAULT_CHOICE } from "../reading/modes";
import { describeUnread, RegionPanel, type RegionApi } from "./region-panel";

const REGION = { x1: 100, y1: 200, x2: 500, y2: 300 };
const READ: RegionRead = {
  page: 1,
  region: REGION,
  markdown: "| a | b |\n|---|---|\n| 1 | 2 |",
  label: "table",
  overlaps: 3,
  recognizer: "DeepSeek-OCR-2",
  looped: false,
};
const ANSWER: CorrectedPage = { page: 1, markdown: "", blocks: [], corrected: [], added: [1_000_000], differing: [] };

/** A promise the test settles when it wants, to look at the panel while the command is waiting. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

function setup() {
  const reading = deferred<RegionRead>();
  const api = {
    readRegion: vi.fn((_request: RegionRequest) => reading.promise),
    addBlock: vi.fn((_block: AddedBlock) => Promise.resolve(ANSWER)),
    correctBlock: vi.fn((_correction: BlockCorrection) => Promise.resolve(ANSWER)),
  } satisfies RegionApi;
  const host = document.createElement("div");
  document.body.append(host);
  const hooks = {
    show: vi.fn((panel: HTMLElement) => host.append(panel)),
    closed: vi.fn(() => {}),
    answered: vi.fn((_answer: CorrectedPage, _message: string) => {}),
  };
  const panel = new RegionPanel("doc-1", api, hooks);
  const open = () => panel.open({ page: 1, region: REGION, choice: DEFAULT_CHOICE });
  const find = <T extends HTMLElement = HTMLElement>(id: string) => document.querySelector<T>(`#${id}`);
  const root = () => find("region-panel");
  const text = () => find<HTMLTextAreaElement>("region-text")!;
  const button = (name: "add" | "replace" | "cancel") => find<HTMLButtonElement>(`region-${name}`)!;
  const error = () => find("region-error")!;
  const shown = (element: HTMLElement) => !element.hidden;
  const settle = () => new Promise((resolve) => setTimeout(resolve));
  return { api, reading, hooks, panel, open, root, text, button, error, shown, settle };
}

afterEach(() => document.body.replaceChildren());

describe("RegionPanel", () => {
  it("reads the region with the mode chosen, saying so, with only Cancel to press meanwhile", () => {
    const { api, hooks, open, root, text, button, error, shown } = setup();
    open();
    expect(api.readRegion).toHaveBeenCalledWith({ id: "doc-1", page: 1, region: REGION, mode: "layout", resolution: "baseWithTiles" });
    expect(hooks.show).toHaveBeenCalledWith(root());
    expect(root()?.tagName).toBe("DIV");
    expect(root()?.dataset["state"]).toBe("reading");
    expect(root()?.textContent).toContain("Reading the region…");
    expect(shown(text())).toBe(false);
    expect(shown(button("add"))).toBe(false);
    expect(shown(button("replace"))).toBe(false);
    expect(shown(button("cancel"))).toBe(true);
    expect(shown(error())).toBe(false);
    expect(document.activeElement).toBe(root());
  });

  it("shows what was read to edit, who read it, and the block it would replace", async () => {
    const { reading, open, root, text, button, shown } = setup();
    open();
    reading.resolve(READ);
    await vi.waitFor(() => expect(root()?.dataset["state"]).toBe("read"));
    expect(text().value).toBe(READ.markdown);
    expect(text().readOnly).toBe(false);
    expect(document.activeElement, "the person waited on the panel: the field is theirs").toBe(text());
    expect(root()?.querySelector(".region-recognizer")?.textContent).toBe("DeepSeek-OCR-2");
    expect(root()?.dataset["label"]).toBe("table");
    expect(button("add").textContent).toBe("Add as a block");
    expect(button("replace").textContent).toBe("Replace block 4");
    for (const name of ["add", "replace", "cancel"] as const) expect(shown(button(name))).toBe(true);
  });

  it("offers no replacing when the region covers no block", async () => {
    const { reading, open, root, button, shown } = setup();
    open();
    reading.resolve({ ...READ, overlaps: null });
    await vi.waitFor(() => expect(root()?.dataset["state"]).toBe("read"));
    expect(shown(button("add"))).toBe(true);
    expect(shown(button("replace"))).toBe(false);
  });

  it("says when the model looped on the region, and shows what came before", async () => {
    const { reading, open, root, text } = setup();
    open();
    reading.resolve({ ...READ, looped: true, markdown: "Before the loop." });
    await vi.waitFor(() => expect(root()?.dataset["state"]).toBe("read"));
    expect(root()?.querySelector(".region-status")?.textContent).toMatch(/repeat itself and was stopped/);
    expect(text().value).toBe("Before the loop.");
  });

  it("adds the text as edited as a new block with the region as its box, and passes the answer on", async () => {
    const { api, reading, hooks, open, root, text, button } = setup();
    open();
    reading.resolve({ ...READ, recognizer: "text layer" });
    await vi.waitFor(() => expect(root()?.dataset["state"]).toBe("read"));
    text().value = "| a | b |\n|---|---|\n| 1 | 3 |";
    button("add").click();
    expect(api.addBlock).toHaveBeenCalledWith({
      id: "doc-1",
      page: 1,
      region: REGION,
      label: "table",
      markdown: "| a | b |\n|---|---|\n| 1 | 3 |",
    });
    await vi.waitFor(() => expect(hooks.answered).toHaveBeenCalledWith(ANSWER, "Block added to page 2 from the region read by text layer."));
    expect(root()).toBeNull();
    expect(hooks.closed).toHaveBeenCalledTimes(1);
    expect(api.correctBlock).not.toHaveBeenCalled();
  });

  it("replaces the block the region covers most with the text, as a correction of it", async () => {
    const { api, reading, hooks, open, root, text, button } = setup();
    open();
    reading.resolve(READ);
    await vi.waitFor(() => expect(root()?.dataset["state"]).toBe("read"));
    text().value = "fixed";
    button("replace").click();
    expect(api.correctBlock).toHaveBeenCalledWith({ id: "doc-1", page: 1, blockId: 3, markdown: "fixed", replacing: null });
    await vi.waitFor(() =>
      expect(hooks.answered).toHaveBeenCalledWith(ANSWER, "Block 4 of page 2 replaced by the region read by DeepSeek-OCR-2."),
    );
    expect(root()).toBeNull();
    expect(api.addBlock).not.toHaveBeenCalled();
  });

  it("says why the region could not be read, with Cancel", async () => {
    const { reading, hooks, open, root, text, button, error, shown } = setup();
    open();
    reading.reject("The region is too small to read (3 x 40 px).");
    await vi.waitFor(() => expect(root()?.dataset["state"]).toBe("failed"));
    expect(shown(error())).toBe(true);
    expect(error().textContent).toBe("The region is too small to read (3 x 40 px).");
    expect(shown(text())).toBe(false);
    expect(shown(button("add"))).toBe(false);
    button("cancel").click();
    expect(root()).toBeNull();
    expect(hooks.closed).toHaveBeenCalledTimes(1);
    expect(hooks.answered).not.toHaveBeenCalled();
  });

  it("stays open with the text typed and says why when it cannot be kept, then keeps it on a second try", async () => {
    const { api, reading, hooks, open, root, text, button, error, shown } = setup();
    const answer = deferred<CorrectedPage>();
    api.addBlock.mockReturnValueOnce(answer.promise);
    open();
    reading.resolve(READ);
    await vi.waitFor(() => expect(root()?.dataset["state"]).toBe("read"));
    text().value = "mine";
    button("add").click();
    button("add").click();
    expect(api.addBlock, "one command at a time").toHaveBeenCalledTimes(1);
    expect(button("replace").disabled).toBe(true);
    expect(text().readOnly).toBe(true);
    answer.reject("The cache cannot be written: disk full");
    await vi.waitFor(() => expect(shown(error())).toBe(true));
    expect(error().textContent).toBe("The cache cannot be written: disk full");
    expect(root()?.dataset["state"]).toBe("read");
    expect(text().value).toBe("mine");
    expect(text().readOnly).toBe(false);
    expect(button("add").disabled).toBe(false);
    expect(hooks.answered).not.toHaveBeenCalled();
    expect(hooks.closed).not.toHaveBeenCalled();

    button("add").click();
    await vi.waitFor(() => expect(root()).toBeNull());
    expect(hooks.answered).toHaveBeenCalledTimes(1);
  });

  it("cancels on Esc, in the panel or anywhere, which the window's Esc (stop reading) never hears", async () => {
    const { reading, hooks, open, root, text, settle } = setup();
    const windowKeys = vi.fn();
    window.addEventListener("keydown", windowKeys);
    const escape = (target: EventTarget) =>
      target.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true, cancelable: true }));
    try {
      open();
      escape(document.body);
      expect(root()).toBeNull();
      expect(hooks.closed).toHaveBeenCalledTimes(1);
      reading.resolve(READ);
      await settle();
      expect(root(), "what a cancelled panel read is dropped").toBeNull();

      open();
      await vi.waitFor(() => expect(root()?.dataset["state"]).toBe("read"));
      for (const key of ["e", "j"]) text().dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true }));
      escape(text());
      expect(root()).toBeNull();
      expect(windowKeys).not.toHaveBeenCalled();

      escape(document.body);
      expect(windowKeys, "with the panel gone, Esc is the window's again").toHaveBeenCalledTimes(1);
    } finally {
      window.removeEventListener("keydown", windowKeys);
    }
  });

  it("makes way for a region drawn anew, dropping what the first one reads", async () => {
    const { api, reading, hooks, panel, root, text } = setup();
    panel.open({ page: 1, region: REGION, choice: DEFAULT_CHOICE });
    const second = deferred<RegionRead>();
    api.readRegion.mockReturnValueOnce(second.promise);
    const other = { x1: 1, y1: 2, x2: 300, y2: 400 };
    panel.open({ page: 1, region: other, choice: { mode: "plain", resolution: "baseOnly" } });
    expect(api.readRegion).toHaveBeenLastCalledWith({ id: "doc-1", page: 1, region: other, mode: "plain", resolution: "baseOnly" });
    expect(document.querySelectorAll("#region-panel")).toHaveLength(1);
    expect(hooks.closed, "the new region stays drawn").not.toHaveBeenCalled();
    reading.resolve(READ);
    second.resolve({ ...READ, region: other, markdown: "second" });
    await vi.waitFor(() => expect(root()?.dataset["state"]).toBe("read"));
    expect(text().value).toBe("second");
  });

  it("closes when its page is read again, and passes on an answer that comes after it closed", async () => {
    const { api, reading, hooks, panel, open, root, button } = setup();
    open();
    panel.closePage(0);
    expect(root(), "another page").not.toBeNull();
    panel.closePage(1);
    expect(root()).toBeNull();

    const answer = deferred<CorrectedPage>();
    api.addBlock.mockReturnValueOnce(answer.promise);
    open();
    reading.resolve(READ);
    await vi.waitFor(() => expect(root()?.dataset["state"]).toBe("read"));
    button("add").click();
    panel.close();
    answer.resolve(ANSWER);
    await vi.waitFor(() => expect(hooks.answered).toHaveBeenCalledWith(ANSWER, expect.stringContaining("Block added")));
  });
});

describe("describeUnread", () => {
  it("says why a region of the page shown cannot be read yet", () => {
    expect(describeUnread(1, "reading")).toBe("Page 2 is being read: read a region of it once it is done.");
    expect(describeUnread(0, "failed")).toBe("Page 1 could not be read: retry it, then read a region of it.");
    expect(describeUnread(2, "queued")).toBe("Page 3 is not read yet: read it, then read a region of it.");
    expect(describeUnread(2, undefined)).toBe("Page 3 is not read yet: read it, then read a region of it.");
  });
});
