// A person corrects what the model wrote: a block edited in the Markdown pane is marked, kept in the real
// cache file across a restart, written by Export, and when a re-read of the page writes something else there,
// the person keeps their text or takes the new reading. The manual's recorded output stands in for the model;
// the test rewrites a page's recording between readings, as a second reading of a real model may differ.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { manual, recordManual } from "./manual.mjs";
import { openApp, repoRoot, startDriver } from "./session.mjs";

const scratch = mkdtempSync(path.join(tmpdir(), "deepread-corrections-"));
const replayDir = path.join(scratch, "replay");
const exportDir = path.join(scratch, "export");
const source = path.join(manual, "source.pdf");

// Page 2's last paragraph, as the model wrote it (a stray space in "well- being"), and as a person fixes it.
const PAGE = 1;
const RECORDING = path.join(replayDir, "page002.md");
const AS_READ = "Embrace the chill and unlock a new realm of well- being today.";
const FIXED = "Embrace the chill and unlock a new realm of well-being today.";

const CTRL_ENTER = "\uE007";
const section = `#markdown-pane [data-page="${PAGE}"]`;

/** Script: the block of page 2 whose text holds `text`, as `{ id, corrected, text }`; null when there is none. */
const blockWith = (text) => `
  const block = [...document.querySelectorAll('${section} .markdown-block')]
    .find((b) => !b.hidden && b.textContent.includes(${JSON.stringify(text)}));
  return block ? { id: block.dataset.blockId, corrected: block.dataset.corrected === "true", text: block.textContent } : null;`;

/** Waits for page 2 to show a block holding `text`, marked as corrected or not (either, when `corrected` is
 * undefined). A page's status turns "done" before its blocks' HTML lands (rendering is asynchronous), so a test
 * waits for the text rather than reading it once. */
const waitForBlock = (what, text, corrected) =>
  app.waitFor(
    what,
    `const found = (() => { ${blockWith(text)} })();
     return found && (${corrected === undefined} || found.corrected === ${corrected}) ? found : null;`,
  );

const pageRead = () =>
  app.waitFor(
    "page 2 to be read",
    `const s = document.querySelector('${section}')?.dataset.status; return s === "done" || s === "fromCache";`,
    60_000,
  );

/** Rewrites page 2's recording: what the next reading of it writes. */
function recordPage2(replace, by) {
  const recorded = readFileSync(RECORDING, "utf8");
  assert.ok(recorded.includes(replace), `page 2's recording holds "${replace}"`);
  writeFileSync(RECORDING, recorded.replace(replace, by));
}

async function reReadPage2() {
  await app.clickOn(`${section} .page-reread`);
  await app.waitFor("the re-read to end", `return document.getElementById("read-button").textContent === "Read";`, 60_000);
  await pageRead();
}

/** A screenshot for docs/screenshots: the block `selector` finds clicked (so that the page view shows its box),
 * and what `inView` finds (default: the block) in the middle of the pane. */
async function screenshot(selector, name, inView = selector) {
  await app.clickOn(selector);
  await app.run(`document.querySelector(${JSON.stringify(inView)}).scrollIntoView({ block: "center" });`);
  await sleep(300);
  writeFileSync(path.join(repoRoot, "docs/screenshots", name), await app.screenshot());
}

