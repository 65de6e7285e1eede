// Boxes mapped with our geometry must land where the reference drew them, and boxes a few pixels
// off must not. halllo_taxi_receipt/annotated.jpg is input.jpg with output.md's boxes drawn in
// lines about 4 px wide, 1 to 3 px up and left of the int(x/999*W) edges, so it is checked with
// 3 px of slack (and under every rotation). vastera_manual's result_with_boxes.jpg are the official
// script's PIL drawings (outline 2 px wide, inside the rectangle): those are checked to the pixel.
import { beforeAll, describe, expect, it } from "vitest";
import { capturedBlocks, decodeJpeg, fixtureBytes, fixtureText, jpegSize, type RgbImage } from "../../test/fixtures";
import { boxToPixels, boxToView, type PixelSize, type Rotation, type ViewRect } from "./geometry";

const DIR = ["grounding", "with_source", "halllo_taxi_receipt"];

let input: RgbImage;
let annotated: RgbImage;
let size: PixelSize;
const boxes = capturedBlocks(fixtureText(...DIR, "output.md")).flatMap((block) => block.boxes);

beforeAll(() => {
  const inputBytes = fixtureBytes(...DIR, "input.jpg");
  size = jpegSize(inputBytes);
  input = decodeJpeg(inputBytes);
  annotated = decodeJpeg(fixtureBytes(...DIR, "annotated.jpg"));
}, 60_000);

/** The image pixel a view pixel shows when the page is turned clockwise (written out per case). */
function imagePixel(x: number, y: number, rotation: Rotation): [number, number] {
  const { width: w, height: h } = size;
  switch (rotation) {
    case 0:
      return [x, y];
    case 90:
      return [y, h - 1 - x];
    case 180:
      return [w - 1 - x, h - 1 - y];
    case 270:
      return [w - 1 - y, x];
  }
}

/** Whether the drawing changed this view pixel: JPEG noise stays far below 60 levels, a red line does not. */
function drawn(viewX: number, viewY: number, rotation: Rotation): boolean {
  const [x, y] = imagePixel(Math.round(viewX), Math.round(viewY), rotation);
  if (x < 0 || y < 0 || x >= size.width || y >= size.height) return false;
  const at = (y * size.width + x) * 4;
  for (let c = 0; c < 3; c++) {
    if (Math.abs((annotated.data[at + c] ?? 0) - (input.data[at + c] ?? 0)) > 60) return true;
  }
  return false;
}

/**
 * The share of drawn pixels along each edge of a view rectangle, each edge moved outward by
 * `shift`. A pixel counts when the line is on it or within 3 px across the edge.
 */
function edgeCoverage(rect: ViewRect, rotation: Rotation, shift: number): number[] {
  const left = rect.left - shift;
  const right = rect.left + rect.width - 1 + shift;
  const top = rect.top - shift;
  const bottom = rect.top + rect.height - 1 + shift;
  const along = (from: number, to: number, sample: (t: number) => boolean): number => {
    let hits = 0;
    let total = 0;
    // Corners are left out: there two edges meet and labels are written.
    for (let t = from + 6; t <= to - 6; t++, total++) if (sample(t)) hits++;
    return hits / total;
  };
  return [
    along(rect.top, rect.top + rect.height - 1, (y) => SLACK.some((d) => drawn(left + d, y, rotation))),
    along(rect.top, rect.top + rect.height - 1, (y) => SLACK.some((d) => drawn(right + d, y, rotation))),
    along(rect.left, rect.left + rect.width - 1, (x) => SLACK.some((d) => drawn(x, top + d, rotation))),
    along(rect.left, rect.left + rect.width - 1, (x) => SLACK.some((d) => drawn(x, bottom + d, rotation))),
  ];
}

const SLACK = [-3, -2, -1, 0, 1, 2, 3];
const mean = (values: number[]): number => values.reduce((a, b) => a + b, 0) / values.length;

