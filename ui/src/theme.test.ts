// @vitest-environment happy-dom
import { describe, expect, it } from "vitest";
import { parseThemeChoice, resolveTheme, ThemeControl } from "./theme";

describe("theme", () => {
  it("follows the system unless light or dark was chosen", () => {
    expect(resolveTheme("system", true)).toBe("dark");
    expect(resolveTheme("system", false)).toBe("light");
    expect(resolveTheme("light", true)).toBe("light");
    expect(resolveTheme("dark", false)).toBe("dark");
  });

  it("reads back only a choice it could have stored", () => {
    expect(parseThemeChoice("dark")).toBe("dark");
    expect(parseThemeChoice("light")).toBe("light");
    for (const stored of [null, "", "Dark", "sepia"]) expect(parseThemeChoice(stored)).toBe("system");
  });

  it("applies the choice to the document and remembers it for the next start", () => {
    localStorage.clear();
    const root = document.createElement("div");
    const select = document.createElement("select");
    new ThemeControl(select, root);
    expect(select.value).toBe("system");
    select.value = "dark";
    select.dispatchEvent(new Event("change"));
    expect(root.dataset["theme"]).toBe("dark");

    // The next start: a new control over the same storage.
    const again = document.createElement("div");
    const next = document.createElement("select");
    new ThemeControl(next, again);
    expect([next.value, again.dataset["theme"]]).toEqual(["dark", "dark"]);
    next.value = "system";
    next.dispatchEvent(new Event("change"));
    expect(localStorage.getItem("deepread.theme")).toBeNull();
  });
});
