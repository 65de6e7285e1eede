// Figures in the Markdown pane: an `image` block shows the part of the page its boxes cover,
// cropped in Rust from the rendered page exactly as Export crops it (page_protocol.rs).
import { COORD_MAX, type BoxNorm } from "../events";

/** The widest a page is rendered for a figure: the page protocol's own cap. */
const MAX_PAGE_WIDTH_PX = 4000;

/** Blocks whose boxes are figures to show. */
export function isFigure(label: string): boolean {
  return label === "image";
}

/** The boxes' union, as the crop takes it: one figure per block. */
export function unionBox(boxes: readonly BoxNorm[]): BoxNorm | null {
  if (boxes.length === 0) return null;
  return boxes.reduce((a, b) => ({
    x1: Math.min(a.x1, b.x1),
    y1: Math.min(a.y1, b.y1),
    x2: Math.max(a.x2, b.x2),
    y2: Math.max(a.y2, b.y2),
  }));
}

/** How wide to render the page so that its crop under `boxes` is `figurePx` wide (no upscaling
 * in the pane), within the protocol's cap. */
export function pageWidthForFigure(boxes: readonly BoxNorm[], figurePx: number): number {
  const union = unionBox(boxes);
  const share = union ? Math.max(1, union.x2 - union.x1) / COORD_MAX : 1;
  return Math.min(MAX_PAGE_WIDTH_PX, Math.ceil(figurePx / share));
}

/** Width over height of the crop under `boxes` on a page of `pageSize` (any unit). */
export function figureAspect(boxes: readonly BoxNorm[], pageSize: { width: number; height: number }): number {
  const union = unionBox(boxes) ?? { x1: 0, y1: 0, x2: COORD_MAX, y2: COORD_MAX };
  const width = Math.max(1, union.x2 - union.x1) * pageSize.width;
  const height = Math.max(1, union.y2 - union.y1) * pageSize.height;
  return width / height;
}

/** The figure element: an image of the crop, named for where it comes from, holding its place
 * before it loads so the pane does not jump when it does. */
export function figureElement(url: string, page: number, aspect: number): HTMLElement {
  const figure = document.createElement("figure");
  figure.className = "page-figure";
  const image = document.createElement("img");
  image.style.aspectRatio = String(aspect);
  image.alt = `Figure from page ${page + 1}`;
  image.decoding = "async";
  // Pages render one at a time: figures far down the pane wait until they are scrolled to.
  image.loading = "lazy";
  image.src = url;
  figure.append(image);
  return figure;
}
