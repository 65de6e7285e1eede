// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { ADDED_TITLE, CORRECTED_TITLE, StreamingRenderer, type RenderBlock } from "./streaming-renderer";
import { fixtureText } from "../../test/fixtures";
import { blocksOf, STATS, streamEvents } from "../../test/events";
import type { Block, PageEvent } from "../events";

const MANUAL = ["grounding", "with_source", "xiongpu1_agent", "vastera_manual"];

/** A stand-in for the Rust renderer: escaped source in a <p>, so any lost or doubled text shows. */
const escape = (markdown: string): string =>
  `<p>${markdown.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")}</p>`;

/** Frames run by hand. */
class Frames {
  private queue: (() => void)[] = [];
  readonly schedule = (callback: () => void): void => void this.queue.push(callback);
  run(): void {
    const now = this.queue;
    this.queue = [];
    for (const callback of now) callback();
  }
  get pending(): number {
    return this.queue.length;
  }
}

function setup(renderBlock: RenderBlock = escape) {
  const root = document.createElement("div");
  const frames = new Frames();
  const calls: string[] = [];
  const renderer = new StreamingRenderer(root, {
    renderBlock: (md) => {
      calls.push(md);
      return renderBlock(md);
    },
    schedule: frames.schedule,
  });
  return { root, frames, calls, renderer };
}

