import { describe, expect, it } from "vitest";
import { DEFAULT_CHOICE, describeChoice, readingChoice, RESOLUTION_OPTIONS, retryChoice } from "./modes";
import { pagesForReRead } from "./reread";

describe("readingChoice", () => {
  it("takes the values the Rust side knows", () => {
    expect(readingChoice("plain", "baseOnly")).toEqual({ mode: "plain", resolution: "baseOnly" });
    expect(readingChoice("layout", "baseWithTiles")).toEqual(DEFAULT_CHOICE);
  });

  it("refuses DeepSeek-OCR's sizes, which OCR-2 has no queries for, saying why", () => {
    expect(() => readingChoice("layout", "tiny")).toThrow(/1024 px and 768 px/);
    expect(() => readingChoice("layout", "huge")).toThrow(/"huge" is not a resolution/);
    expect(() => readingChoice("poem", "baseOnly")).toThrow(/"poem" is not a reading mode/);
    expect(RESOLUTION_OPTIONS.filter((o) => !o.unavailable).map((o) => o.value)).toEqual(["baseWithTiles", "baseOnly"]);
  });
});

describe("retryChoice", () => {
  it("retries a looped page with the other prompt and a failed page as it was", () => {
    expect(retryChoice(DEFAULT_CHOICE, "looped")).toEqual({ mode: "plain", resolution: "baseWithTiles" });
    expect(retryChoice({ mode: "plain", resolution: "baseOnly" }, "looped")).toEqual({ mode: "layout", resolution: "baseOnly" });
    expect(retryChoice(DEFAULT_CHOICE, "failed")).toEqual(DEFAULT_CHOICE);
  });

  it("names a choice in words", () => {
    expect(describeChoice({ mode: "plain", resolution: "baseOnly" })).toBe("Plain text, base only");
  });
});

describe("pagesForReRead", () => {
  it("reads the page first, then what the running reading had left, in page order", () => {
    const statuses = new Map<number, string | undefined>([
      [0, "done"],
      [1, "reading"],
      [2, "failed"],
      [3, "queued"],
      [4, "queued"],
      [5, "fromCache"],
    ]);
    expect(pagesForReRead(4, statuses)).toEqual([4, 1, 3]);
    expect(pagesForReRead(2, statuses)).toEqual([2, 1, 3, 4]);
    expect(pagesForReRead(0, new Map())).toEqual([0]);
  });
});
