// Where a grounding box lands on screen. The model writes boxes in 0..999 of the page; the
// reference (DeepSeek-OCR-2's draw_bounding_boxes) converts them with int(x / 999 * W) on the
// image it draws on, so we do the same on the rendered page image, then scale and rotate to CSS.
import { COORD_MAX, type BoxNorm } from "../events";

/** A size in pixels of the rendered page image (its natural size, not its size on screen). */
export interface PixelSize {
  width: number;
  height: number;
}

/**
 * A rectangle in page-image pixels, as the reference passes it to PIL's `rectangle`: both
 * corners are pixels the outline covers, so it spans columns x1..x2 and rows y1..y2 inclusive.
 */
export interface PixelRect {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** A rectangle in CSS pixels relative to the top-left corner of the page as shown. */
export interface ViewRect {
  left: number;
  top: number;
  width: number;
  height: number;
}

export interface ViewPoint {
  x: number;
  y: number;
}

/** Clockwise rotation of the page as shown. */
export type Rotation = 0 | 90 | 180 | 270;

/** How the page image is shown: CSS pixels per image pixel, and its rotation. */
export interface PageTransform {
  zoom: number;
  rotation: Rotation;
}

export const IDENTITY: PageTransform = { zoom: 1, rotation: 0 };

/** The reference's arithmetic: divide by 999, multiply by the image size, truncate. */
export function normToPixel(coord: number, size: number): number {
  return Math.trunc((coord / COORD_MAX) * size);
}

export function boxToPixels(box: BoxNorm, page: PixelSize): PixelRect {
  return {
    x1: normToPixel(box.x1, page.width),
    y1: normToPixel(box.y1, page.height),
    x2: normToPixel(box.x2, page.width),
    y2: normToPixel(box.y2, page.height),
  };
}

/** The size of the page on screen: rotated a quarter turn, width and height swap. */
export function viewSize(page: PixelSize, transform: PageTransform): PixelSize {
  const width = page.width * transform.zoom;
  const height = page.height * transform.zoom;
  return transform.rotation === 90 || transform.rotation === 270
    ? { width: height, height: width }
    : { width, height };
}

/** A point in page-image pixels to CSS pixels on the shown page. */
export function pixelToView(x: number, y: number, page: PixelSize, transform: PageTransform): ViewPoint {
  const { zoom, rotation } = transform;
  const sx = x * zoom;
  const sy = y * zoom;
  const w = page.width * zoom;
  const h = page.height * zoom;
  switch (rotation) {
    case 0:
      return { x: sx, y: sy };
    case 90:
      return { x: h - sy, y: sx };
    case 180:
      return { x: w - sx, y: h - sy };
    case 270:
      return { x: sy, y: w - sx };
  }
}

/** A point on the shown page (CSS pixels) back to page-image pixels: the inverse of pixelToView. */
export function viewToPixel(point: ViewPoint, page: PixelSize, transform: PageTransform): ViewPoint {
  const { zoom, rotation } = transform;
  const w = page.width * zoom;
  const h = page.height * zoom;
  let sx: number;
  let sy: number;
  switch (rotation) {
    case 0:
      [sx, sy] = [point.x, point.y];
      break;
    case 90:
      [sx, sy] = [point.y, h - point.x];
      break;
    case 180:
      [sx, sy] = [w - point.x, h - point.y];
      break;
    case 270:
      [sx, sy] = [w - point.y, point.x];
      break;
  }
  return { x: sx / zoom, y: sy / zoom };
}

/**
 * The area a pixel rectangle covers (x2 and y2 included) on the shown page. A coordinate of 999
 * maps to W, one past the last pixel, which PIL clips; so do we, to stay on the page.
 */
export function pixelsToView(rect: PixelRect, page: PixelSize, transform: PageTransform): ViewRect {
  const x2 = Math.min(rect.x2, page.width - 1);
  const y2 = Math.min(rect.y2, page.height - 1);
  const a = pixelToView(rect.x1, rect.y1, page, transform);
  const b = pixelToView(x2 + 1, y2 + 1, page, transform);
  const left = Math.min(a.x, b.x);
  const top = Math.min(a.y, b.y);
  return { left, top, width: Math.abs(b.x - a.x), height: Math.abs(b.y - a.y) };
}

export function boxToView(box: BoxNorm, page: PixelSize, transform: PageTransform): ViewRect {
  return pixelsToView(boxToPixels(box, page), page, transform);
}

/**
 * A rectangle on the shown page (CSS pixels) as a box of the page, rounded outward: the tightest box
 * whose pixels, mapped as boxToPixels maps them, cover every image pixel the rectangle touches; clamped
 * to the page. It undoes boxToView: a rectangle drawn over a box comes back as that box, exactly on an image
 * 999 pixels or more wide (tall), and to within 999/W units on a narrower one, where neighbouring units share
 * a pixel.
 */
export function viewToBox(rect: ViewRect, page: PixelSize, transform: PageTransform): BoxNorm {
  const a = viewToPixel({ x: rect.left, y: rect.top }, page, transform);
  const b = viewToPixel({ x: rect.left + rect.width, y: rect.top + rect.height }, page, transform);
  const [left, right] = touchedPixels(a.x, b.x, page.width);
  const [top, bottom] = touchedPixels(a.y, b.y, page.height);
  return {
    x1: lastNormAtOrBefore(left, page.width),
    y1: lastNormAtOrBefore(top, page.height),
    x2: firstNormAtOrAfter(right, page.width),
    y2: firstNormAtOrAfter(bottom, page.height),
  };
}

/** The first and last pixels a span between two image coordinates touches, kept on the image. Coordinates
 * are snapped to a millionth first: a zoom's division leaves 76.00000001 where the edge is 76. */
function touchedPixels(a: number, b: number, size: number): [number, number] {
  const snap = (value: number) => Math.round(value * 1e6) / 1e6;
  const first = Math.floor(snap(Math.min(a, b)));
  const last = Math.ceil(snap(Math.max(a, b))) - 1;
  const onImage = (pixel: number) => Math.min(size - 1, Math.max(0, pixel));
  return [onImage(first), onImage(Math.max(first, last))];
}

/** The largest coordinate that maps to `pixel` or before it (0 always does). */
function lastNormAtOrBefore(pixel: number, size: number): number {
  // From one past the estimate down, so the float arithmetic cannot start below the answer.
  let n = Math.min(COORD_MAX, Math.floor(((pixel + 1) / size) * COORD_MAX) + 1);
  while (n > 0 && normToPixel(n, size) > pixel) n--;
  return n;
}

/** The smallest coordinate that maps to `pixel` or after it (COORD_MAX, the image's size, always does). */
function firstNormAtOrAfter(pixel: number, size: number): number {
  let n = Math.max(0, Math.ceil((pixel / size) * COORD_MAX) - 1);
  while (n < COORD_MAX && normToPixel(n, size) < pixel) n++;
  return n;
}

/** Something on the page that owns boxes: a block, found by its id. */
export interface BoxOwner {
  id: number;
  boxes: readonly BoxNorm[];
}

/**
 * Which owner's box is under a point on the shown page, or null. Boxes nest (a full-page
 * `image` box holds every other), so the smallest box containing the point wins.
 */
export function hitTest(
  point: ViewPoint,
  owners: Iterable<BoxOwner>,
  page: PixelSize,
  transform: PageTransform,
): number | null {
  const p = viewToPixel(point, page, transform);
  let best: number | null = null;
  let bestArea = Infinity;
  for (const owner of owners) {
    for (const box of owner.boxes) {
      const r = boxToPixels(box, page);
      if (p.x < r.x1 || p.x >= r.x2 + 1 || p.y < r.y1 || p.y >= r.y2 + 1) continue;
      const area = (r.x2 - r.x1 + 1) * (r.y2 - r.y1 + 1);
      if (area < bestArea) {
        best = owner.id;
        bestArea = area;
      }
    }
  }
  return best;
}
