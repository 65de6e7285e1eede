import { describe, expect, it } from "vitest";
import { BlockIndex } from "./block-index";
import { fixtureText } from "../../test/fixtures";
import { blocksOf, STATS, streamEvents } from "../../test/events";

const MANUAL = ["grounding", "with_source", "xiongpu1_agent", "vastera_manual"];
const page9 = blocksOf(fixtureText(...MANUAL, "page009.stdout.md"));
const page1 = blocksOf(fixtureText(...MANUAL, "page001.stdout.md"));

describe("BlockIndex", () => {
  it("builds the same blocks from a stream as from the final result", () => {
    const streamed = new BlockIndex();
    for (const event of streamEvents(8, page9, 3)) streamed.apply(event);
    const final = new BlockIndex();
    final.setPage(8, page9);
    expect(streamed.blocks(8)).toEqual(final.blocks(8));
    expect(streamed.block(8, 0)).toEqual({ id: 0, label: "sub_title", boxes: [{ x1: 65, y1: 52, x2: 234, y2: 80 }], markdown: "## Specification" });
  });

  it("links blocks and boxes both ways", () => {
    const index = new BlockIndex();
    index.setPage(0, page1);
    expect(index.boxes(0, 0)).toEqual([{ x1: 60, y1: 163, x2: 597, y2: 265 }]);
    expect(index.blockOfBox(0, { x1: 0, y1: 0, x2: 999, y2: 999 })).toBe(1);
    expect(index.blockOfBox(0, { x1: 1, y1: 0, x2: 999, y2: 999 })).toBeNull();
    expect(index.boxes(3, 0)).toEqual([]);
  });

  it("steps through a page's blocks with j and k", () => {
    const index = new BlockIndex();
    index.setPage(0, page1);
    expect(index.next(0, null)).toBe(0);
    expect(index.next(0, 0)).toBe(1);
    expect(index.next(0, 1)).toBeNull();
    expect(index.previous(0, null)).toBe(1);
    expect(index.previous(0, 1)).toBe(0);
    expect(index.previous(0, 0)).toBeNull();
    expect(index.next(5, null)).toBeNull();
  });

  it("finds blocks by their Markdown, ignoring case, across pages in order", () => {
    const index = new BlockIndex();
    index.setPage(8, page9);
    index.setPage(0, page1);
    expect(index.search("vinterköld")).toEqual([{ page: 0, blockId: 0 }]);
    // "water" is in "Water Flow" (block 2), "Water Capacity" (7) and "water temperature" (15, after the image block 11).
    expect(index.search("WATER")).toEqual([
      { page: 8, blockId: 2 },
      { page: 8, blockId: 7 },
      { page: 8, blockId: 15 },
    ]);
    expect(index.search("   ")).toEqual([]);
    expect(index.search("no such words")).toEqual([]);
  });

  it("forgets a page that is read again, and takes done's blocks over the streamed ones", () => {
    const index = new BlockIndex();
    for (const event of streamEvents(0, page1, 5)) index.apply(event);
    index.apply({ type: "started", page: 0 });
    expect(index.blocks(0)).toEqual([]);
    const final = [{ id: 0, label: "title", boxes: [], markdown: "# Other", warning: null }];
    index.apply({ type: "done", page: 0, markdown: "# Other", blocks: final, stats: STATS });
    expect(index.search("other")).toEqual([{ page: 0, blockId: 0 }]);
  });
});
