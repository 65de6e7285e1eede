// The reader's controls on a real PDF read by replayed DeepSeek-OCR output: the status bar's
// figures, Read / Stop, the engine status, a failed page retried, a page re-read past the cache.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fixtures, openApp, popplerPageCount, startDriver } from "./session.mjs";

const manual = path.join(fixtures, "grounding/with_source/xiongpu1_agent/vastera_manual");
const pdf = path.join(fixtures, "pdfs/non_english/docling__normal_4pages_korean.pdf");
const replayDir = mkdtempSync(path.join(tmpdir(), "deepread-controls-"));

/** The model's text inside a reference `infer` stdout capture: between the header and the stats. */
function capturedOutput(page) {
  const capture = readFileSync(path.join(manual, `page${String(page).padStart(3, "0")}.stdout.md`), "utf8");
  const header = "=====================\n";
  const start = capture.indexOf(header, capture.indexOf(header) + header.length) + header.length;
  return capture.slice(start, capture.indexOf("==================================================\nimage size"));
}

const record = (page, text) => writeFileSync(path.join(replayDir, `page${String(page).padStart(3, "0")}.md`), text);
const status = (page) => `document.querySelector('.thumbnail[data-page="${page}"]')?.dataset.status`;
const progress = `document.getElementById("status-progress").textContent`;

let driver;
let app;
before(async () => {
  // Pages 1 and 3 have recorded output; pages 2 and 4 have none yet, so they fail.
  record(1, capturedOutput(2));
  record(3, capturedOutput(3));
  driver = await startDriver({ DEEPREAD_REPLAY: replayDir });
  app = await openApp(driver, [pdf]);
});
after(async () => {
  await app?.close();
  driver?.close();
  rmSync(replayDir, { recursive: true, force: true });
});

test("while reading, the button says Stop and the status bar counts pages, tokens/s and failures", async () => {
  const total = popplerPageCount(pdf);
  const stop = await app.waitFor(
    "the Read button to say Stop while page 1 streams in",
    `const b = document.getElementById("read-button"); return b.textContent === "Stop" ? b.textContent : null;`,
  );
  assert.equal(stop, "Stop");
  await app.waitFor("page 3 to be read", `return ${status(2)} === "done";`);
  await app.waitFor("page 4 to fail", `return ${status(3)} === "failed";`);
  const line = await app.waitFor(
    "the reading to end",
    `return document.getElementById("read-button").textContent === "Read" && ${progress};`,
  );
  assert.match(line, new RegExp(`^2 of ${total} pages read`));
  assert.match(line, /2 failed/);
  assert.match(line, /0 from cache/);
  // The replay reports a token per four characters: a rate, whatever the machine's speed.
  const rate = Number(/([\d,]+) tokens\/s/.exec(line)?.[1].replace(",", ""));
  assert.ok(rate > 0, `a tokens/s figure in "${line}"`);

  const engine = await app.run(`const e = document.getElementById("engine-status");
    return { text: e.textContent, modes: document.getElementById("mode-select").disabled };`);
  assert.equal(engine.text, "recorded output");
  assert.equal(engine.modes, true, "recorded output has no reading modes to choose");
});

test("a failed page offers Retry, and once its output exists the retry reads it", async () => {
  await app.waitFor("page 2 to fail", `return ${status(1)} === "failed";`);
  const retry = `#markdown-pane [data-page="1"] .page-retry`;
  const shown = await app.run(`return getComputedStyle(document.querySelector('${retry}')).display;`);
  assert.notEqual(shown, "none", "the failed page shows its Retry button");
  const hiddenOnDone = await app.run(
    `return getComputedStyle(document.querySelector('#markdown-pane [data-page="0"] .page-retry')).display;`,
  );
  assert.equal(hiddenOnDone, "none", "a page read well has no Retry");

  record(2, capturedOutput(4));
  await app.clickOn(retry);
  await app.waitFor("page 2 to be read on retry", `return ${status(1)} === "done";`);
  // The manual's contents page: its sub-title, as the capture wrote it.
  const heading = /^## (.+)$/m.exec(capturedOutput(4))[1].trim();
  const shows = await app.waitFor(
    `page 2's Markdown to show "${heading}"`,
    `return document.querySelector('#markdown-pane [data-page="1"]').textContent.includes(${JSON.stringify(heading)});`,
  );
  assert.ok(shows);
  const line = await app.waitFor("the status bar to count it", `const t = ${progress}; return /^3 of/.test(t) ? t : null;`);
  assert.match(line, /1 failed/);
});

test("Re-read reads a page again past the cache; Read takes pages read before from the cache", async () => {
  const changed = "<|ref|>title<|/ref|><|det|>[[100, 50, 900, 120]]<|/det|>\n# Read a second time\n\n";
  record(1, changed);
  await app.clickOn(`#markdown-pane [data-page="0"] .page-reread`);
  const again = await app.waitFor(
    "page 1's new text",
    `return document.querySelector('#markdown-pane [data-page="0"]').textContent.includes("Read a second time");`,
  );
  assert.ok(again);
  await app.waitFor("the re-read to end", `return document.getElementById("read-button").textContent === "Read";`);

  await app.clickOn("#read-button");
  const line = await app.waitFor(
    "a reading answered by the cache",
    `const t = ${progress}; return /3 from cache/.test(t) && document.getElementById("read-button").textContent === "Read" ? t : null;`,
  );
  assert.match(line, /^3 of 4 pages read/);
  const title = await app.run(`return document.querySelector('#markdown-pane [data-page="0"]').textContent;`);
  assert.match(title, /Read a second time/, "the cache holds the re-read page, not the first reading");
});

