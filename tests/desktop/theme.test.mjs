// Dark mode: chosen in the top bar, remembered across a restart, the page image left as it is.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fixtures, openApp, repoRoot, startDriver } from "./session.mjs";

const pdf = path.join(fixtures, "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");

/** The window's colours: relative luminance (0 black .. 1 white) of the background and the text. */
const colours = `
  const luminance = (css) => {
    const [r, g, b] = css.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map((v) => Number(v) / 255)
      .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const body = getComputedStyle(document.body);
  const pane = getComputedStyle(document.getElementById("markdown-pane"));
  const image = document.querySelector(".page-image");
  return {
    theme: document.documentElement.dataset.theme,
    choice: document.getElementById("theme-select").value,
    background: luminance(body.backgroundColor),
    pane: luminance(pane.backgroundColor),
    text: luminance(body.color),
    imageFilter: image ? getComputedStyle(image).filter : null,
  };`;

let driver;
before(async () => {
  driver = await startDriver();
});
after(() => driver?.close());

test("Dark in the top bar darkens the window but not the page, and holds after a restart", async () => {
  const app = await openApp(driver, [pdf]);
  try {
    await app.waitFor("page 1's Markdown", `return document.querySelectorAll('#markdown-pane [data-page="0"] .markdown-block').length > 0;`);
    const before = await app.run(colours);
    assert.equal(before.choice, "system", "nothing chosen yet: the system's theme");
    await app.run(`const s = document.getElementById("theme-select"); s.value = "dark"; s.dispatchEvent(new Event("change"));`);
    const dark = await app.run(colours);
    assert.equal(dark.theme, "dark");
    assert.ok(dark.background < 0.05 && dark.pane < 0.05, `dark backgrounds: ${JSON.stringify(dark)}`);
    assert.ok(dark.text > 0.6, `light text: ${dark.text}`);
    assert.equal(dark.imageFilter, "none", "the page image is shown as it is");
    await app.waitFor(
      "the page image",
      `const i = document.querySelector(".page-image"); return i && i.complete && i.naturalWidth > 0;`,
    );
    writeFileSync(path.join(repoRoot, "docs/screenshots/dark-mode.png"), await app.screenshot());
  } finally {
    await app.close();
  }

  const again = await openApp(driver, []);
  try {
    const remembered = await again.waitFor("the theme", `const c = (() => {${colours}})(); return c.theme ? c : null;`);
    assert.equal(remembered.choice, "dark");
    assert.equal(remembered.theme, "dark");
    assert.ok(remembered.background < 0.05);
    await again.run(`const s = document.getElementById("theme-select"); s.value = "light"; s.dispatchEvent(new Event("change"));`);
    const light = await again.run(colours);
    assert.equal(light.theme, "light");
    assert.ok(light.background > 0.8 && light.text < 0.05, `light window: ${JSON.stringify(light)}`);
  } finally {
    await again.close();
  }
});