let driver;
let app;
before(async () => {
  recordManual(replayDir);
  driver = await startDriver({ DEEPREAD_REPLAY: replayDir, DEEPREAD_REPLAY_PAUSE_MS: "0", DEEPREAD_EXPORT_DIR: exportDir });
  app = await openApp(driver, [source]);
});
after(async () => {
  await app?.close();
  driver?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Double-clicks the block holding `text`, replaces its Markdown with `markdown` as a person types, and saves
 * with Ctrl+Enter; with `shot`, the window is saved under that name in docs/screenshots before saving. */
async function correctBlock(text, markdown, shot) {
  const block = await waitForBlock(`page 2 to show "${text}"`, text);
  await app.doubleClickOn(`${section} .markdown-block[data-block-id="${block.id}"]`);
  const editing = await app.waitFor(
    "the editor to open, focused",
    `const t = document.querySelector('${section} .block-editor textarea');
     return t && document.activeElement === t ? t.value : null;`,
  );
  await app.pressCtrl("a");
  await app.type(markdown);
  if (shot) writeFileSync(path.join(repoRoot, "docs/screenshots", shot), await app.screenshot());
  await app.pressCtrl(CTRL_ENTER);
  await app.waitFor("the editor to close", `return !document.querySelector('${section} .block-editor');`);
  return editing;
}

test("a block edited in the pane is marked, exported as corrected, and kept across a restart", async () => {
  await pageRead();
  const read = await waitForBlock("the model's paragraph, not marked", AS_READ, false);

  const editing = await correctBlock(AS_READ, FIXED, "correction-editor.png");
  assert.equal(editing.trim(), AS_READ, "the editor starts from the block's Markdown");
  const corrected = await waitForBlock("the block to show the correction, marked", FIXED, true);
  assert.equal(corrected.id, read.id, "the same block");
  assert.equal(await app.run(blockWith(AS_READ)), null, "the model's text is not shown beside it");
  await screenshot(`${section} [data-corrected="true"]`, "correction.png");

  // Every page read, then Export: the Markdown file has the person's text where the model's was.
  await app.waitFor(
    "every page to be read",
    `return document.querySelectorAll('#markdown-pane [data-page][data-status="done"]').length === 25;`,
    60_000,
  );
  await app.pressCtrl("e");
  await app.waitFor("the Export dialog to open", `return document.getElementById("export-dialog").open;`);
  await app.clickOn("#export-confirm");
  await app.waitFor("the export to be written", `return !document.getElementById("export-dialog").open;`, 60_000);
  const exported = readFileSync(path.join(exportDir, "source.md"), "utf8");
  assert.ok(exported.includes(FIXED), "the export has the correction");
  assert.ok(!exported.includes(AS_READ), "and not the model's text there");
  assert.ok(exported.includes("Embrace the Revitalizing Chill"), "the rest of the page as read");

  // A restart: the page comes from the cache, still corrected.
  await app.close();
  app = await openApp(driver, [source]);
  await pageRead();
  await waitForBlock("the correction after a restart", FIXED, true);
});

test("a re-read that writes something else there asks, and keeps the person's text or the new reading", async () => {
  const REREAD = "Embrace the chill: a new realm of well-being awaits.";
  recordPage2(AS_READ, REREAD);
  await reReadPage2();
  const prompt = await app.waitFor(
    "the question about the correction",
    `const p = document.querySelector('${section} .correction-prompt'); return p ? p.textContent : null;`,
  );
  assert.ok(prompt.includes(FIXED), `the prompt shows the person's text: ${prompt}`);
  await waitForBlock("the new reading shown meanwhile", REREAD, false);
  await screenshot(`${section} .correction-prompt + .markdown-block`, "correction-differs.png", `${section} .correction-prompt`);

  await app.clickOn(`${section} .correction-keep`);
  await waitForBlock("the person's text kept over the new reading", FIXED, true);
  assert.equal(await app.run(`return document.querySelectorAll('${section} .correction-prompt').length;`), 0);

  // Read again, differently still, and this time the person takes the new reading.
  const THIRD = "Embrace the chill today.";
  recordPage2(REREAD, THIRD);
  await reReadPage2();
  await app.waitFor("the question again", `return !!document.querySelector('${section} .correction-prompt');`);
  await app.clickOn(`${section} .correction-drop`);
  await waitForBlock("the new reading, unmarked", THIRD, false);
  assert.equal(await app.run(`return document.querySelectorAll('${section} .correction-prompt').length;`), 0);

  // Dropped for good: a restart shows the reading, and asks nothing.
  await app.close();
  app = await openApp(driver, [source]);
  await pageRead();
  await waitForBlock("the reading after a restart", THIRD, false);
  assert.equal(await app.run(`return document.querySelectorAll('${section} .correction-prompt, [data-corrected="true"]').length;`), 0);
});

test("Use the reading's text in the editor drops a correction", async () => {
  await correctBlock("Embrace the chill today.", "Embrace the cold today.");
  const block = await waitForBlock("the correction", "Embrace the cold today.", true);
  await app.doubleClickOn(`${section} .markdown-block[data-block-id="${block.id}"]`);
  await app.clickOn(`${section} .block-editor-revert`);
  await waitForBlock("the reading's text back", "Embrace the chill today.", false);
});
