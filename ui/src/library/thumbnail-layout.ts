// Where each page's thumbnail sits in the library's list, so that only the ones in view (and a
// margin) need to exist: a 500-page document is a few dozen elements, not 500.

/** Sizes in CSS pixels; styles.css gives `.thumbnail` the same padding, border and label height. */
export interface ThumbnailMetrics {
  imageWidth: number;
  /** Padding, border, the gap above the label, and the label: all a thumbnail adds to its image. */
  chrome: number;
  /** Between two thumbnails. */
  gap: number;
}

export const THUMBNAIL_METRICS: ThumbnailMetrics = { imageWidth: 140, chrome: 2 * 6 + 2 * 2 + 4 + 16, gap: 10 };

export interface ThumbnailLayout {
  tops: number[];
  heights: number[];
  /** The list's whole height. */
  total: number;
}

/** Lays thumbnails out top to bottom; `aspects` are height / width of each page. */
export function layoutThumbnails(aspects: readonly number[], metrics = THUMBNAIL_METRICS): ThumbnailLayout {
  const tops: number[] = [];
  const heights: number[] = [];
  let y = 0;
  for (const aspect of aspects) {
    const height = Math.round(metrics.imageWidth * aspect) + metrics.chrome;
    tops.push(y);
    heights.push(height);
    y += height + metrics.gap;
  }
  return { tops, heights, total: Math.max(0, y - metrics.gap) };
}

/** Pages whose thumbnails overlap `from..to` (list coordinates): `first` up to, not including, `end`. */
export function visibleRange(layout: ThumbnailLayout, from: number, to: number): { first: number; end: number } {
  const { tops, heights } = layout;
  const first = firstWhere(tops.length, (i) => tops[i]! + heights[i]! > from);
  const end = firstWhere(tops.length, (i) => tops[i]! >= to);
  return { first, end: Math.max(first, end) };
}

/** The first index in 0..n for which `test` holds, `test` being false then true along the list. */
function firstWhere(n: number, test: (i: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (test(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
