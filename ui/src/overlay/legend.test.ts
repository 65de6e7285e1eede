// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { BoxLayer } from "./box-layer";
import { Legend } from "./legend";

function setup() {
  const layer = new BoxLayer(document.createElement("div"));
  const root = document.createElement("div");
  const legend = new Legend(root, layer);
  layer.addBox(0, "title", [{ x1: 10, y1: 10, x2: 900, y2: 60 }]);
  layer.addBox(1, "text", [{ x1: 10, y1: 70, x2: 900, y2: 300 }]);
  layer.addBox(2, "text", [{ x1: 10, y1: 310, x2: 900, y2: 500 }]);
  legend.refresh();
  return { layer, root };
}

describe("Legend", () => {
  it("shows one chip per label on the page with its block count", () => {
    const { root } = setup();
    const chips = [...root.querySelectorAll("button")].map((b) => b.textContent);
    expect(chips).toEqual(["text 2", "title 1"]);
  });

  it("hides a label's boxes on a click and shows them on the next", () => {
    const { layer, root } = setup();
    const textChip = () => root.querySelector<HTMLButtonElement>('button[data-label="text"]');
    textChip()?.click();
    expect(layer.boxElement(1)?.hidden).toBe(true);
    expect(layer.boxElement(0)?.hidden).toBe(false);
    expect(textChip()?.getAttribute("aria-pressed")).toBe("false");
    textChip()?.click();
    expect(layer.boxElement(1)?.hidden).toBe(false);
  });
});
