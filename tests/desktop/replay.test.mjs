// Real DeepSeek-OCR output, recorded for each page of a real manual, replayed through the app's own
// event path; and hostile model output, which must stay text.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { decodePng } from "./png.mjs";
import { capturedOutput, manual, recordManual } from "./manual.mjs";
import { openApp, popplerPageCount, popplerPageSize, repoRoot, startDriver } from "./session.mjs";

const replayDir = mkdtempSync(path.join(tmpdir(), "deepread-replay-"));
const exportDir = path.join(replayDir, "export");
const source = path.join(manual, "source.pdf");

/** The blocks a capture announces, in order: `{ label, boxes }` from its grounding tags. */
function capturedBlocks(capture) {
  const tag = /<\|ref\|>(.*?)<\|\/ref\|><\|det\|>(.*?)<\|\/det\|>/g;
  return [...capture.matchAll(tag)].map(([, label, det]) => ({ label, boxes: JSON.parse(det) }));
}

// The page's status as its Markdown section wears it: its thumbnail exists only while in view.
const pageDone = (page) => `return document.querySelector('#markdown-pane [data-page="${page}"]')?.dataset.status === "done";`;

/** One entry of a zip file (a .docx, an .epub), as Debian's unzip reads it: an independent reader. */
function zipEntry(file, entry) {
  const out = spawnSync("unzip", ["-p", file, entry], { encoding: "utf8" });
  assert.equal(out.status, 0, `unzip could not read ${entry} from ${file}: ${out.stderr}`);
  return out.stdout;
}

const FORMATS = ["md", "json", "html", "docx", "epub", "xlsx", "csv"];
const dialogOpen = `return document.getElementById("export-dialog").open;`;

/** Ctrl+E, and the Export dialog is up. */
async function openExportDialog() {
  await app.pressCtrl("e");
  await app.waitFor("the Export dialog to open", dialogOpen);
}

const checkedFormats = () =>
  app.run(`return ${JSON.stringify(FORMATS)}.filter((f) => document.getElementById("export-format-" + f).checked);`);

/** Clicks the format checkboxes, as a person does, until exactly `wanted` are checked. */
async function checkFormats(wanted) {
  const checked = await checkedFormats();
  for (const format of FORMATS) {
    if (checked.includes(format) !== wanted.includes(format)) await app.clickOn(`#export-format-${format}`);
  }
  assert.deepEqual(await checkedFormats(), wanted, "the checkboxes follow the clicks");
}

/** Confirms the dialog and waits for the export to be written, which closes it. */
async function confirmExport() {
  await app.clickOn("#export-confirm");
  await app.waitFor("the export to be written", `return !document.getElementById("export-dialog").open;`, 60_000);
}

/** The question about files already there, once the dialog asks it. */
const replaceQuestion = () =>
  app.waitFor(
    "the dialog to ask about the files already there",
    `const q = document.getElementById("export-existing");
     return q && !q.hidden && !document.getElementById("export-replace").hidden ? q.textContent : null;`,
    60_000,
  );

// One window for the file: the reading streams, then the same reading is exported.
let driver;
let app;
before(async () => {
  recordManual(path.join(replayDir, "manual"));
  driver = await startDriver({ DEEPREAD_REPLAY: path.join(replayDir, "manual"), DEEPREAD_EXPORT_DIR: exportDir });
  app = await openApp(driver, [source]);
});
after(async () => {
  await app?.close();
  driver?.close();
  rmSync(replayDir, { recursive: true, force: true });
});

test("the manual's recorded output streams in: every box of the capture is on the page, its text in the pane", async () => {
  await app.waitFor("page 1 to be read", pageDone(0));
  const capture = capturedOutput(path.join(manual, "page001.stdout.md"));
  const blocks = capture.split("<|det|>").length - 1;
  const shown = await app.run(
    `return new Set([...document.querySelectorAll(".grounding-box")].map((b) => b.dataset.blockId)).size;`,
  );
  assert.equal(shown, blocks, "one block of boxes per <|det|> in the capture");
  const heading = /^# (.+)$/m.exec(capture)[1].trim();
  const shows = await app.waitFor(
    `the pane to show "${heading}"`,
    `return document.querySelector('#markdown-pane [data-page="0"]').textContent.includes(${JSON.stringify(heading)});`,
  );
  assert.ok(shows);
  await app.waitFor("the later pages to stream in", pageDone(2));
  writeFileSync(path.join(repoRoot, "docs/screenshots/reading-replay.png"), await app.screenshot());
});

