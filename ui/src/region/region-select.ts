// Choosing a region of the page shown, to read it again: with the Region toggle on, or Shift held, a drag
// on the page draws a rectangle over it. On release the rectangle becomes a box of the page (normalised as
// the model's boxes are) and stays drawn, snapped to that box, while the region is read and its text kept;
// the panel that shows the reading stands just under it. A drag too small to be one is a click.
import { el } from "../dom";
import type { BoxNorm } from "../events";
import { boxToView, viewSize, viewToBox, type PageTransform, type PixelSize, type ViewPoint, type ViewRect } from "../overlay/geometry";
import "./region.css";

/** Smaller than this (CSS pixels) in either direction, a drag is a click: box clicks still select their block. */
export const MIN_DRAG_PX = 8;

/** Where the page's boxes are drawn: the box layer, whose coordinates the rectangle shares. */
export interface BoxPlacement {
  placement(): { page: PixelSize; transform: PageTransform };
}

export class RegionSelect {
  /** The page toolbar's toggle. */
  readonly button: HTMLButtonElement;
  private readonly rect: HTMLElement;
  private on = false;
  /** The region chosen, drawn until it is read and kept, or cancelled. */
  private chosen: BoxNorm | null = null;
  /** What stands under the region chosen (the panel). */
  private beside: HTMLElement | null = null;
  /** Ends the drag under way: its listeners go. */
  private endDrag: (() => void) | null = null;
  /** A drag just made a region: the click the browser sends after it is not a click on a box. */
  private swallowClick = false;

  constructor(
    /** The box layer's element: the drag is on it and the rectangle drawn in it. */
    private readonly layer: HTMLElement,
    /** The page's frame, which holds the layer: what stands beside the region goes in it. */
    private readonly host: HTMLElement,
    private readonly boxes: BoxPlacement,
    private readonly onRegion: (region: BoxNorm) => void,
  ) {
    this.button = el("button", {
      type: "button",
      id: "region-button",
      className: "region-button",
      textContent: "Region",
      title: "Drag a rectangle on the page to read that region again",
    });
    this.button.addEventListener("click", () => this.setOn(!this.on));
    this.setOn(false);
    this.rect = el("div", { className: "region-rect", hidden: true });
    layer.addEventListener("pointerdown", (event) => this.start(event));
    // Before the box layer hears it: the frame holds the layer.
    host.addEventListener(
      "click",
      (event) => {
        if (this.swallowClick && this.layer.contains(event.target as Node)) event.stopPropagation();
        this.swallowClick = false;
      },
      true,
    );
  }

  /** Puts `element` just under the region chosen, where it stays as the page zooms, until clear(). */
  showBeside(element: HTMLElement): void {
    if (this.beside !== element) this.beside?.remove();
    this.beside = element;
    this.host.append(element);
    this.place();
  }

  /** The region chosen, and what stands beside it, follow the page's zoom. */
  place(): void {
    if (!this.chosen) return;
    const { page, transform } = this.boxes.placement();
    const view = boxToView(this.chosen, page, transform);
    this.draw(view, "chosen");
    this.beside?.style.setProperty("--region-left", `${view.left}px`);
    this.beside?.style.setProperty("--region-top", `${view.top + view.height}px`);
  }

  /** Drops the drag under way, the region chosen and what stands beside it (the page changed, the panel went). */
  clear(): void {
    this.endDrag?.();
    this.chosen = null;
    this.beside?.remove();
    this.beside = null;
    this.rect.hidden = true;
  }

  private setOn(on: boolean): void {
    this.on = on;
    this.button.setAttribute("aria-pressed", String(on));
    this.layer.classList.toggle("region-selecting", on);
  }

  private start(down: PointerEvent): void {
    this.swallowClick = false;
    if (down.button !== 0 || !(this.on || down.shiftKey)) return;
    // No text selection, no native drag: the drag is the rectangle's.
    down.preventDefault();
    this.endDrag?.();
    const from = this.pointAt(down);
    const move = (event: PointerEvent) => this.draw(between(from, this.pointAt(event)), "drawing");
    const up = (event: PointerEvent) => {
      end();
      this.release(between(from, this.pointAt(event)));
    };
    const cancel = () => {
      end();
      this.restore();
    };
    // Esc cancels the drag, not the reading (the window's Esc): heard first, and kept from the others.
    const escape = (event: KeyboardEvent) => {
      if (event.key !== "Escape") return;
      event.preventDefault();
      event.stopPropagation();
      cancel();
    };
    const end = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
      window.removeEventListener("pointercancel", cancel);
      window.removeEventListener("keydown", escape, true);
      this.layer.classList.remove("region-drawing");
      this.endDrag = null;
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
    window.addEventListener("pointercancel", cancel);
    window.addEventListener("keydown", escape, true);
    this.layer.classList.add("region-drawing");
    this.endDrag = end;
  }

  /** The drag ended: a region, unless it was too small to be one. */
  private release(drawn: ViewRect): void {
    if (drawn.width < MIN_DRAG_PX || drawn.height < MIN_DRAG_PX) {
      this.restore();
      return;
    }
    const { page, transform } = this.boxes.placement();
    this.chosen = viewToBox(drawn, page, transform);
    this.swallowClick = true;
    this.setOn(false);
    this.place();
    this.onRegion(this.chosen);
  }

  /** Back to the region chosen, if any: a drag that made none leaves no rectangle. */
  private restore(): void {
    if (this.chosen) this.place();
    else this.rect.hidden = true;
  }

  private draw(view: ViewRect, state: "drawing" | "chosen"): void {
    const rect = this.rect;
    rect.dataset["state"] = state;
    rect.style.left = `${view.left}px`;
    rect.style.top = `${view.top}px`;
    rect.style.width = `${view.width}px`;
    rect.style.height = `${view.height}px`;
    rect.hidden = false;
    // Over the boxes, which are appended as they come.
    if (this.layer.lastElementChild !== rect) this.layer.append(rect);
  }

  /** The pointer on the page as shown, kept on it. */
  private pointAt(event: PointerEvent): ViewPoint {
    const origin = this.layer.getBoundingClientRect();
    const { page, transform } = this.boxes.placement();
    const size = viewSize(page, transform);
    return {
      x: Math.min(size.width, Math.max(0, event.clientX - origin.left)),
      y: Math.min(size.height, Math.max(0, event.clientY - origin.top)),
    };
  }
}

function between(a: ViewPoint, b: ViewPoint): ViewRect {
  return { left: Math.min(a.x, b.x), top: Math.min(a.y, b.y), width: Math.abs(b.x - a.x), height: Math.abs(b.y - a.y) };
}
