import { describe, expect, it } from "vitest";
import { describeMatches, stepMatch } from "./matches";

describe("stepMatch", () => {
  it("goes forward from the first and wraps past the last", () => {
    expect(stepMatch(null, 3, 1)).toBe(0);
    expect(stepMatch(0, 3, 1)).toBe(1);
    expect(stepMatch(2, 3, 1)).toBe(0);
  });

  it("goes back from the last and wraps before the first", () => {
    expect(stepMatch(null, 3, -1)).toBe(2);
    expect(stepMatch(0, 3, -1)).toBe(2);
    expect(stepMatch(2, 3, -1)).toBe(1);
  });

  it("has nowhere to go without matches", () => {
    expect(stepMatch(null, 0, 1)).toBeNull();
    expect(stepMatch(null, 0, -1)).toBeNull();
  });
});

describe("describeMatches", () => {
  it("counts matches, then says which one is shown", () => {
    expect(describeMatches(null, 0, "zebra")).toBe("no matches");
    expect(describeMatches(null, 1, "a")).toBe("1 match");
    expect(describeMatches(null, 12, "a")).toBe("12 matches");
    expect(describeMatches(2, 12, "a")).toBe("3 of 12");
    expect(describeMatches(null, 0, "  ")).toBe("");
  });
});
