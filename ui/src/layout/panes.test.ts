import { describe, expect, it } from "vitest";
import { DEFAULT_LAYOUT, dragSplitter, gridColumns, parseLayout } from "./panes";

describe("gridColumns", () => {
  it("gives the library its width, the Markdown half of the rest, the page the remainder", () => {
    expect(gridColumns(DEFAULT_LAYOUT)).toBe("200px 6px minmax(0, 1fr) 6px minmax(0, 1fr)");
    expect(gridColumns({ ...DEFAULT_LAYOUT, markdownPx: 500 })).toBe("200px 6px minmax(0, 1fr) 6px 500px");
  });

  it("collapses a pane to nothing and keeps its width for when it opens again", () => {
    const layout = { ...DEFAULT_LAYOUT, libraryPx: 260, libraryOpen: false, markdownOpen: false };
    expect(gridColumns(layout)).toBe("0px 6px minmax(0, 1fr) 6px 0px");
    expect(gridColumns({ ...layout, libraryOpen: true })).toMatch(/^260px /);
  });
});

describe("dragSplitter", () => {
  it("sets the library's width to where the splitter is dropped, within its limits", () => {
    expect(dragSplitter(DEFAULT_LAYOUT, "library", 300, 1400).libraryPx).toBe(300);
    expect(dragSplitter(DEFAULT_LAYOUT, "library", 20, 1400).libraryPx).toBe(120);
    expect(dragSplitter(DEFAULT_LAYOUT, "library", 1000, 1400).libraryPx).toBe(480);
  });

  it("sets the Markdown pane's width from the right edge, leaving the page its least", () => {
    expect(dragSplitter(DEFAULT_LAYOUT, "markdown", 900, 1400).markdownPx).toBe(497);
    // Dragged nearly to the library: the page keeps 240 px.
    expect(dragSplitter(DEFAULT_LAYOUT, "markdown", 210, 1400).markdownPx).toBe(1400 - 200 - 12 - 240);
    expect(dragSplitter(DEFAULT_LAYOUT, "markdown", 1390, 1400).markdownPx).toBe(240);
  });

  it("opens a collapsed pane when its splitter is dragged", () => {
    const closed = { ...DEFAULT_LAYOUT, markdownOpen: false };
    expect(dragSplitter(closed, "markdown", 900, 1400).markdownOpen).toBe(true);
  });
});

describe("parseLayout", () => {
  it("reads back what was stored, and the default for anything broken", () => {
    const layout = { libraryPx: 250, markdownPx: 600, libraryOpen: false, markdownOpen: true };
    expect(parseLayout(JSON.stringify(layout))).toEqual(layout);
    expect(parseLayout(null)).toEqual(DEFAULT_LAYOUT);
    expect(parseLayout("{not json")).toEqual(DEFAULT_LAYOUT);
    expect(parseLayout(JSON.stringify({ libraryPx: 5, markdownPx: "wide" }))).toEqual({ ...DEFAULT_LAYOUT, libraryPx: 120 });
  });
});
