// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import type { BoxNorm } from "../events";
import { BoxLayer } from "../overlay/box-layer";
import { boxToView, type PageTransform } from "../overlay/geometry";
import { RegionSelect } from "./region-select";

// vastera_manual page 9's size; its first box, sub_title [[65, 52, 234, 80]], covers pixels 76..274 x 86..132.
const PAGE = { width: 1170, height: 1654 };
const SUB_TITLE: BoxNorm = { x1: 65, y1: 52, x2: 234, y2: 80 };

function setup(transform: PageTransform = { zoom: 1, rotation: 0 }) {
  const frame = document.createElement("div");
  const root = document.createElement("div");
  frame.append(root);
  document.body.append(frame);
  const selected = vi.fn((_blockId: number) => {});
  const boxes = new BoxLayer(root, { onSelect: selected });
  boxes.setPage(PAGE, transform);
  boxes.addBox(0, "sub_title", [SUB_TITLE]);
  const regions = vi.fn((_region: BoxNorm) => {});
  const select = new RegionSelect(root, frame, boxes, regions);
  document.body.append(select.button);
  const pointer = (type: string, x: number, y: number, init: PointerEventInit = {}) =>
    root.dispatchEvent(new PointerEvent(type, { clientX: x, clientY: y, button: 0, bubbles: true, cancelable: true, ...init }));
  /** A drag as the browser sends it (happy-dom's layer is at the window's origin), ending in its click. */
  const drag = (from: [number, number], to: [number, number], init: PointerEventInit = {}) => {
    pointer("pointerdown", ...from, init);
    pointer("pointermove", (from[0] + to[0]) / 2, (from[1] + to[1]) / 2, init);
    pointer("pointermove", ...to, init);
    pointer("pointerup", ...to, init);
    root.dispatchEvent(new MouseEvent("click", { clientX: to[0], clientY: to[1], bubbles: true }));
  };
  const rect = () => root.querySelector<HTMLElement>(".region-rect");
  const placed = () => {
    const r = rect()!;
    return [r.style.left, r.style.top, r.style.width, r.style.height];
  };
  return { frame, root, boxes, select, selected, regions, pointer, drag, rect, placed };
}

afterEach(() => document.body.replaceChildren());

