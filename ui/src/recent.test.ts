// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { describeAge, recentList, recentName, type RecentDocument } from "./recent";

const HOUR = 3_600_000;
const doc = (over: Partial<RecentDocument>): RecentDocument => ({
  path: "/papers/tracemonkey.pdf",
  title: "Trace-based JIT",
  pageCount: 14,
  lastOpenedMs: 0,
  available: true,
  ...over,
});

describe("describeAge", () => {
  it("says how long ago in the largest whole unit", () => {
    expect(describeAge(0, 30_000)).toBe("just now");
    expect(describeAge(0, 5 * 60_000)).toBe("5 min ago");
    expect(describeAge(0, 3 * HOUR + 59 * 60_000)).toBe("3 h ago");
    expect(describeAge(0, 30 * HOUR)).toBe("yesterday");
    expect(describeAge(0, 24 * 9 * HOUR)).toBe("9 days ago");
    expect(describeAge(10, 0), "a clock set back is not the future").toBe("just now");
  });
});

describe("recentList", () => {
  it("names each document by title, else file name, and disables one no longer where it was", () => {
    expect(recentName(doc({ title: null }))).toBe("tracemonkey.pdf");
    expect(recentName(doc({ title: "  " }))).toBe("tracemonkey.pdf");
    const opened: string[] = [];
    const list = recentList(
      [doc({}), doc({ path: "/gone/a.pdf", title: null, pageCount: 1, available: false })],
      2 * HOUR,
      (path) => opened.push(path),
    );
    const buttons = [...list.querySelectorAll("button")];
    expect(buttons.map((b) => b.textContent)).toEqual(["Trace-based JIT14 pages · 2 h ago", "a.pdf1 page · 2 h ago"]);
    expect(buttons[1]?.disabled).toBe(true);
    expect(buttons[1]?.title).toBe("Not found where it was read: /gone/a.pdf");
    buttons[0]?.click();
    expect(opened).toEqual(["/papers/tracemonkey.pdf"]);
  });
});