describe("boxes on the reference's drawing of halllo_taxi_receipt", () => {
  it("has the input's size and all the boxes of output.md", () => {
    expect(size).toEqual({ width: 2048, height: 1536 });
    expect(jpegSize(fixtureBytes(...DIR, "annotated.jpg"))).toEqual(size);
    expect(boxes).toHaveLength(17);
  });

  for (const rotation of [0, 90, 180, 270] as Rotation[]) {
    it(`puts every edge on a drawn line, page turned ${rotation} degrees`, () => {
      for (const box of boxes) {
        const rect = boxToView(box, size, { zoom: 1, rotation });
        for (const coverage of edgeCoverage(rect, rotation, 0)) expect(coverage).toBeGreaterThan(0.9);
      }
    });
  }

  it("finds no drawn line a few pixels off the edges", () => {
    for (const shift of [-9, 9]) {
      const coverage = boxes.flatMap((box) => edgeCoverage(boxToView(box, size, { zoom: 1, rotation: 0 }), 0, shift));
      expect(mean(coverage)).toBeLessThan(0.3);
    }
  });

  it("would not match with the page size swapped or halved", () => {
    for (const wrong of [
      { width: size.height, height: size.width },
      { width: size.width / 2, height: size.height / 2 },
    ]) {
      const coverage = boxes.flatMap((box) => edgeCoverage(boxToView(box, wrong, { zoom: 1, rotation: 0 }), 0, 0));
      expect(mean(coverage)).toBeLessThan(0.3);
    }
  });
});

describe("boxes on the official script's drawings of vastera_manual", () => {
  const MANUAL = ["grounding", "with_source", "xiongpu1_agent", "vastera_manual"];

  /**
   * PIL's rectangle(width=2) paints the two pixel rows or columns just inside each edge. For each
   * sample along an edge: is the pixel on our edge painted while the one just outside is not?
   * "Painted" means unlike the background 7 px further out (the JPEG holds no original to compare).
   */
  function stepsAtEdges(image: RgbImage, rect: { x1: number; y1: number; x2: number; y2: number }): number {
    const pixel = (x: number, y: number): number[] => {
      const at = (y * image.width + x) * 4;
      return [image.data[at] ?? 0, image.data[at + 1] ?? 0, image.data[at + 2] ?? 0];
    };
    const unlike = (a: number[], b: number[]): boolean => a.some((v, c) => Math.abs(v - (b[c] ?? 0)) > 40);
    // Each edge: its coordinate, the outward direction, and whether it is a column (x) or a row (y).
    const edges: [number, number, "x" | "y"][] = [
      [rect.x1, -1, "x"],
      [rect.x2, 1, "x"],
      [rect.y1, -1, "y"],
      [rect.y2, 1, "y"],
    ];
    let hits = 0;
    let total = 0;
    for (const [at, out, axis] of edges) {
      const [from, to] = axis === "x" ? [rect.y1, rect.y2] : [rect.x1, rect.x2];
      for (let t = from + 8; t <= to - 8; t++, total++) {
        const sample = (d: number): number[] => (axis === "x" ? pixel(at + d, t) : pixel(t, at + d));
        const background = sample(7 * out);
        if (unlike(sample(0), background) && !unlike(sample(out), background)) hits++;
      }
    }
    return hits / total;
  }

  for (const page of ["page009", "page015"]) {
    it(`puts the edges of ${page} on the very pixels PIL painted`, () => {
      const bytes = fixtureBytes(...MANUAL, `${page}.result_with_boxes.jpg`);
      const image = decodeJpeg(bytes);
      const pageSize = jpegSize(bytes);
      // The capture prints the original image size; the drawing is that image.
      expect(fixtureText(...MANUAL, `${page}.stdout.md`)).toContain(`image size:  (${pageSize.width}, ${pageSize.height})`);
      const boxes = capturedBlocks(fixtureText(...MANUAL, `${page}.stdout.md`)).flatMap((b) => b.boxes);
      expect(boxes.length).toBeGreaterThan(10);

      const ours = boxes.map((box) => boxToPixels(box, pageSize));

      // Off by one pixel, or dividing by 1000, puts the step elsewhere.
      const by1000 = boxes.map((b) => ({
        x1: Math.trunc((b.x1 / 1000) * pageSize.width),
        y1: Math.trunc((b.y1 / 1000) * pageSize.height),
        x2: Math.trunc((b.x2 / 1000) * pageSize.width),
        y2: Math.trunc((b.y2 / 1000) * pageSize.height),
      }));
      const grown = ours.map((r) => ({ x1: r.x1 - 1, y1: r.y1 - 1, x2: r.x2 + 1, y2: r.y2 + 1 }));
      const shrunk = ours.map((r) => ({ x1: r.x1 + 1, y1: r.y1 + 1, x2: r.x2 - 1, y2: r.y2 - 1 }));
      const oursFit = mean(ours.map((rect) => stepsAtEdges(image, rect)));
      // Measured: about 0.64 and 0.75 for ours, below 0.37 for every wrong mapping.
      expect(oursFit).toBeGreaterThan(0.55);
      for (const wrong of [by1000, grown, shrunk]) {
        const fit = mean(wrong.map((rect) => stepsAtEdges(image, rect)));
        expect(fit).toBeLessThan(0.4);
        expect(oursFit - fit).toBeGreaterThan(0.25);
      }
    });
  }
});
