// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { blocksOf, STATS } from "../../test/events";
import { fixtureText } from "../../test/fixtures";
import type { BoxNorm } from "../events";
import { figureAspect, pageWidthForFigure, unionBox } from "./figure";
import { StreamingRenderer } from "./streaming-renderer";

const box = (x1: number, y1: number, x2: number, y2: number): BoxNorm => ({ x1, y1, x2, y2 });

describe("figure geometry", () => {
  it("crops one figure per block: the union of its boxes", () => {
    expect(unionBox([box(140, 270, 450, 555), box(544, 630, 855, 914)])).toEqual(box(140, 270, 855, 914));
    expect(unionBox([])).toBeNull();
  });

  it("renders the page wide enough that the crop is as wide as the figure is shown, within the cap", () => {
    // The whole width of the page: the page at the figure's width.
    expect(pageWidthForFigure([box(0, 0, 999, 999)], 640)).toBe(640);
    // 310 of 999 units: 640 / (310 / 999) = 2062.45…, rounded up.
    expect(pageWidthForFigure([box(140, 270, 450, 555)], 640)).toBe(2063);
    // A sliver would ask for an enormous page: the protocol's 4000 px cap.
    expect(pageWidthForFigure([box(500, 0, 510, 999)], 640)).toBe(4000);
    expect(pageWidthForFigure([box(500, 0, 500, 999)], 640)).toBe(4000);
  });
});

describe("figure shape", () => {
  it("is the box's share of the page's width over its share of the height", () => {
    // A4 in points; the box covers half the width and a quarter of the height: 0.5·595 / (0.25·842).
    expect(figureAspect([box(0, 0, 500, 250)], { width: 595, height: 842 })).toBeCloseTo((500 * 595) / (250 * 842), 12);
    // The whole page is the page's shape; a block without boxes is the whole page.
    expect(figureAspect([box(0, 0, 999, 999)], { width: 595, height: 842 })).toBeCloseTo(595 / 842, 12);
    expect(figureAspect([], { width: 612, height: 792 })).toBeCloseTo(612 / 792, 12);
  });
});

describe("figures in the Markdown pane", () => {
  const figures: { page: number; boxes: readonly BoxNorm[] }[] = [];
  const setup = () => {
    const root = document.createElement("div");
    const renderer = new StreamingRenderer(root, {
      renderBlock: (md) => `<p>${md}</p>`,
      schedule: (callback) => callback(),
      figure: (page, boxes) => {
        figures.push({ page, boxes });
        const element = document.createElement("figure");
        element.className = "page-figure";
        return element;
      },
    });
    return renderer;
  };

  it("an image block shows its figure as soon as its box is known, kept through renders and the final result", () => {
    // Page 3 of the manual: four photographs, each an image block with one box.
    const blocks = blocksOf(fixtureText("grounding", "with_source", "xiongpu1_agent", "vastera_manual", "page003.stdout.md"));
    const images = blocks.filter((b) => b.label === "image");
    expect(images).toHaveLength(4);
    figures.length = 0;
    const renderer = setup();
    renderer.handle({ type: "started", page: 2 });
    for (const b of blocks) {
      renderer.handle({ type: "blockOpened", page: 2, blockId: b.id, label: b.label, boxes: b.boxes, warning: null });
      if (b.label === "image") {
        expect(renderer.blockElement(2, b.id)?.querySelector(".page-figure"), `block ${b.id} at once`).not.toBeNull();
      }
      renderer.handle({ type: "blockText", page: 2, blockId: b.id, delta: b.markdown });
    }
    renderer.handle({ type: "done", page: 2, markdown: "", blocks, stats: STATS });
    expect(figures).toEqual(images.map((b) => ({ page: 2, boxes: b.boxes })));
    for (const b of blocks) {
      const shown = renderer.blockElement(2, b.id)?.querySelectorAll(".page-figure").length;
      expect(shown, `block ${b.id} (${b.label})`).toBe(b.label === "image" ? 1 : 0);
    }

    // A figure with a caption in its text keeps both when the text renders again.
    const first = images[0]!;
    renderer.handle({ type: "blockText", page: 2, blockId: first.id, delta: "A caption" });
    const element = renderer.blockElement(2, first.id)!;
    expect(element.firstElementChild?.className).toBe("page-figure");
    expect(element.textContent).toContain("A caption");
    renderer.setSource(true);
    expect(element.querySelectorAll(".page-figure")).toHaveLength(1);
    expect(figures).toHaveLength(4);
  });
});
