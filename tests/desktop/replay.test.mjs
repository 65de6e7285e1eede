// Real DeepSeek-OCR output, recorded for each page of a real manual, replayed through the app's own
// event path; and hostile model output, which must stay text.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
  await app.pressCtrl("e");
  const json = path.join(exportDir, "source.json");
  // The sidecar is written last, and atomically: once it is there, the export is complete.
  for (let waited = 0; !existsSync(json); waited += 200) {
    assert.ok(waited < 60_000, "the export did not finish within a minute");
    await sleep(200);
  }

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
