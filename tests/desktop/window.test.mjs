// The desktop shell, end to end: the real app under Xvfb, driven through WebDriver.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fixtures, openApp, popplerPageCount, repoRoot, startDriver } from "./session.mjs";

let driver;
before(async () => {
  driver = await startDriver();
});
after(() => driver?.close());

test("a PDF named on the command line shows its thumbnails and its first page", async () => {
  const pdf = path.join(fixtures, "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
  const app = await openApp(driver, [pdf]);
  try {
    const pageLoaded = `const img = document.querySelector(".page-image");
      return img !== null && img.complete && img.naturalWidth > 0 ? img.naturalWidth : 0;`;
    const width = await app.waitFor("the first page to render", pageLoaded);
    assert.ok(width >= 500, `the page image is ${width} px wide`);

    // The list is virtual: every page's thumbnail is met on the way down, never all at once.
    const seen = new Set();
    for (let step = 0; step < 50; step++) {
      const now = await app.run(`
        const pane = document.getElementById("library-pane");
        const pages = [...document.querySelectorAll(".thumbnail")].map((t) => Number(t.dataset.page));
        const end = pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 1;
        pane.scrollTop += pane.clientHeight / 2;
        return { pages, end };`);
      for (const page of now.pages) seen.add(page);
      if (now.end) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const pages = popplerPageCount(pdf);
    assert.deepEqual([...seen].sort((a, b) => a - b), [...Array(pages).keys()]);
    await app.run(`document.getElementById("library-pane").scrollTop = 0;`);

    await app.waitFor(
      "the first thumbnail to load",
      `const img = document.querySelector(".thumbnail img"); return img && img.complete && img.naturalWidth > 0;`,
    );
    const shots = path.join(repoRoot, "docs/screenshots");
    mkdirSync(shots, { recursive: true });
    writeFileSync(path.join(shots, "window.png"), await app.screenshot());
  } finally {
    await app.close();
  }
});

test("without model weights the text layer is read: Markdown streams in, boxes and blocks link both ways", async () => {
  const pdf = path.join(fixtures, "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
  const app = await openApp(driver, [pdf]);
  try {
    await app.waitFor(
      "the notice that the text layer is read",
      `return /text layer/.test(document.getElementById("status-bar").textContent)
        || /pages read/.test(document.getElementById("status-bar").textContent);`,
    );
    const firstPageBlocks = `return document.querySelectorAll('#markdown-pane [data-page="0"] .markdown-block').length;`;
    const blocks = await app.waitFor("page 1's Markdown", firstPageBlocks);
    await app.waitFor("page 1's boxes", `return document.querySelectorAll(".grounding-box").length > 0;`);
    const boxes = await app.run(`return document.querySelectorAll(".grounding-box").length;`);
    assert.ok(boxes >= blocks, `${boxes} boxes for ${blocks} blocks`);
    // The paper's title, typeset by its authors, is in the first page's Markdown.
    const title = await app.waitFor(
      "the paper's title in page 1's Markdown (blocks render asynchronously)",
      `return document.querySelector('#markdown-pane [data-page="0"]').textContent
        .includes("Trace-based Just-in-Time Type Specialization for Dynamic Languages");`,
    );
    assert.ok(title);

    // Click the box of the block that holds "Abstract": its block is flashed and scrolled into view.
    const target = await app.run(`
      const block = [...document.querySelectorAll('#markdown-pane [data-page="0"] .markdown-block')]
        .find((b) => b.textContent.includes("Dynamic languages such as JavaScript"));
      const id = block.dataset.blockId;
      const box = document.querySelector('.grounding-box[data-block-id="' + id + '"]');
      box.scrollIntoView({ block: "center" });
      const r = box.getBoundingClientRect();
      return { id, x: r.left + r.width / 2, y: r.top + r.height / 2 };`);
    await app.clickAt(target.x, target.y);
    const linked = await app.waitFor(
      "the clicked box's block to flash",
      `const b = document.querySelector('#markdown-pane [data-page="0"] .markdown-block[data-block-id="${target.id}"]');
       const r = b.getBoundingClientRect();
       const pane = document.getElementById("markdown-pane").getBoundingClientRect();
       return b.classList.contains("flash") && r.bottom > pane.top && r.top < pane.bottom;`,
    );
    assert.ok(linked);

    // Click another block: its box is highlighted.
    const other = await app.run(`
      const block = [...document.querySelectorAll('#markdown-pane [data-page="0"] .markdown-block')]
        .find((b) => b.textContent.includes("Trace-based Just-in-Time"));
      block.scrollIntoView({ block: "center" });
      const r = block.getBoundingClientRect();
      return { id: block.dataset.blockId, x: r.left + 10, y: r.top + r.height / 2 };`);
    await app.clickAt(other.x, other.y);
    await app.waitFor(
      "the clicked block's box to be highlighted",
      `return document.querySelector('.grounding-box[data-block-id="${other.id}"]').classList.contains("highlighted");`,
    );
    // Every page read (the first test opened this paper too, so its pages may come from the cache):
    // each thumbnail says so; the legend counts the boxes of the page by label.
    await app.waitFor(
      "every page's badge to say done",
      `return [...document.querySelectorAll(".thumbnail")]
        .every((t) => t.dataset.status === "done" || t.dataset.status === "fromCache");`,
      60_000,
    );
    const legend = await app.run(`
      const chips = [...document.querySelectorAll(".legend-chip")].map((c) => c.textContent);
      const counts = {};
      for (const b of document.querySelectorAll(".grounding-box")) counts[b.dataset.label] = (counts[b.dataset.label] ?? 0) + 1;
      return { chips, counts };`);
    assert.ok(legend.chips.length > 0, "the legend has chips");
    for (const chip of legend.chips) {
      const [label, count] = [chip.slice(0, chip.lastIndexOf(" ")).replace(" ", "_"), Number(chip.slice(chip.lastIndexOf(" ") + 1))];
      assert.equal(count, legend.counts[label], `legend chip "${chip}"`);
    }
    // No weights: the top bar says the text layer is read, and why; the modes are the model's.
    const engine = await app.waitFor(
      "the engine status",
      `const e = document.getElementById("engine-status");
       return e.dataset.recognizer ? { text: e.textContent, title: e.title, modes: document.getElementById("mode-select").disabled } : null;`,
    );
    assert.equal(engine.text, "text layer only");
    assert.match(engine.title, /no DeepSeek-OCR-2 weights/);
    // Where the model would run, and what this build is: the CPU build on a machine without a GPU, else the GPU.
    assert.match(engine.title, /CPU, f32; built without CUDA|compute capability \d\.\d; built for compute capability/);
    assert.equal(engine.modes, true);
    const pages = popplerPageCount(pdf);
    const progress = await app.run(`return document.getElementById("status-progress").textContent;`);
    assert.match(progress, new RegExp(`^${pages} of ${pages} pages read`));
    assert.doesNotMatch(progress, /tokens\/s/, "the text layer has no tokens to count");
    const shots = path.join(repoRoot, "docs/screenshots");
    writeFileSync(path.join(shots, "reading-linked.png"), await app.screenshot());
  } finally {
    await app.close();
  }
});

test("a corrupt PDF opens no page and says what is wrong", async () => {
  const pdf = path.join(fixtures, "pdfs/malformed/pdfjs__bug1020226_truncated.pdf");
  const app = await openApp(driver, [pdf]);
  try {
    const message = await app.waitFor(
      "the error message",
      `const box = document.querySelector(".message.error"); return box ? box.textContent : "";`,
    );
    assert.match(message, /pdfjs__bug1020226_truncated\.pdf/);
    assert.match(message, /corrupt|damaged|truncated/i);
    assert.equal(await app.run(`return document.querySelectorAll(".thumbnail").length;`), 0);
  } finally {
    await app.close();
  }
});

test("a corrupt PDF opened after a good one says what is wrong, and what was read stays", async () => {
  const good = path.join(fixtures, "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
  const corrupt = path.join(fixtures, "pdfs/malformed/pdfjs__bug1020226_truncated.pdf");
  const app = await openApp(driver, [good, corrupt]);
  try {
    const message = await app.waitFor(
      "the error message",
      `const box = document.querySelector(".message.error"); return box ? box.textContent : "";`,
    );
    assert.match(message, /pdfjs__bug1020226_truncated\.pdf/);
    assert.match(message, /damaged/);
    const kept = await app.waitFor(
      "the paper's Markdown, still there",
      `return document.querySelector('#markdown-pane [data-page="0"]')?.textContent.includes("Trace-based Just-in-Time");`,
    );
    assert.ok(kept);
    assert.equal(await app.run(`return document.getElementById("document-title").textContent;`), "pdfjs__tracemonkey.pdf");
    writeFileSync(path.join(repoRoot, "docs/screenshots/error-corrupt-pdf.png"), await app.screenshot());
  } finally {
    await app.close();
  }
});
