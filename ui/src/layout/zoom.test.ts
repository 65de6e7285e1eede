import { describe, expect, it } from "vitest";
import { describeScale, displayWidth, scaleOf, stepZoom } from "./zoom";

const A4 = { width: 595.28, height: 841.89 };
const pane = { width: 600, height: 500 };

describe("displayWidth", () => {
  it("fits the pane's width", () => {
    expect(displayWidth({ kind: "fitWidth" }, A4, pane)).toBe(600);
  });

  it("fits the whole page: the height limits a portrait page in a wide pane", () => {
    const width = displayWidth({ kind: "fitPage" }, A4, pane);
    expect((width * A4.height) / A4.width).toBeCloseTo(500, 6);
    // A landscape slide in the same pane is held by the width instead.
    expect(displayWidth({ kind: "fitPage" }, { width: 960, height: 540 }, pane)).toBe(600);
  });

  it("shows a point as 96/72 pixels at 100%", () => {
    expect(displayWidth({ kind: "scale", scale: 1 }, { width: 72, height: 72 }, pane)).toBe(96);
    expect(displayWidth({ kind: "scale", scale: 2 }, A4, pane)).toBeCloseTo(595.28 * (4 / 3) * 2, 6);
    expect(scaleOf(96, { width: 72, height: 72 })).toBe(1);
  });
});

describe("stepZoom", () => {
  it("goes to the next level up or down from any scale", () => {
    expect(stepZoom(1, 1)).toEqual({ kind: "scale", scale: 1.1 });
    expect(stepZoom(1, -1)).toEqual({ kind: "scale", scale: 0.9 });
    // From a fitted 0.8: up to 0.9, down to 0.75.
    expect(stepZoom(0.8, 1)).toEqual({ kind: "scale", scale: 0.9 });
    expect(stepZoom(0.8, -1)).toEqual({ kind: "scale", scale: 0.75 });
  });

  it("stays within the levels at the ends", () => {
    expect(stepZoom(4, 1)).toEqual({ kind: "scale", scale: 4 });
    expect(stepZoom(9, 1)).toEqual({ kind: "scale", scale: 4 });
    expect(stepZoom(0.25, -1)).toEqual({ kind: "scale", scale: 0.25 });
  });

  it("says the scale as a percentage", () => {
    expect(describeScale(0.666)).toBe("67%");
  });
});