describe("RegionSelect", () => {
  it("is a toggle in the page toolbar that turns the page's cursor to a crosshair", () => {
    const { root, select } = setup();
    expect(select.button.id).toBe("region-button");
    expect(select.button.textContent).toBe("Region");
    expect(select.button.title).toBe("Drag a rectangle on the page to read that region again");
    expect(select.button.getAttribute("aria-pressed")).toBe("false");
    select.button.click();
    expect(select.button.getAttribute("aria-pressed")).toBe("true");
    expect(root.classList.contains("region-selecting")).toBe(true);
    select.button.click();
    expect(select.button.getAttribute("aria-pressed")).toBe("false");
    expect(root.classList.contains("region-selecting")).toBe(false);
  });

  it("draws the rectangle while dragging, and gives the region on release, the toggle off", () => {
    const { select, regions, pointer, rect, placed } = setup();
    select.button.click();
    pointer("pointerdown", 300, 400);
    pointer("pointermove", 200, 350);
    expect(rect()?.hidden).toBe(false);
    expect(rect()?.dataset["state"]).toBe("drawing");
    expect(placed()).toEqual(["200px", "350px", "100px", "50px"]);
    pointer("pointerup", 200, 350);
    // Pixels 200..299 x 350..399, rounded outward to units: int(171/999*1170) = 200 (172: 201),
    // int(212/999*1654) = 350 (213: 352), int(256/999*1170) = 299 (255: 298), int(241/999*1654) = 399 (240: 397).
    expect(regions).toHaveBeenCalledTimes(1);
    const region = regions.mock.lastCall![0];
    expect(region).toEqual({ x1: 171, y1: 212, x2: 256, y2: 241 });
    expect(select.button.getAttribute("aria-pressed")).toBe("false");
    // It stays drawn, snapped to the region read.
    expect(rect()?.dataset["state"]).toBe("chosen");
    const view = boxToView(region, PAGE, { zoom: 1, rotation: 0 });
    expect(placed()).toEqual([`${view.left}px`, `${view.top}px`, `${view.width}px`, `${view.height}px`]);
  });

  it("gives back a model's box when the rectangle is drawn over it, at any zoom", () => {
    for (const zoom of [1, 0.5, 0.41]) {
      const transform = { zoom, rotation: 0 } as const;
      const { select, regions, drag } = setup(transform);
      const view = boxToView(SUB_TITLE, PAGE, transform);
      select.button.click();
      drag([view.left, view.top], [view.left + view.width, view.top + view.height]);
      expect(regions).toHaveBeenCalledWith(SUB_TITLE);
      document.body.replaceChildren();
    }
  });

  it("keeps the click that ends a drag from the box under it, and lets plain clicks through", () => {
    const { root, select, selected, regions, drag } = setup();
    select.button.click();
    drag([100, 100], [200, 200]);
    expect(regions).toHaveBeenCalledTimes(1);
    expect(selected, "the drag ended over block 0's box").not.toHaveBeenCalled();
    root.dispatchEvent(new MouseEvent("click", { clientX: 100, clientY: 100, bubbles: true }));
    expect(selected).toHaveBeenCalledWith(0);
  });

  it("takes a drag smaller than 8 px either way as a click: no region, the box selected, the toggle still on", () => {
    const { select, selected, regions, drag, rect } = setup();
    select.button.click();
    // Both end over block 0's box.
    drag([100, 100], [107, 130]);
    drag([100, 100], [130, 107]);
    expect(regions).not.toHaveBeenCalled();
    expect(rect()?.hidden).toBe(true);
    expect(selected).toHaveBeenCalledTimes(2);
    expect(select.button.getAttribute("aria-pressed")).toBe("true");
    drag([100, 100], [108, 108]);
    expect(regions).toHaveBeenCalledTimes(1);
  });

  it("draws with Shift held without the toggle, and not at all without either", () => {
    const { select, regions, drag, selected } = setup();
    drag([300, 300], [400, 400]);
    expect(regions).not.toHaveBeenCalled();
    expect(selected).not.toHaveBeenCalled();
    drag([300, 300], [400, 400], { shiftKey: true });
    expect(regions).toHaveBeenCalledTimes(1);
    expect(select.button.getAttribute("aria-pressed")).toBe("false");
  });

  it("keeps the region on the page however far the pointer goes", () => {
    const { select, regions, drag } = setup();
    select.button.click();
    drag([1100, 1600], [5000, 9000]);
    expect(regions.mock.lastCall![0]).toMatchObject({ x2: 999, y2: 999 });
    drag([50, 50], [-300, -300], { shiftKey: true });
    expect(regions.mock.lastCall![0]).toMatchObject({ x1: 0, y1: 0 });
  });

  it("cancels the drag on Esc, which the window's Esc (stop reading) never hears", () => {
    const { select, regions, pointer, rect } = setup();
    const windowKeys = vi.fn();
    window.addEventListener("keydown", windowKeys);
    try {
      select.button.click();
      pointer("pointerdown", 100, 100);
      pointer("pointermove", 300, 300);
      document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true, cancelable: true }));
      expect(windowKeys).not.toHaveBeenCalled();
      expect(rect()?.hidden).toBe(true);
      pointer("pointerup", 300, 300);
      expect(regions).not.toHaveBeenCalled();
      // Once the drag is over, Esc is the window's again.
      document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
      expect(windowKeys).toHaveBeenCalledTimes(1);
    } finally {
      window.removeEventListener("keydown", windowKeys);
    }
  });

  it("puts what stands beside the region under it, follows the zoom, and clears both", () => {
    const { frame, boxes, select, drag, rect, placed } = setup();
    select.button.click();
    drag([100, 200], [300, 260]);
    const panel = document.createElement("div");
    select.showBeside(panel);
    expect(panel.parentElement).toBe(frame);
    const at = (p: HTMLElement) => [p.style.getPropertyValue("--region-left"), p.style.getPropertyValue("--region-top")];
    const before = placed();
    expect(at(panel)).toEqual([before[0], `${parseFloat(before[1]!) + parseFloat(before[3]!)}px`]);

    boxes.setPage(PAGE, { zoom: 0.5, rotation: 0 });
    select.place();
    expect(parseFloat(placed()[2]!)).toBeCloseTo(parseFloat(before[2]!) / 2, 5);
    expect(parseFloat(at(panel)[0]!)).toBeCloseTo(parseFloat(before[0]!) / 2, 5);

    select.clear();
    expect(rect()?.hidden).toBe(true);
    expect(panel.isConnected).toBe(false);
  });

  it("keeps the region chosen when a later drag is only a click", () => {
    const { select, regions, drag, rect } = setup();
    select.button.click();
    drag([100, 200], [300, 260]);
    drag([500, 500], [503, 503], { shiftKey: true });
    expect(regions).toHaveBeenCalledTimes(1);
    expect(rect()?.hidden).toBe(false);
    expect(rect()?.dataset["state"]).toBe("chosen");
    select.clear();
    expect(rect()?.hidden).toBe(true);
  });
});
