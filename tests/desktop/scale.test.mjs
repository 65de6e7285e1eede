// A 500-page PDF: its first page is on screen within a second of opening it, and the library's
// thumbnails are a virtual list, so scrolling through all of it keeps a few dozen in the window.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fixtures, openApp, popplerPageCount, startDriver } from "./session.mjs";

const PAGES = 500;
/** Thumbnails in view and in the margin: a dozen fit the pane and its margins; 500 must not. */
const MOST_THUMBNAILS = 30;
const scratch = mkdtempSync(path.join(tmpdir(), "deepread-scale-"));
const big = path.join(scratch, "five-hundred-pages.pdf");

/** One real page, 500 times over, joined by poppler's pdfunite: a big PDF made where the test runs. */
function makeBigPdf() {
  const page = path.join(fixtures, "pdfs/multi_column_layout/olmocr__multi_column_miss.pdf");
  const made = spawnSync("pdfunite", [...Array(PAGES).fill(page), big], { encoding: "utf8" });
  assert.equal(made.status, 0, `pdfunite: ${made.stderr}`);
  assert.equal(popplerPageCount(big), PAGES);
}

const thumbnails = `const items = [...document.querySelectorAll(".thumbnail")];
  return { count: items.length, pages: items.map((t) => Number(t.dataset.page)),
    images: document.querySelectorAll(".thumbnail img[src]").length };`;

let driver;
let app;
before(async () => {
  makeBigPdf();
  driver = await startDriver();
  app = await openApp(driver, [big]);
});
after(async () => {
  await app?.close();
  driver?.close();
  rmSync(scratch, { recursive: true, force: true });
});

test("the first page of a 500-page PDF is on screen within a second of opening it", async () => {
  const shown = await app.waitFor(
    "the first page image",
    `const open = performance.getEntriesByName("deepread:open")[0];
     const image = performance.getEntriesByName("deepread:page-image")[0];
     const opened = performance.getEntriesByName("deepread:opened")[0];
     const img = document.querySelector(".page-image");
     return open && image && img.complete && img.naturalWidth > 0
       ? { ms: image.startTime - open.startTime, openMs: opened.startTime - open.startTime, page: image.detail, alt: img.alt } : null;`,
  );
  assert.equal(shown.page, 0);
  assert.match(shown.alt, /page 1$/);
  assert.ok(shown.ms < 1000, `the first page took ${Math.round(shown.ms)} ms from opening (${Math.round(shown.openMs)} ms to open the file)`);
});

test("scrolling the thumbnails from first to last keeps a bounded few in the window", async () => {
  const first = await app.waitFor(
    "the first thumbnails to load",
    `const loaded = [...document.querySelectorAll(".thumbnail img")].filter((i) => i.complete && i.naturalWidth > 0);
     return loaded.length > 0 ? (() => { ${thumbnails} })() : null;`,
  );
  assert.ok(first.count <= MOST_THUMBNAILS, `${first.count} thumbnails for the first screen`);
  assert.equal(first.pages[0], 0);

  let most = first.count;
  let mostImages = first.images;
  for (let step = 0; step < 200; step++) {
    const at = await app.run(`
      const pane = document.getElementById("library-pane");
      pane.scrollTop += pane.clientHeight;
      return { end: pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 1 };`);
    await new Promise((resolve) => setTimeout(resolve, 40));
    const now = await app.run(thumbnails);
    most = Math.max(most, now.count);
    mostImages = Math.max(mostImages, now.images);
    if (at.end) break;
  }
  assert.ok(most <= MOST_THUMBNAILS, `at most ${most} thumbnails existed while scrolling`);
  assert.ok(mostImages <= MOST_THUMBNAILS, `at most ${mostImages} thumbnail images while scrolling`);

  const last = await app.waitFor(
    "the last page's thumbnail to load",
    `const img = document.querySelector('.thumbnail[data-page="${PAGES - 1}"] img');
     return img && img.complete && img.naturalWidth > 0;`,
  );
  assert.ok(last);
  // The last thumbnail opens the last page.
  await app.run(`document.querySelector('.thumbnail[data-page="${PAGES - 1}"]').click();`);
  const alt = await app.waitFor(
    "page 500 on screen",
    `const img = document.querySelector(".page-image"); return img.complete && img.naturalWidth > 0 && img.alt;`,
  );
  assert.match(alt, new RegExp(`page ${PAGES}$`));
});
