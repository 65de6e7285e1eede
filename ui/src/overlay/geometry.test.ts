import { describe, expect, it } from "vitest";
import {
  IDENTITY,
  boxToPixels,
  boxToView,
  hitTest,
  normToPixel,
  pixelToView,
  viewSize,
  viewToBox,
  viewToPixel,
  type Rotation,
} from "./geometry";

// Expected pixels are Python's `int(x / 999 * W)`, the reference's draw_bounding_boxes, run by hand.
describe("boxToPixels, the reference's arithmetic", () => {
  it("divides by 999 and truncates on the image size", () => {
    // vastera_manual page 1 title [[60, 163, 597, 265]] on its 1170x1654 page.
    expect(boxToPixels({ x1: 60, y1: 163, x2: 597, y2: 265 }, { width: 1170, height: 1654 })).toEqual({
      x1: 70,
      y1: 269,
      x2: 699,
      y2: 438,
    });
  });

  it("keeps the reference's floating-point order: 63/999*111 is 6.999..., so 6, not 7", () => {
    expect(normToPixel(63, 111)).toBe(6);
    expect(normToPixel(0, 1400)).toBe(0);
    expect(normToPixel(999, 1400)).toBe(1400);
    // Dividing by 1000 would give 140 here.
    expect(normToPixel(100, 1400)).toBe(140);
    expect(normToPixel(500, 1400)).toBe(700);
    expect(normToPixel(998, 1400)).toBe(1398);
  });
});

describe("boxToView, zoom and rotation", () => {
  const page = { width: 999, height: 1998 };
  const box = { x1: 100, y1: 200, x2: 300, y2: 500 };

  it("maps the covered pixels, scaled by the zoom", () => {
    // int(100/999*999) = 100, int(300/999*999) = 300, int(200/999*1998) = 400, int(500/999*1998) = 1000;
    // PIL's outline covers columns 100..300 and rows 400..1000, both ends included.
    expect(boxToPixels(box, page)).toEqual({ x1: 100, y1: 400, x2: 300, y2: 1000 });
    expect(boxToView(box, page, { zoom: 1, rotation: 0 })).toEqual({ left: 100, top: 400, width: 201, height: 601 });
    expect(boxToView(box, page, { zoom: 0.5, rotation: 0 })).toEqual({ left: 50, top: 200, width: 100.5, height: 300.5 });
  });

  it("turns the box with the page, clockwise", () => {
    // 90: the page shows 1998 wide, 999 tall; image row y becomes view column 1998 - y, column x row x.
    expect(boxToView(box, page, { zoom: 1, rotation: 90 })).toEqual({ left: 997, top: 100, width: 601, height: 201 });
    // 180: column x becomes 999 - x, row y becomes 1998 - y.
    expect(boxToView(box, page, { zoom: 1, rotation: 180 })).toEqual({ left: 698, top: 997, width: 201, height: 601 });
    // 270: row y becomes column y, column x becomes row 999 - x.
    expect(boxToView(box, page, { zoom: 1, rotation: 270 })).toEqual({ left: 400, top: 698, width: 601, height: 201 });
    expect(boxToView(box, page, { zoom: 2, rotation: 270 })).toEqual({ left: 800, top: 1396, width: 1202, height: 402 });
  });

  it("clips a 999 edge to the page, as PIL does", () => {
    const full = { x1: 0, y1: 0, x2: 999, y2: 999 };
    for (const rotation of [0, 90, 180, 270] as Rotation[]) {
      const size = viewSize(page, { zoom: 0.25, rotation });
      expect(boxToView(full, page, { zoom: 0.25, rotation })).toEqual({ left: 0, top: 0, ...size });
    }
  });

  it("viewToPixel undoes pixelToView", () => {
    for (const rotation of [0, 90, 180, 270] as Rotation[]) {
      const transform = { zoom: 0.75, rotation };
      const back = viewToPixel(pixelToView(123, 456, page, transform), page, transform);
      expect(back.x).toBeCloseTo(123, 9);
      expect(back.y).toBeCloseTo(456, 9);
    }
  });
});

