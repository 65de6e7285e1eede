// Every script the model writes is drawn with real glyphs in the Markdown pane: real DeepSeek-OCR output in
// Chinese, and Japanese, Korean and Arabic text from the fixtures' ground truths, replayed into the window.
// A machine without fonts for a script draws its characters as .notdef boxes; scripts/install-system-deps.sh
// brings them (Noto CJK, Noto core).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fixtures, openApp, popplerPageCount, repoRoot, startDriver } from "./session.mjs";

const source = path.join(fixtures, "pdfs/non_english/cloudman6__chinese_medical_report.pdf");
const webui = path.join(fixtures, "grounding/output_only/cloudman6_webui");

/** The model's own output for a Chinese page (cloudman6's web UI captures of DeepSeek-OCR). */
const chinese = (name) => JSON.parse(readFileSync(path.join(webui, `${name}.json`), "utf8")).raw_text;

/** A ground truth's first lines as one text block in the model's grounding format. */
function block(relative, lines) {
  const text = readFileSync(path.join(fixtures, relative), "utf8")
    .split("\n")
    .map((line) => line.replace(/^[#>*\-\s]+/, "").trim())
    .filter((line) => line && !line.startsWith("<!--") && !/^[-|: ]+$/.test(line))
    .slice(0, lines)
    .join("\n");
  return `<|ref|>text<|/ref|><|det|>[[80, 100, 900, 400]]<|/det|>\n${text}\n\n`;
}

/** What each page of the replay holds, and the characters of the script it must draw. */
const pages = [
  { script: "Chinese", output: chinese("sample2"), letters: /[\u4e00-\u9fff]/gu },
  { script: "Chinese", output: chinese("sample5"), letters: /[\u4e00-\u9fff]/gu },
  {
    script: "Japanese",
    output: block("pdfs/forms_invoices/groundtruth/zerox__0017_japanese_quotation.md", 12),
    letters: /[\u3040-\u30ff\u4e00-\u9fff]/gu,
  },
  {
    script: "Korean",
    output: block("pdfs/non_english/groundtruth/docling__normal_4pages_korean.md", 8),
    letters: /[\uac00-\ud7af]/gu,
  },
  {
    script: "Arabic",
    output: block("pdfs/non_english/groundtruth/docling__right_to_left_01_arabic.md", 6),
    letters: /[\u0600-\u06ff]/gu,
  },
];

/** In the webview: for each distinct letter of `letters` in page `page`'s Markdown section, whether the
 *  section's own font draws it as something other than the .notdef box two unassigned code points get.
 *  Also whether those two draw alike, which the comparison rests on. */
const glyphCheck = (page, letters) => `
  const section = document.querySelector('#markdown-pane [data-page="${page}"]');
  const text = section.textContent;
  const font = getComputedStyle(section.querySelector("p, h1, h2, td, li") ?? section).font;
  const canvas = document.createElement("canvas");
  canvas.width = 96; canvas.height = 96;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const draw = (ch) => {
    ctx.clearRect(0, 0, 96, 96);
    ctx.font = font.replace(/\\d+(\\.\\d+)?px/, "48px");
    ctx.fillStyle = "#000";
    ctx.fillText(ch, 8, 64);
    return ctx.getImageData(0, 0, 96, 96).data.join(",");
  };
  const box = draw("\\u{0378}");
  const boxesAlike = box === draw("\\u{0379}");
  const unique = [...new Set(text.match(${letters}) ?? [])];
  const missing = unique.filter((ch) => draw(ch) === box);
  return { boxesAlike, letters: unique.length, missing: missing.slice(0, 20) };
`;

let replayDir;
let driver;
let app;
before(async () => {
  replayDir = mkdtempSync(path.join(tmpdir(), "deepread-scripts-"));
  assert.equal(popplerPageCount(source), pages.length + 1, "the source has a page for each script and one more");
  pages.forEach(({ output }, i) => writeFileSync(path.join(replayDir, `page${String(i + 1).padStart(3, "0")}.md`), output));
  writeFileSync(path.join(replayDir, `page${String(pages.length + 1).padStart(3, "0")}.md`), chinese("sample4"));
  driver = await startDriver({ DEEPREAD_REPLAY: replayDir, DEEPREAD_REPLAY_PAUSE_MS: "0" });
  app = await openApp(driver, [source]);
});
after(async () => {
  await app?.close();
  driver?.close();
  rmSync(replayDir, { recursive: true, force: true });
});

test("Chinese, Japanese, Korean and Arabic Markdown is drawn with real glyphs, not .notdef boxes", async () => {
  const last = pages.length;
  await app.waitFor(
    "every page to be read",
    `return document.querySelector('#markdown-pane [data-page="${last}"]')?.dataset.status === "done";`,
    60_000,
  );
  for (const [page, { script, letters }] of pages.entries()) {
    await app.run(`document.querySelector('#markdown-pane [data-page="${page}"]').scrollIntoView();`);
    const seen = await app.run(glyphCheck(page, letters));
    assert.ok(seen.boxesAlike, "two unassigned code points draw the same box: the comparison can tell a box");
    assert.ok(seen.letters >= 10, `page ${page + 1} shows ${script} text (${seen.letters} distinct letters)`);
    assert.deepEqual(seen.missing, [], `${script} letters drawn as boxes on page ${page + 1}`);
  }
  // The pane alone for the README: the recorded pages are not this PDF's, so their boxes do not fit it.
  await app.run(`document.querySelector('#markdown-pane [data-page="0"]').scrollIntoView();`);
  writeFileSync(path.join(repoRoot, "docs/screenshots/chinese-markdown.png"), await app.elementScreenshot("#markdown-pane"));
});
