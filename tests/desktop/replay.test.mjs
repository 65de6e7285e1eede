// Real DeepSeek-OCR output, recorded for each page of a real manual, replayed through the app's own
// event path; and hostile model output, which must stay text.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fixtures, openApp, repoRoot, startDriver } from "./session.mjs";

const manual = path.join(fixtures, "grounding/with_source/xiongpu1_agent/vastera_manual");
const replayDir = mkdtempSync(path.join(tmpdir(), "deepread-replay-"));

/** The model's text inside a reference `infer` stdout capture: between the header and the stats. */
function capturedOutput(file) {
  const capture = readFileSync(file, "utf8");
  const header = "=====================\n";
  const start = capture.indexOf(header, capture.indexOf(header) + header.length) + header.length;
  const end = capture.indexOf("==================================================\nimage size");
  return capture.slice(start, end);
}

function recordManual(dir) {
  mkdirSync(dir, { recursive: true });
  for (let page = 1; page <= 25; page++) {
    const name = `page${String(page).padStart(3, "0")}`;
    writeFileSync(path.join(dir, `${name}.md`), capturedOutput(path.join(manual, `${name}.stdout.md`)));
  }
}

let driver;
before(async () => {
  recordManual(path.join(replayDir, "manual"));
  driver = await startDriver({ DEEPREAD_REPLAY: path.join(replayDir, "manual") });
});
after(() => {
  driver?.close();
  rmSync(replayDir, { recursive: true, force: true });
});

test("the manual's recorded output streams in: every box of the capture is on the page, its text in the pane", async () => {
  const app = await openApp(driver, [path.join(manual, "source.pdf")]);
  try {
    await app.waitFor(
      "page 1 to be read",
      `return document.querySelector('.thumbnail[data-page="0"]')?.dataset.status === "done";`,
    );
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
    await app.waitFor(
      "the later pages to stream in",
      `return document.querySelector('.thumbnail[data-page="2"]')?.dataset.status === "done";`,
    );
    writeFileSync(path.join(repoRoot, "docs/screenshots/reading-replay.png"), await app.screenshot());
  } finally {
    await app.close();
  }
});
