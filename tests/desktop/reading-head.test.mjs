// A page being read, watched at a pace a person can follow: its boxes appear as their blocks open,
// the block being written is outlined on the page and in the pane, and the status bar counts.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { openReplayedManual } from "./manual.mjs";
import { repoRoot } from "./session.mjs";

/** Page 2 of the manual: a heading, paragraphs, a list and a photograph. */
const PAGE = 1;

let opened;
let app;
before(async () => {
  // 8 ms a token: page 2's few hundred tokens take seconds, long enough to look at.
  opened = await openReplayedManual(8);
  app = opened.app;
});
after(() => opened?.close());

test("while a page is read, its boxes appear block by block and the block being written is outlined", async () => {
  await app.waitFor("page 1 to be read", `return document.querySelector('#markdown-pane [data-page="0"]')?.dataset.status === "done";`);
  await app.type("\uE014");
  await app.waitFor(
    `page ${PAGE + 1} on screen`,
    `const i = document.querySelector(".page-image");
     return i.alt.endsWith("page ${PAGE + 1}") && i.complete && i.naturalWidth > 0;`,
  );
  const status = `document.querySelector('#markdown-pane [data-page="${PAGE}"]')?.dataset.status`;
  const head = `const head = document.querySelector(".grounding-box.reading-head");
    const writing = document.querySelector('#markdown-pane [data-page="${PAGE}"] .markdown-block.writing');
    const boxes = new Set([...document.querySelectorAll(".grounding-box")].map((b) => b.dataset.blockId)).size;
    return ${status} === "reading" && head && writing && boxes >= 3
      ? { head: head.dataset.blockId, writing: writing.dataset.blockId, boxes } : null;`;
  const early = await app.waitFor(`page ${PAGE + 1}'s third block to open`, head, 30_000);
  assert.equal(early.head, early.writing, "the outlined box is the block being written");
  await app.waitFor("the thumbnails in view", `return [...document.querySelectorAll(".thumbnail img")].every((i) => i.complete && i.naturalWidth > 0);`);
  const later = await app.waitFor("more boxes", `const now = (() => { ${head} })(); return now && now.boxes > ${early.boxes} ? now : null;`, 30_000);
  const shot = await app.screenshot();
  assert.equal(await app.run(`return ${status};`), "reading", "the page is still being read after the screenshot");
  writeFileSync(path.join(repoRoot, "docs/screenshots/reading-in-progress.png"), shot);
  assert.equal(later.head, later.writing);
  assert.equal(await app.run(`return document.getElementById("read-button").textContent;`), "Stop");
});
