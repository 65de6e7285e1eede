// A card short of GPU memory, played by the replay recognizer (DEEPREAD_REPLAY_PAGES_AT_ONCE): the status
// bar says so once for the rest of the reading, and every page is still read.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { manual, recordManual } from "./manual.mjs";
import { openApp, popplerPageCount, startDriver } from "./session.mjs";

const PAGES_AT_ONCE = 3;
const NOTICE = `GPU memory is short: ${PAGES_AT_ONCE} pages at a time`;

const replayDir = mkdtempSync(path.join(tmpdir(), "deepread-memory-"));
const source = path.join(manual, "source.pdf");
/** The status bar as the test reads it: its progress line, how often the notice is anywhere in the bar,
 *  whether a reading is under way, and each page's status in the Markdown pane. */
const statusBar = `return {
  line: document.getElementById("status-progress").textContent,
  notices: document.getElementById("status-bar").textContent.split(${JSON.stringify(NOTICE)}).length - 1,
  reading: document.getElementById("read-button").textContent === "Stop",
  statuses: [...document.querySelectorAll("#markdown-pane .markdown-page")].map((s) => s.dataset.status),
};`;
const when = (condition) => `const bar = (() => { ${statusBar} })(); return ${condition} ? bar : null;`;

let driver;
let app;
before(async () => {
  recordManual(replayDir);
  // The default pace, about a token a millisecond: the manual takes seconds, time to see it mid-reading.
  driver = await startDriver({ DEEPREAD_REPLAY: replayDir, DEEPREAD_REPLAY_PAGES_AT_ONCE: String(PAGES_AT_ONCE) });
  app = await openApp(driver, [source]);
});
after(async () => {
  await app?.close();
  driver?.close();
  rmSync(replayDir, { recursive: true, force: true });
});

test("while GPU memory is short the status bar says so once, and every page is still read", async () => {
  const pages = popplerPageCount(source);
  const during = await app.waitFor(
    "the notice while the manual is read",
    when(`bar.reading && bar.line.includes(${JSON.stringify(NOTICE)})`),
  );
  assert.equal(during.notices, 1, `said once: "${during.line}"`);
  assert.ok(
    during.statuses.length < pages || during.statuses.some((s) => s !== "done"),
    `seen with pages still to read: "${during.line}"`,
  );

  const ended = await app.waitFor("the reading to end", when("!bar.reading"), 120_000);
  assert.match(ended.line, new RegExp(`^${pages} of ${pages} pages read`), "nothing lost");
  assert.doesNotMatch(ended.line, /failed|looped/);
  assert.deepEqual(ended.statuses, Array(pages).fill("done"), "every page of the PDF read");
  assert.ok(ended.line.endsWith(` · ${NOTICE}`), `still said once the reading is over: "${ended.line}"`);
  assert.equal(ended.notices, 1, `said once: "${ended.line}"`);
});

test("a reading the cache answers says nothing of GPU memory", async () => {
  const pages = popplerPageCount(source);
  await app.waitFor("the first reading to end", when(`!bar.reading && bar.line.startsWith("${pages} of")`), 120_000);
  const at = await app.run(`const r = document.getElementById("read-button").getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + r.height / 2 };`);
  await app.clickAt(at.x, at.y);
  const again = await app.waitFor(
    "a reading answered by the cache",
    when(`!bar.reading && bar.line.includes("${pages} from cache")`),
  );
  assert.match(again.line, new RegExp(`^${pages} of ${pages} pages read`));
  assert.equal(again.notices, 0, `no recognizer read, so no notice: "${again.line}"`);
});
