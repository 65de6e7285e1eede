import { describe, expect, it } from "vitest";
import { layoutThumbnails, visibleRange } from "./thumbnail-layout";

const metrics = { imageWidth: 100, chrome: 20, gap: 10 };

describe("thumbnail layout", () => {
  it("stacks each page's thumbnail by its shape", () => {
    // A portrait letter page (792 / 612), a landscape slide (0.75), a square.
    const layout = layoutThumbnails([792 / 612, 0.75, 1], metrics);
    expect(layout.heights).toEqual([129 + 20, 75 + 20, 100 + 20]);
    expect(layout.tops).toEqual([0, 149 + 10, 149 + 10 + 95 + 10]);
    expect(layout.total).toBe(149 + 10 + 95 + 10 + 120);
    expect(layoutThumbnails([], metrics).total).toBe(0);
  });

  it("finds the thumbnails in view of 500 pages, and no more", () => {
    // Every thumbnail 120 tall with a 10 gap: one every 130 pixels.
    const layout = layoutThumbnails(Array(500).fill(1), metrics);
    expect(visibleRange(layout, 0, 600)).toEqual({ first: 0, end: 5 });
    // Index 9 spans 1170..1290, then a gap; index 10 starts at 1300, index 12 at 1560.
    expect(visibleRange(layout, 1295, 1300 + 260)).toEqual({ first: 10, end: 12 });
    expect(visibleRange(layout, 1289, 1290)).toEqual({ first: 9, end: 10 });
    expect(visibleRange(layout, layout.total - 10, layout.total + 1000)).toEqual({ first: 499, end: 500 });
    expect(visibleRange(layout, layout.total + 10, layout.total + 20)).toEqual({ first: 500, end: 500 });
  });
});