test("Ctrl+E exports the pages read so far: Markdown as the reference wrote it, figures that decode, a JSON sidecar", async () => {
  await app.waitFor("page 3 to be read", pageDone(2));
  await openExportDialog();
  assert.deepEqual(await checkedFormats(), ["md", "json"], "the dialog starts on what the Export button always wrote");
  await confirmExport();
  const json = path.join(exportDir, "source.json");
  assert.ok(existsSync(json), "the sidecar is written once the dialog closes");

  // The Markdown: one section per page of the PDF, the pages read as the reference's own .mmd files.
  const pages = popplerPageCount(source);
  const sections = readFileSync(path.join(exportDir, "source.md"), "utf8").split("\n\n<--- Page Split --->\n");
  assert.equal(sections.length, pages + 1, "every page followed by a page split");
  for (let page = 0; page < 3; page++) {
    const reference = readFileSync(path.join(manual, `page${String(page + 1).padStart(3, "0")}.result.mmd`), "utf8");
    const lines = reference.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("![]("));
    assert.ok(lines.length > 0);
    for (const line of lines) assert.ok(sections[page].includes(line), `page ${page + 1} lacks: ${line.slice(0, 60)}`);
  }

  // Every figure the Markdown links is a whole PNG; page 1's figure is the whole page.
  const links = sections.flatMap((section) => [...section.matchAll(/!\[[^\]]*\]\((images\/[^)]+)\)/g)].map((m) => m[1]));
  assert.ok(links.includes("images/0_0.png"), `page 1's figure is linked (links: ${links.join(", ")})`);
  for (const link of links) decodePng(path.join(exportDir, link));
  const figure = decodePng(path.join(exportDir, "images/0_0.png"));
  const size = popplerPageSize(source, 1);
  assert.ok(
    Math.abs(figure.width / figure.height - size.width / size.height) < 0.01,
    `a [0,0,999,999] crop is the page's shape: ${figure.width}x${figure.height} for ${size.width}x${size.height} pt`,
  );

  // The sidecar: every page, and page 1's blocks with the labels and boxes of the capture.
  const sidecar = JSON.parse(readFileSync(json, "utf8"));
  assert.equal(sidecar.format, "deepread-export");
  assert.equal(sidecar.pages.length, pages);
  assert.equal(sidecar.pages[0].status, "read");
  const expected = capturedBlocks(capturedOutput(path.join(manual, "page001.stdout.md")));
  assert.deepEqual(
    sidecar.pages[0].blocks.map((b) => ({ label: b.label, boxes: b.boxes.map((x) => [x.x1, x.y1, x.x2, x.y2]) })),
    expected,
  );
  assert.ok(sidecar.pages[0].blocks.every((b) => b.page === 0));
  assert.equal(sidecar.pages[0].blocks.find((b) => b.label === "image").figure, "images/0_0.png");
});

test("LaTeX the model wrote is typeset with KaTeX: page 5's temperatures", async () => {
  await app.waitFor("page 5 to be read", pageDone(4));
  const capture = capturedOutput(path.join(manual, "page005.stdout.md"));
  const spans = [...capture.matchAll(/\\\((.+?)\\\)/g)].map(([, tex]) => tex.trim());
  assert.ok(spans.length >= 2, `the capture has inline math: ${spans}`);
  const typeset = await app.run(`
    const section = document.querySelector('#markdown-pane [data-page="4"]');
    section.querySelector(".katex").scrollIntoView({ block: "center" });
    return {
      sources: [...section.querySelectorAll(".katex annotation")].map((a) => a.textContent),
      widths: [...section.querySelectorAll(".katex-html")].map((h) => h.getBoundingClientRect().width),
      raw: section.textContent.includes("\\\\("),
      errors: section.querySelectorAll(".katex-error").length,
    };`);
  assert.deepEqual(typeset.sources, spans, "every span typeset from its own source");
  assert.equal(typeset.errors, 0);
  assert.equal(typeset.raw, false, "no delimiter is left as text");
  assert.ok(typeset.widths.every((w) => w > 0), `drawn: ${typeset.widths}`);
  // KaTeX's own fonts, bundled with the app, load under the window's Content-Security-Policy.
  const fonts = await app.waitFor(
    "KaTeX's fonts to load",
    `return [...document.fonts].filter((f) => f.family.includes("KaTeX") && f.status === "loaded").map((f) => f.family);`,
  );
  assert.ok(fonts.some((f) => f.includes("KaTeX_Main")), `loaded: ${fonts}`);
});

test("an image block shows the part of the page its box covers: page 3's four photographs", async () => {
  await app.waitFor("page 3 to be read", pageDone(2));
  const images = capturedBlocks(capturedOutput(path.join(manual, "page003.stdout.md"))).filter((b) => b.label === "image");
  assert.equal(images.length, 4);
  const figures = await app.waitFor(
    "page 3's figures to load",
    `const imgs = [...document.querySelectorAll('#markdown-pane [data-page="2"] .page-figure img')];
     // Figures load when scrolled to: bring the next one still loading into view.
     imgs.find((i) => !i.complete || i.naturalWidth === 0)?.scrollIntoView({ block: "center" });
     return imgs.length === ${images.length} && imgs.every((i) => i.complete && i.naturalWidth > 0)
       ? imgs.map((i) => ({ width: i.naturalWidth, height: i.naturalHeight, block: Number(i.closest("[data-block-id]").dataset.blockId) }))
       : null;`,
  );
  // Each crop has the shape of its box on the page, as poppler measures the page.
  const page = popplerPageSize(source, 3);
  for (const [i, figure] of figures.entries()) {
    const [[x1, y1, x2, y2]] = images[i].boxes;
    const expected = ((x2 - x1) * page.width) / ((y2 - y1) * page.height);
    const ratio = figure.width / figure.height;
    assert.ok(Math.abs(ratio / expected - 1) < 0.02, `figure ${i + 1}: ${figure.width}x${figure.height}, box shape ${expected.toFixed(3)}`);
    assert.ok(figure.width >= 300, `figure ${i + 1} is sharp enough for the pane: ${figure.width} px`);
  }
  const labels = await app.run(
    `return [...document.querySelectorAll('#markdown-pane [data-page="2"] .page-figure')].map((f) => f.closest("[data-label]").dataset.label);`,
  );
  assert.deepEqual(labels, images.map(() => "image"));
});

