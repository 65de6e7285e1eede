// Files dropped on the window as a person drops them: a real drag from another X client (a small GTK
// drag source offering text/uri-list, as file managers do), moved by the X pointer (xdotool) onto the window
// and released there, so the drop goes through XDND, GTK and the webview as it does on a desktop.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fixtures, openApp, popplerPageCount, startDriver } from "./session.mjs";

const dragSource = path.join(import.meta.dirname, "drag-source.py");
const paper = path.join(fixtures, "pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf");
const handbook = path.join(fixtures, "pdfs/multi_column_layout/docling__amt_handbook_sample.pdf");
const korean = path.join(fixtures, "pdfs/non_english/docling__normal_4pages_korean.pdf");
// Where the source's window sits (over the status bar's right end) and where the drop lands (the page).
const SOURCE = { x: 1180, y: 790 };
const TARGET = { x: 600, y: 450 };

let scratch;
let driver;
let app;
before(async () => {
  scratch = mkdtempSync(path.join(tmpdir(), "deepread-drop-"));
  driver = await startDriver();
  app = await openApp(driver, []);
  await app.waitFor("the window to be ready", `return document.readyState === "complete";`);
});
after(async () => {
  await app?.close();
  driver?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Runs an X client on the test's display. */
function onDisplay(command, args) {
  const run = spawnSync(command, args, { env: { ...process.env, DISPLAY: driver.display }, encoding: "utf8" });
  assert.equal(run.status, 0, `${command} ${args.join(" ")}: ${run.stderr}`);
}

/** Drags `files` from a drag source in another X client onto the window and lets go. */
async function drop(files) {
  const source = spawn("/usr/bin/python3", [dragSource, String(SOURCE.x), String(SOURCE.y), ...files], {
    env: { ...process.env, DISPLAY: driver.display },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let said = "";
  source.stdout.on("data", (chunk) => (said += chunk));
  try {
    for (let waited = 0; !said.includes("ready"); waited += 50) {
      assert.ok(waited < 10_000, "the drag source did not come up");
      await sleep(50);
    }
    onDisplay("xdotool", ["mousemove", String(SOURCE.x + 40), String(SOURCE.y + 30), "mousedown", "1"]);
    // A drag starts past GTK's threshold and needs motion over the target for XDND to find it.
    for (let step = 1; step <= 12; step++) {
      const x = SOURCE.x + 40 + ((TARGET.x - SOURCE.x - 40) * step) / 12;
      const y = SOURCE.y + 30 + ((TARGET.y - SOURCE.y - 30) * step) / 12;
      onDisplay("xdotool", ["mousemove", String(Math.round(x)), String(Math.round(y))]);
      await sleep(40);
    }
    await sleep(200);
    onDisplay("xdotool", ["mouseup", "1"]);
    for (let waited = 0; !said.includes("dropped"); waited += 50) {
      assert.ok(waited < 10_000, "the drag did not end");
      await sleep(50);
    }
  } finally {
    source.kill("SIGTERM");
  }
}

/** The paths the window has opened, in order (its own User Timing marks), and what it shows. */
const opened = `return {
  paths: performance.getEntriesByName("deepread:opened").map((m) => m.detail),
  title: document.getElementById("document-title").textContent,
  error: document.querySelector("#page-pane .error")?.textContent ?? "",
  progress: document.getElementById("status-progress").textContent,
};`;
/** Once the shown document's reading says all `pages` are read. */
const readAll = (pages) =>
  `const seen = (() => { ${opened} })(); return seen.progress.startsWith("${pages} of ${pages} page") ? seen : null;`;
const openedCount = (n) => `const seen = (() => { ${opened} })(); return seen.paths.length >= ${n} ? seen : null;`;

test("a PDF dropped from another application opens: its pages, its title", async () => {
  await drop([paper]);
  const seen = await app.waitFor("the dropped PDF to open", openedCount(1));
  assert.deepEqual(seen.paths, [paper]);
  const pages = popplerPageCount(paper);
  const read = await app.waitFor("it to be read", readAll(pages));
  assert.ok(read.title.length > 0, "a title in the top bar");
});

test("several PDFs dropped at once all open, the last one shown", async () => {
  const before = (await app.run(opened)).paths.length;
  await drop([handbook, korean]);
  const seen = await app.waitFor("both to open", openedCount(before + 2));
  assert.deepEqual(seen.paths.slice(before), [handbook, korean]);
  await app.waitFor("the last one, shown and read", readAll(popplerPageCount(korean)));
});

test("a folder dropped opens the documents inside it, sub-folders too, and nothing else", async () => {
  const folder = path.join(scratch, "to read");
  mkdirSync(path.join(folder, "more"), { recursive: true });
  copyFileSync(paper, path.join(folder, "b paper.pdf"));
  copyFileSync(handbook, path.join(folder, "more", "handbook.pdf"));
  writeFileSync(path.join(folder, "a notes.txt"), "not a document");
  const before = (await app.run(opened)).paths.length;
  await drop([folder]);
  const seen = await app.waitFor("the folder's documents to open", openedCount(before + 2));
  assert.deepEqual(seen.paths.slice(before), [path.join(folder, "b paper.pdf"), path.join(folder, "more", "handbook.pdf")]);
});

test("a file that is not a document gets a clear message and leaves the open document as it was", async () => {
  const shown = await app.run(opened);
  const notes = path.join(scratch, "notes.txt");
  writeFileSync(notes, "plain text, not a PDF");
  await drop([notes]);
  const said = await app.waitFor(
    "a message naming the file",
    `const seen = (() => { ${opened} })(); return seen.error.includes(${JSON.stringify(notes)}) ? seen.error : null;`,
  );
  assert.match(said, /neither a PDF nor a supported image/);
  const after = await app.run(opened);
  assert.equal(after.paths.length, shown.paths.length, "nothing else opened");
  assert.equal(after.title, shown.title, "the open document's title stays");
});
