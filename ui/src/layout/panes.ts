// The three panes' widths: the library and the Markdown pane are dragged to a width or collapsed;
// the page takes the rest. Pure, so the limits are tested apart from the DOM.

export interface PaneLayout {
  libraryPx: number;
  /** null: half of what the library leaves, until the person drags it. */
  markdownPx: number | null;
  libraryOpen: boolean;
  markdownOpen: boolean;
}

export const DEFAULT_LAYOUT: PaneLayout = { libraryPx: 200, markdownPx: null, libraryOpen: true, markdownOpen: true };

const SPLITTER_PX = 6;
export const LIBRARY_MIN_PX = 120;
export const LIBRARY_MAX_PX = 480;
/** The least a shown pane (page or Markdown) keeps, so a drag cannot squeeze one away. */
export const PANE_MIN_PX = 240;

/** `grid-template-columns` for library, splitter, page, splitter, Markdown. */
export function gridColumns(layout: PaneLayout): string {
  const library = layout.libraryOpen ? `${layout.libraryPx}px` : "0px";
  const markdown = !layout.markdownOpen
    ? "0px"
    : layout.markdownPx === null
      ? "minmax(0, 1fr)"
      : `${layout.markdownPx}px`;
  return `${library} ${SPLITTER_PX}px minmax(0, 1fr) ${SPLITTER_PX}px ${markdown}`;
}

/** A splitter dragged to `x` (CSS pixels from the window's left) in a window `windowPx` wide. */
export function dragSplitter(layout: PaneLayout, splitter: "library" | "markdown", x: number, windowPx: number): PaneLayout {
  if (splitter === "library") {
    const max = Math.min(LIBRARY_MAX_PX, windowPx - 2 * PANE_MIN_PX);
    return { ...layout, libraryOpen: true, libraryPx: clamp(Math.round(x), LIBRARY_MIN_PX, max) };
  }
  const library = layout.libraryOpen ? layout.libraryPx : 0;
  const max = windowPx - library - 2 * SPLITTER_PX - PANE_MIN_PX;
  return { ...layout, markdownOpen: true, markdownPx: clamp(Math.round(windowPx - x - SPLITTER_PX / 2), PANE_MIN_PX, max) };
}

/** A layout read back from storage: anything missing or out of range is the default's. */
export function parseLayout(stored: string | null): PaneLayout {
  if (!stored) return DEFAULT_LAYOUT;
  try {
    const value = JSON.parse(stored) as Partial<PaneLayout>;
    return {
      libraryPx:
        typeof value.libraryPx === "number" ? clamp(value.libraryPx, LIBRARY_MIN_PX, LIBRARY_MAX_PX) : DEFAULT_LAYOUT.libraryPx,
      markdownPx: typeof value.markdownPx === "number" ? Math.max(PANE_MIN_PX, value.markdownPx) : null,
      libraryOpen: value.libraryOpen !== false,
      markdownOpen: value.markdownOpen !== false,
    };
  } catch {
    return DEFAULT_LAYOUT;
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.max(min, Math.min(Math.max(min, max), value));
}
