// The page's zoom: fit the pane's width, fit the whole page, or a fixed scale, where 100% shows a
// point of the page as 96/72 CSS pixels (its printed size on a 96 dpi screen).

export type Zoom = { kind: "fitWidth" } | { kind: "fitPage" } | { kind: "scale"; scale: number };

/** The scales + and − step through. */
export const ZOOM_LEVELS = [0.25, 0.33, 0.5, 0.67, 0.75, 0.9, 1, 1.1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4] as const;

const CSS_PX_PER_POINT = 96 / 72;

export interface Area {
  width: number;
  height: number;
}

/** The page's width on screen, in CSS pixels, for a page of `pagePt` points in a pane of `pane` pixels. */
export function displayWidth(zoom: Zoom, pagePt: Area, pane: Area): number {
  switch (zoom.kind) {
    case "fitWidth":
      return Math.max(1, pane.width);
    case "fitPage":
      return Math.max(1, Math.min(pane.width, (pane.height * pagePt.width) / pagePt.height));
    case "scale":
      return pagePt.width * CSS_PX_PER_POINT * zoom.scale;
  }
}

/** The scale a width shows the page at: what + and − step from, and what the zoom label says. */
export function scaleOf(widthPx: number, pagePt: Area): number {
  return widthPx / (pagePt.width * CSS_PX_PER_POINT);
}

/** + or −: the next level above (or below) the scale shown now, held at the ends. */
export function stepZoom(current: number, direction: 1 | -1): Zoom {
  // A hair of tolerance, so a level reached by fitting is not stepped to itself.
  const epsilon = 1e-6;
  const next =
    direction === 1
      ? ZOOM_LEVELS.find((level) => level > current + epsilon) ?? ZOOM_LEVELS[ZOOM_LEVELS.length - 1]!
      : [...ZOOM_LEVELS].reverse().find((level) => level < current - epsilon) ?? ZOOM_LEVELS[0];
  return { kind: "scale", scale: next };
}

export function describeScale(scale: number): string {
  return `${Math.round(scale * 100)}%`;
}
