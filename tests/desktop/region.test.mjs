// Region re-read in the real window: a rectangle dragged on the page is read again (here by the text layer,
// as on a computer without the model), its words held against poppler's own word boxes for the same
// rectangle; the result is added as a block with that box, kept across a restart, or replaces a block.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fixtures, openApp, repoRoot, startDriver } from "./session.mjs";

const pdf = path.join(fixtures, "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
const section = `#markdown-pane [data-page="0"]`;
/** The abstract's paragraphs, in the model's normalised page coordinates (0..=999). */
const ABSTRACT = { x1: 80, y1: 360, x2: 490, y2: 700 };
/** The title, two lines across the page. */
const TITLE = { x1: 100, y1: 90, x2: 900, y2: 150 };

/** Page 1's words whose middle lies in `region`, by poppler's `pdftotext -bbox`. */
function popplerWordsIn(region) {
  const out = spawnSync("pdftotext", ["-f", "1", "-l", "1", "-bbox", pdf, "-"], { encoding: "utf8" });
  assert.equal(out.status, 0, out.stderr);
  const page = /<page width="([\d.]+)" height="([\d.]+)"/.exec(out.stdout);
  const [width, height] = [Number(page[1]), Number(page[2])];
  const words = [...out.stdout.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)<\/word>/g)];
  return words
    .filter(([, x1, y1, x2, y2]) => {
      const x = ((Number(x1) + Number(x2)) / 2 / width) * 999;
      const y = ((Number(y1) + Number(y2)) / 2 / height) * 999;
      return x >= region.x1 && x <= region.x2 && y >= region.y1 && y <= region.y2;
    })
    .map(([, , , , , word]) => word.replaceAll("&amp;", "&"));
}

const wordsOf = (markdown) =>
  markdown
    .split(/\s+/)
    .map((w) => w.replace(/^[#*_`]+|[#*_`]+$/g, ""))
    .filter((w) => w !== "" && w !== "-");

const shareFound = (words, among) => words.filter((w) => among.includes(w)).length / Math.max(1, words.length);

/** Drags a rectangle over `region` of the page shown, with the Region tool on. */
async function dragRegion(region) {
  await app.clickOn("#region-button");
  const rect = await app.run(`const r = document.querySelector("#page-pane .page-image").getBoundingClientRect();
    return { left: r.left, top: r.top, width: r.width, height: r.height };`);
  const at = (x, y) => ({ x: rect.left + (x / 999) * rect.width, y: rect.top + (y / 999) * rect.height });
  await app.drag(at(region.x1, region.y1), at(region.x2, region.y2));
}

/** Waits for the region panel to show what was read; its text. */
const regionRead = () =>
  app.waitFor(
    "the region to be read",
    `const panel = document.getElementById("region-panel");
     return panel && panel.dataset.state === "read" ? document.getElementById("region-text").value : null;`,
    30_000,
  );

const pageRead = () =>
  app.waitFor(
    "page 1 to be read",
    `const s = document.querySelector('${section}')?.dataset.status; return s === "done" || s === "fromCache";`,
    60_000,
  );

let driver;
let app;
before(async () => {
  driver = await startDriver();
  app = await openApp(driver, [pdf]);
  await app.waitFor("the page image", `return document.querySelector("#page-pane .page-image")?.complete === true;`);
});
after(async () => {
  await app?.close();
  driver?.close();
});

test("a rectangle dragged on the page is read again: the words under it, added as a block that stays", async () => {
  await pageRead();
  await dragRegion(ABSTRACT);
  const read = wordsOf(await regionRead());
  const poppler = popplerWordsIn(ABSTRACT);
  assert.ok(poppler.length > 150, `the region holds the abstract: ${poppler.length} words`);
  const [recall, precision] = [shareFound(poppler, read), shareFound(read, poppler)];
  assert.ok(recall > 0.9 && precision > 0.9, `poppler's words found ${recall}, ours in poppler's ${precision}`);
  assert.ok(!read.includes("Specialization"), "the title is outside the rectangle");
  await app.run(`document.getElementById("region-panel").scrollIntoView({ block: "end" });`);
  writeFileSync(path.join(repoRoot, "docs/screenshots/region-read.png"), await app.screenshot());

  await app.clickOn("#region-add");
  const added = await app.waitFor(
    "the block added",
    `const b = document.querySelector('${section} [data-added="true"]'); return b?.textContent.trim() ? b.textContent : null;`,
  );
  assert.ok(wordsOf(added).length > 150, "the added block holds the region's text");
  assert.equal(await app.run(`return document.getElementById("region-panel")?.hidden !== false;`), true, "the panel is gone");

  await app.close();
  app = await openApp(driver, [pdf]);
  await pageRead();
  const kept = await app.waitFor(
    "the added block after a restart",
    `const b = document.querySelector('${section} [data-added="true"]'); return b?.textContent.trim() ? b.textContent : null;`,
  );
  assert.equal(kept, added);
});

test("a rectangle over a block can replace it, with the text edited first", async () => {
  await app.waitFor("the page image", `return document.querySelector("#page-pane .page-image")?.complete === true;`);
  await dragRegion(TITLE);
  const read = await regionRead();
  assert.match(read, /Trace-based Just-in-Time Type Specialization/);
  const replace = await app.run(`const b = document.getElementById("region-replace"); return b && !b.hidden ? b.textContent : null;`);
  assert.match(replace ?? "", /Replace block 1\b/, "the title is the first block");
  await app.run(`const t = document.getElementById("region-text"); t.value = "# Trace-based JIT Type Specialization"; t.dispatchEvent(new Event("input"));`);
  await app.clickOn("#region-replace");
  // Marked at once, its new text rendered a moment later.
  const title = await app.waitFor(
    "the title replaced",
    `const b = document.querySelector('${section} [data-block-id="0"][data-corrected="true"]');
     return b && b.textContent.includes("JIT") ? b.textContent : null;`,
  );
  assert.match(title, /^\s*Trace-based JIT Type Specialization\s*$/);
});