describe("StreamingRenderer", () => {
  for (const name of ["page001", "page009", "page015"]) {
    it(`shows the same blocks of ${name} however the deltas are cut`, async () => {
      const blocks = blocksOf(fixtureText(...MANUAL, `${name}.stdout.md`));
      // Expected DOM from the capture itself: one element per block, in order, its Markdown rendered.
      const expected = blocks.map((b) => `<div class="markdown-block" data-block-id="${b.id}" data-label="${b.label}">${b.markdown === "" ? "" : escape(b.markdown)}</div>`).join("");
      for (const chunk of [1, 2, 7, 64, 100_000]) {
        // A frame after every event, and one frame at the end.
        for (const framePerEvent of [true, false]) {
          const { root, frames, renderer } = setup();
          for (const event of streamEvents(0, blocks, chunk)) {
            renderer.handle(event);
            if (framePerEvent) frames.run();
          }
          frames.run();
          expect(renderer.pageElement(0)?.innerHTML, `chunk ${chunk}`).toBe(expected);
          expect(root.children).toHaveLength(1);
        }
      }
    });
  }

  it("renders a block at most once per frame, however many deltas arrive", () => {
    const { frames, calls, renderer } = setup();
    renderer.handle({ type: "blockOpened", page: 0, blockId: 0, label: "text", boxes: [], warning: null });
    for (const letter of "abcdefghij") renderer.handle({ type: "blockText", page: 0, blockId: 0, delta: letter });
    expect(calls).toEqual([]);
    expect(frames.pending).toBe(1);
    frames.run();
    expect(calls).toEqual(["abcdefghij"]);
    renderer.handle({ type: "blockText", page: 0, blockId: 0, delta: "k" });
    renderer.handle({ type: "blockOpened", page: 0, blockId: 1, label: "text", boxes: [], warning: null });
    renderer.handle({ type: "blockText", page: 0, blockId: 1, delta: "x" });
    renderer.handle({ type: "blockText", page: 0, blockId: 1, delta: "y" });
    expect(frames.pending).toBe(1);
    frames.run();
    expect(calls).toEqual(["abcdefghij", "abcdefghijk", "xy"]);
    frames.run();
    expect(calls).toHaveLength(3); // nothing changed, nothing rendered
  });

  it("outlines the block being written", () => {
    const { renderer } = setup();
    renderer.handle({ type: "blockOpened", page: 0, blockId: 0, label: "title", boxes: [], warning: null });
    expect(renderer.blockElement(0, 0)?.classList.contains("writing")).toBe(true);
    renderer.handle({ type: "blockClosed", page: 0, blockId: 0 });
    renderer.handle({ type: "blockOpened", page: 0, blockId: 1, label: "text", boxes: [], warning: null });
    expect(renderer.blockElement(0, 0)?.classList.contains("writing")).toBe(false);
    expect(renderer.blockElement(0, 1)?.classList.contains("writing")).toBe(true);
  });

  it("replaces streamed content with done's final blocks, at once", () => {
    const { frames, renderer } = setup();
    for (const event of streamEvents(0, [
      { id: 0, label: "title", boxes: [], markdown: "# Draft", warning: null },
      { id: 1, label: "text", boxes: [], markdown: "gone", warning: null },
    ], 2)) renderer.handle(event);
    renderer.handle({
      type: "done",
      page: 0,
      markdown: "# Final",
      blocks: [{ id: 0, label: "title", boxes: [], markdown: "# Final", warning: null }],
      stats: STATS,
    });
    // No frame needed, and the frame still queued does not bring the draft back.
    expect(renderer.pageElement(0)?.innerHTML).toBe('<div class="markdown-block" data-block-id="0" data-label="title"><p># Final</p></div>');
    frames.run();
    expect(renderer.pageElement(0)?.innerHTML).toBe('<div class="markdown-block" data-block-id="0" data-label="title"><p># Final</p></div>');
    expect(renderer.status(0)).toBe("done");
  });

  it("shows the Markdown as written in the source view, and renders it again when switched back", async () => {
    const { root, frames, calls, renderer } = setup();
    const blocks = blocksOf(fixtureText(...MANUAL, "page009.stdout.md"));
    renderer.setSource(true);
    for (const event of streamEvents(0, blocks, 3)) renderer.handle(event);
    frames.run();
    expect(calls, "the source view renders nothing").toEqual([]);
    const shown = [...root.querySelectorAll<HTMLElement>(".markdown-block")].map((b) => b.textContent);
    expect(shown).toEqual(blocks.map((b) => b.markdown));
    expect(root.querySelector("p")).toBeNull();

    renderer.setSource(false);
    await renderer.settled();
    const rendered = blocks.filter((b) => b.markdown !== "").length;
    expect(root.querySelectorAll(".markdown-block > p").length).toBe(rendered);
    expect(root.classList.contains("source-view")).toBe(false);
  });

  it("renders a page from the cache directly, without frames", () => {
    const { frames, calls, renderer } = setup();
    const blocks = blocksOf(fixtureText(...MANUAL, "page001.stdout.md"));
    renderer.handle({ type: "fromCache", page: 0 });
    renderer.handle({ type: "done", page: 0, markdown: "", blocks, stats: STATS });
    expect(frames.pending).toBe(0);
    expect(calls).toEqual(["# VINTERKÖLD"]); // the image block has no Markdown to render
    expect(renderer.blockElement(0, 0)?.innerHTML).toBe("<p># VINTERKÖLD</p>");
    expect(renderer.blockElement(0, 1)?.dataset["label"]).toBe("image");
    expect(renderer.status(0)).toBe("fromCache");
  });

  it("marks a looped page, keeps its blocks and says why", () => {
    const { renderer } = setup();
    const blocks = [{ id: 0, label: "text", boxes: [], markdown: "again", warning: null }];
    renderer.handle({ type: "looped", page: 2, markdown: "again", blocks, reason: { kind: "repeatedBlockText", count: 4 } });
    const section = renderer.pageElement(2);
    expect(section?.dataset["status"]).toBe("looped");
    expect(renderer.blockElement(2, 0)?.innerHTML).toBe("<p>again</p>");
    expect(section?.querySelector(".page-notice")?.textContent).toContain("the same block text 4 times in a row");
  });

  it("keeps what was read when a page fails", () => {
    const { frames, renderer } = setup();
    renderer.handle({ type: "blockOpened", page: 0, blockId: 0, label: "text", boxes: [], warning: null });
    renderer.handle({ type: "blockText", page: 0, blockId: 0, delta: "kept" });
    frames.run();
    renderer.handle({ type: "failed", page: 0, error: "out of memory" });
    expect(renderer.blockElement(0, 0)?.innerHTML).toBe("<p>kept</p>");
    expect(renderer.status(0)).toBe("failed");
    expect(renderer.pageElement(0)?.querySelector(".page-notice")?.textContent).toBe("out of memory");
  });

  it("keeps pages in order whichever starts first, and starts a re-read afresh", () => {
    const { root, renderer, frames } = setup();
    const events: PageEvent[] = [
      { type: "started", page: 3 },
      { type: "started", page: 1 },
      { type: "started", page: 2 },
    ];
    for (const event of events) renderer.handle(event);
    expect([...root.children].map((s) => (s as HTMLElement).dataset["page"])).toEqual(["1", "2", "3"]);
    renderer.handle({ type: "blockOpened", page: 1, blockId: 0, label: "text", boxes: [], warning: null });
    renderer.handle({ type: "blockText", page: 1, blockId: 0, delta: "old" });
    renderer.handle({ type: "started", page: 1 });
    frames.run();
    expect(renderer.pageElement(1)?.innerHTML).toBe("");
  });

  it("lets a slow async render never overwrite a newer one", async () => {
    const resolvers: ((html: string) => void)[] = [];
    const { frames, renderer } = setup(() => new Promise<string>((resolve) => resolvers.push(resolve)));
    renderer.handle({ type: "blockOpened", page: 0, blockId: 0, label: "text", boxes: [], warning: null });
    renderer.handle({ type: "blockText", page: 0, blockId: 0, delta: "a" });
    frames.run();
    renderer.handle({ type: "blockText", page: 0, blockId: 0, delta: "b" });
    frames.run();
    expect(resolvers).toHaveLength(2);
    resolvers[1]?.("<p>ab</p>");
    resolvers[0]?.("<p>a</p>");
    await renderer.settled();
    expect(renderer.blockElement(0, 0)?.innerHTML).toBe("<p>ab</p>");
  });

  it("shows a page's corrections marked, re-rendering only the blocks changed, its status and notice kept", () => {
    const { calls, renderer } = setup();
    const read: Block[] = [
      { id: 0, label: "title", boxes: [], markdown: "# Misread", warning: null },
      { id: 1, label: "text", boxes: [], markdown: "again", warning: null },
    ];
    renderer.handle({ type: "looped", page: 2, markdown: "", blocks: read, reason: { kind: "repeatedBlockText", count: 4 } });
    calls.length = 0;
    const corrected = [{ ...read[0]!, markdown: "# Read right" }, read[1]!];
    renderer.showCorrected(2, corrected, { corrected: [0], added: [] });
    expect(calls).toEqual(["# Read right"]);
    const block = renderer.blockElement(2, 0)!;
    expect(block.innerHTML).toBe("<p># Read right</p>");
    expect(block.classList.contains("corrected")).toBe(true);
    expect(block.dataset["corrected"]).toBe("true");
    expect(block.title).toBe(CORRECTED_TITLE);
    expect(renderer.mark(2, 0)).toBe("corrected");
    const other = renderer.blockElement(2, 1)!;
    expect(other.classList.contains("corrected")).toBe(false);
    expect(other.hasAttribute("data-corrected")).toBe(false);
    expect(other.hasAttribute("title")).toBe(false);
    expect(renderer.status(2)).toBe("looped");
    expect(renderer.pageElement(2)?.querySelector(".page-notice")?.textContent).toContain("4 times in a row");

    // The model's text again: the mark goes.
    renderer.showCorrected(2, read, { corrected: [], added: [] });
    expect(block.innerHTML).toBe("<p># Misread</p>");
    expect(block.classList.contains("corrected")).toBe(false);
    expect(block.hasAttribute("data-corrected")).toBe(false);
    expect(block.hasAttribute("title")).toBe(false);
    expect(renderer.mark(2, 0)).toBeNull();

    // A reading's own blocks (the cache's, again) show unmarked until their corrections follow.
    renderer.showCorrected(2, corrected, { corrected: [0], added: [] });
    renderer.handle({ type: "done", page: 2, markdown: "", blocks: read, stats: STATS });
    expect(block.classList.contains("corrected")).toBe(false);
    expect(renderer.mark(2, 0)).toBeNull();
  });

  it("keeps a corrected block's mark through renders that land later, in either view", async () => {
    const { renderer } = setup((markdown) => Promise.resolve(escape(markdown)));
    const blocks: Block[] = [{ id: 0, label: "text", boxes: [], markdown: "mine", warning: null }];
    renderer.handle({ type: "done", page: 0, markdown: "", blocks: [{ ...blocks[0]!, markdown: "model's" }], stats: STATS });
    renderer.showCorrected(0, blocks, { corrected: [0], added: [] });
    await renderer.settled();
    const block = renderer.blockElement(0, 0)!;
    expect(block.innerHTML).toBe("<p>mine</p>");
    expect(block.title).toBe(CORRECTED_TITLE);
    renderer.setSource(true);
    renderer.setSource(false);
    await renderer.settled();
    expect(block.title).toBe(CORRECTED_TITLE);
    expect(block.classList.contains("corrected")).toBe(true);
    expect(renderer.status(0)).toBe("done");
  });

  it("marks the blocks the person added apart from the corrected ones, after the reading's blocks", () => {
    const { renderer } = setup();
    const read: Block[] = [{ id: 0, label: "text", boxes: [], markdown: "Body", warning: null }];
    renderer.handle({ type: "done", page: 1, markdown: "", blocks: read, stats: STATS });
    const added: Block = { id: 1_000_000, label: "table", boxes: [{ x1: 1, y1: 2, x2: 30, y2: 40 }], markdown: "| a |", warning: null };
    renderer.showCorrected(1, [{ ...read[0]!, markdown: "Mine" }, added], { corrected: [0], added: [1_000_000] });
    const section = renderer.pageElement(1)!;
    expect([...section.querySelectorAll<HTMLElement>(".markdown-block")].map((b) => b.dataset["blockId"])).toEqual(["0", "1000000"]);
    const block = renderer.blockElement(1, 1_000_000)!;
    expect(block.classList.contains("added")).toBe(true);
    expect(block.classList.contains("corrected")).toBe(false);
    expect(block.dataset["added"]).toBe("true");
    expect(block.hasAttribute("data-corrected")).toBe(false);
    expect(block.title).toBe(ADDED_TITLE);
    expect(renderer.mark(1, 1_000_000)).toBe("added");
    expect(renderer.blockElement(1, 0)?.hasAttribute("data-added")).toBe(false);
    expect(renderer.mark(1, 0)).toBe("corrected");

    // Removed: the block goes with its mark.
    renderer.showCorrected(1, read, { corrected: [], added: [] });
    expect(renderer.blockElement(1, 1_000_000)).toBeUndefined();
    expect(section.querySelectorAll(".added")).toHaveLength(0);
    expect(renderer.mark(1, 0)).toBeNull();
  });

  it("shows the source when rendering fails", async () => {
    const { frames, renderer } = setup(() => Promise.reject(new Error("bad")));
    renderer.handle({ type: "blockOpened", page: 0, blockId: 0, label: "text", boxes: [], warning: null });
    renderer.handle({ type: "blockText", page: 0, blockId: 0, delta: "<b>x" });
    frames.run();
    await renderer.settled();
    expect(renderer.blockElement(0, 0)?.textContent).toBe("<b>x");
  });
});