test("the Export dialog writes Word and EPUB too, and asks before replacing them", async () => {
  await app.waitFor("page 3 to be read", pageDone(2));
  await openExportDialog();
  // Markdown and JSON are there from the export before: this one writes other files only.
  await checkFormats(["docx", "epub", "xlsx"]);
  assert.ok(await app.run(`return !document.getElementById("export-epub-chapters").closest("[hidden]");`), "EPUB's chapters are offered");
  await app.run(`const select = document.getElementById("export-epub-chapters");
    select.value = [...select.options].find((o) => o.textContent.includes("heading 1–2")).value;
    select.dispatchEvent(new Event("change", { bubbles: true }));`);
  // A WebDriver screenshot hangs while a modal dialog is open; the X server's own does not. It is taken
  // once the webview has drawn the menu's new value.
  await sleep(500);
  const shot = spawnSync("import", ["-display", driver.display, "-window", "root", path.join(repoRoot, "docs/screenshots/export-dialog.png")]);
  assert.equal(shot.status, 0, `import: ${shot.stderr}`);
  await confirmExport();

  // Word: page 1's heading, as the recorded output wrote it, is in the document's text.
  const captures = [1, 2, 3].map((page) => capturedOutput(path.join(manual, `page${String(page).padStart(3, "0")}.stdout.md`)));
  const heading = /^# (.+)$/m.exec(captures[0])[1].trim();
  const docx = path.join(exportDir, "source.docx");
  assert.ok(zipEntry(docx, "word/document.xml").includes(heading), `the Word document has "${heading}"`);

  // EPUB: a book by its first entry, cut at each heading of level 1 or 2 of the pages read.
  const epub = path.join(exportDir, "source.epub");
  assert.equal(zipEntry(epub, "mimetype"), "application/epub+zip");
  const opf = /full-path="([^"]+)"/.exec(zipEntry(epub, "META-INF/container.xml"))[1];
  const spine = zipEntry(epub, opf).match(/<itemref\b/g) ?? [];
  const headings = captures.join("\n").match(/^#{1,2} /gm).length;
  assert.ok(spine.length >= headings, `${spine.length} chapters for the ${headings} headings of pages 1-3`);

  // The recorded manual has no table: no workbook (an empty one is of no use), and the status bar says why.
  assert.ok(captures.every((c) => !c.includes("<table")), "the manual's pages 1-3 have no table");
  assert.ok(!existsSync(path.join(exportDir, "source.xlsx")));
  const status = await app.run(`return document.getElementById("status-message").textContent;`);
  assert.match(status, /no tables were read, so there is no Excel workbook/i);

  // Again: the dialog names the files already there; Cancel leaves them as they are.
  const written = ["source.docx", "source.epub"].map((name) => path.join(exportDir, name));
  const mtimes = () => written.map((file) => statSync(file).mtimeMs);
  const before = mtimes();
  await openExportDialog();
  assert.deepEqual(await checkedFormats(), ["docx", "epub", "xlsx"], "the dialog remembers the last choice");
  await app.clickOn("#export-confirm");
  const question = await replaceQuestion();
  assert.match(question, /^2 files already there/);
  for (const file of written) assert.ok(question.includes(path.basename(file)), question);
  assert.ok(!question.includes("source.md"), `the Markdown was not chosen: ${question}`);
  await app.clickOn("#export-cancel");
  await app.waitFor("the dialog to close", `return !document.getElementById("export-dialog").open;`);
  await sleep(500);
  assert.deepEqual(mtimes(), before, "Cancel writes nothing");

  // Replace writes them again, into the folder of the question.
  await openExportDialog();
  await app.clickOn("#export-confirm");
  await replaceQuestion();
  await app.clickOn("#export-replace");
  await app.waitFor("the export to be written", `return !document.getElementById("export-dialog").open;`, 60_000);
  const after = mtimes();
  for (const [i, file] of written.entries()) assert.ok(after[i] > before[i], `${path.basename(file)} was written again`);
  assert.equal(zipEntry(epub, "mimetype"), "application/epub+zip");
});