describe("hitTest, a click to a block", () => {
  const page = { width: 999, height: 999 }; // one pixel per unit, to read the cases easily
  const blocks = [
    { id: 0, boxes: [{ x1: 0, y1: 0, x2: 999, y2: 999 }] }, // a full-page image
    { id: 1, boxes: [{ x1: 100, y1: 100, x2: 200, y2: 150 }] },
    { id: 2, boxes: [{ x1: 300, y1: 100, x2: 400, y2: 150 }, { x1: 500, y1: 500, x2: 600, y2: 550 }] },
  ];

  it("finds the smallest box under the point", () => {
    const view = { zoom: 1, rotation: 0 } as const;
    expect(hitTest({ x: 150, y: 120 }, blocks, page, view)).toBe(1);
    expect(hitTest({ x: 550, y: 520 }, blocks, page, view)).toBe(2);
    expect(hitTest({ x: 250, y: 120 }, blocks, page, view)).toBe(0);
    expect(hitTest({ x: 150, y: 120 }, blocks.slice(1), page, view)).toBe(1);
    expect(hitTest({ x: 250, y: 120 }, blocks.slice(1), page, view)).toBeNull();
  });

  it("includes the last pixel row and column and nothing past them", () => {
    const view = { zoom: 1, rotation: 0 } as const;
    const only = blocks.slice(1, 2);
    expect(hitTest({ x: 200.9, y: 150.9 }, only, page, view)).toBe(1);
    expect(hitTest({ x: 201, y: 120 }, only, page, view)).toBeNull();
    expect(hitTest({ x: 99.9, y: 120 }, only, page, view)).toBeNull();
  });

  it("follows zoom and rotation", () => {
    // Block 1 covers image pixels x 100..200, y 100..150; turned 90 degrees at zoom 2 on a 999-high
    // image that is view x (999-151)*2..(999-100)*2 = 1696..1798, y 200..402.
    const view = { zoom: 2, rotation: 90 } as const;
    expect(hitTest({ x: 1700, y: 300 }, blocks.slice(1), page, view)).toBe(1);
    expect(hitTest({ x: 1690, y: 300 }, blocks.slice(1), page, view)).toBeNull();
    expect(hitTest({ x: 300, y: 1700 }, blocks.slice(1), page, view)).toBeNull();
  });
});

describe("viewToBox, a rectangle drawn on the page to a box", () => {
  const page = { width: 1170, height: 1654 };
  // vastera_manual page 9's first box, and its full-page image box.
  const boxes = [
    { x1: 65, y1: 52, x2: 234, y2: 80 },
    { x1: 0, y1: 0, x2: 999, y2: 999 },
    { x1: 360, y1: 170, x2: 636, y2: 585 },
  ];

  it("gives back the box a rectangle was drawn over, at any zoom and rotation", () => {
    for (const rotation of [0, 90, 180, 270] as Rotation[]) {
      for (const zoom of [1, 0.5, 0.37, 2]) {
        const transform = { zoom, rotation };
        for (const box of boxes) expect(viewToBox(boxToView(box, page, transform), page, transform)).toEqual(box);
      }
    }
  });

  it("comes within 999/W units of the box on a page image narrower than 999 pixels", () => {
    const small = { width: 600, height: 800 };
    for (let x1 = 0; x1 < 500; x1 += 7) {
      const box = { x1, y1: x1, x2: x1 + 300, y2: x1 + 400 };
      const back = viewToBox(boxToView(box, small, IDENTITY), small, IDENTITY);
      for (const side of ["x1", "y1", "x2", "y2"] as const) expect(Math.abs(back[side] - box[side])).toBeLessThanOrEqual(999 / 600);
    }
  });

  it("rounds outward: the box covers every pixel the rectangle touches", () => {
    // Pixel 76 is where unit 65 lands (int(65/999*1170)); a rectangle from inside it starts there.
    const box = viewToBox({ left: 76.5, top: 100, width: 10.2, height: 10 }, page, IDENTITY);
    expect(box.x1).toBe(65);
    const pixels = boxToPixels(box, page);
    expect(pixels.x1).toBeLessThanOrEqual(76);
    expect(pixels.x2).toBeGreaterThanOrEqual(86);
    expect(pixels.y1).toBeLessThanOrEqual(100);
    expect(pixels.y2).toBeGreaterThanOrEqual(109);
  });

  it("keeps the box on the page when the rectangle runs off it", () => {
    expect(viewToBox({ left: -40, top: -5, width: 2000, height: 3000 }, page, IDENTITY)).toEqual({ x1: 0, y1: 0, x2: 999, y2: 999 });
  });
});