/** What the system clipboard holds: pasted with a real Ctrl+V into a field made for the purpose. */
async function pasted() {
  await app.run(`
    const field = document.createElement("textarea");
    field.id = "paste-probe";
    document.body.append(field);
    field.focus();`);
  await app.pressCtrl("v");
  return app.run(`const field = document.getElementById("paste-probe"); const text = field.value; field.remove(); return text;`);
}

test("Copy puts a page's Markdown source on the clipboard, Ctrl+C a clicked block's", async () => {
  await app.waitFor("page 3 to be read", `return ["done", "fromCache"].includes(${status(2)});`);
  await app.clickOn(`#markdown-pane [data-page="2"] .page-copy`);
  await app.waitFor("the copy to be reported", `return /Copied the Markdown of page 3/.test(document.getElementById("status-message").textContent);`);
  const page = await pasted();
  // The reference's own page Markdown (result.mmd), less its figure links, which name its files.
  const reference = readFileSync(path.join(manual, "page003.result.mmd"), "utf8");
  const lines = reference.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("![]("));
  assert.ok(lines.length >= 2);
  for (const line of lines) assert.ok(page.includes(line), `the copied page lacks: ${line.slice(0, 60)}`);
  assert.doesNotMatch(page, /<\|ref\|>|<\|det\|>/, "grounding tags are not Markdown");

  // Page 2 is the manual's contents page: its first block is the sub-title "## Contents".
  const title = `#markdown-pane [data-page="1"] .markdown-block[data-block-id="0"]`;
  await app.clickOn(title);
  await app.pressCtrl("c");
  await app.waitFor("the block copy to be reported", `return /Copied the Markdown of block 1 of page 2/.test(document.getElementById("status-message").textContent);`);
  assert.equal(await pasted(), /^## .+$/m.exec(capturedOutput(4))[0].trim());
});

/** Blocks of the recorded pages whose text holds `needle`, ignoring case: counted from the captures. */
function blocksHolding(needle, pages) {
  return pages.flatMap(({ page, capture }) =>
    capture
      .split(/<\|ref\|>.*?<\|\/ref\|><\|det\|>.*?<\|\/det\|>/)
      .slice(1)
      .filter((text) => text.toLowerCase().includes(needle))
      .map(() => page),
  );
}

test("Ctrl+F lights the blocks holding the words and their boxes; Enter and Shift+Enter step; Esc closes", async () => {
  const needle = "ing";
  const expected = blocksHolding(needle, [
    { page: 1, capture: capturedOutput(4) },
    { page: 2, capture: capturedOutput(3) },
  ]);
  assert.ok(expected.length >= 2 && new Set(expected).size === 2, `matches on both pages: ${expected}`);
  await app.pressCtrl("f");
  await app.waitFor("the search field to have the focus", `return document.activeElement?.getAttribute("aria-label") === "Find in the document";`);
  await app.type(needle);
  const lit = await app.waitFor(
    "matching blocks to light",
    `const lit = [...document.querySelectorAll("#markdown-pane .search-match")];
     return lit.length > 0 ? lit.map((b) => Number(b.closest("[data-page]").dataset.page)) : null;`,
  );
  assert.deepEqual(lit, expected);
  assert.equal(await app.run(`return document.querySelector(".search-count").textContent;`), `${expected.length} matches`);

  await app.type("\uE007");
  const first = await app.waitFor(
    "the first match on its page",
    `const current = document.querySelector(".search-current");
     const image = document.querySelector(".page-image");
     return current && image ? { page: Number(current.closest("[data-page]").dataset.page), alt: image.alt,
       boxes: document.querySelectorAll(".grounding-box.matched").length,
       count: document.querySelector(".search-count").textContent } : null;`,
  );
  assert.equal(first.page, expected[0]);
  assert.match(first.alt, new RegExp(`page ${expected[0] + 1}$`));
  assert.ok(first.boxes > 0, "the match's boxes are lit on the page");
  assert.equal(first.count, `1 of ${expected.length}`);

  // Back from the first match wraps to the last.
  await app.pressShift("\uE007");
  const last = await app.run(`return { page: Number(document.querySelector(".search-current").closest("[data-page]").dataset.page),
    count: document.querySelector(".search-count").textContent };`);
  assert.deepEqual(last, { page: expected[expected.length - 1], count: `${expected.length} of ${expected.length}` });

  await app.type("\uE00C");
  const closed = await app.run(`return { bar: document.querySelector(".search-bar").hidden,
    lit: document.querySelectorAll(".search-match, .grounding-box.matched").length };`);
  assert.deepEqual(closed, { bar: true, lit: 0 });
});
