import { describe, expect, it } from "vitest";
import { pageSource } from "./clipboard";

describe("pageSource", () => {
  it("is the page's final Markdown once it is read, without the reference's leading newline", () => {
    expect(pageSource("\n# Title\n\nText.\n", [{ markdown: "other" }])).toBe("# Title\n\nText.");
  });

  it("is the blocks so far, a blank line apart, while the page is read", () => {
    expect(pageSource(undefined, [{ markdown: "# Title\n" }, { markdown: "" }, { markdown: "Half a sent" }])).toBe(
      "# Title\n\nHalf a sent",
    );
  });
});
