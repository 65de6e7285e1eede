// The window's layout on a born-digital paper read through its text layer: zoom that keeps the
// boxes on the words, panes that resize and collapse, Markdown rendered or as source, by page.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { fixtures, openApp, popplerPageSize, startDriver } from "./session.mjs";

const pdf = path.join(fixtures, "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
let driver;
let app;
before(async () => {
  driver = await startDriver();
  app = await openApp(driver, [pdf]);
  await app.waitFor(
    "page 1's boxes on the rendered page",
    `const img = document.querySelector(".page-image");
     return img?.complete && img.naturalWidth > 0 && document.querySelectorAll(".grounding-box").length > 0;`,
  );
});
after(async () => {
  await app?.close();
  driver?.close();
});

/** The first box's block: every measure follows that block, whatever order the boxes are drawn in. */
const firstBlock = `return document.querySelector(".grounding-box").dataset.blockId;`;

/** Where a box of `block` sits on the page image, as fractions of the image's size. */
const onPage = (block) => `
  const i = document.querySelector(".page-image").getBoundingClientRect();
  const b = document.querySelector('.grounding-box[data-block-id="${block}"]').getBoundingClientRect();
  return { left: (b.left - i.left) / i.width, top: (b.top - i.top) / i.height, width: b.width / i.width };`;

/** The page image's rectangle and where `block`'s box is, once the rendering for this zoom has arrived. */
const measure = (block) => `
  const image = document.querySelector(".page-image");
  // The server renders at least the width asked.
  if (!image.complete || image.naturalWidth < Math.floor(image.clientWidth * devicePixelRatio)) return null;
  const img = image.getBoundingClientRect();
  return { natural: image.naturalWidth, img: { left: img.left, top: img.top, width: img.width, height: img.height },
           fraction: (() => {${onPage(block)}})(),
           label: document.querySelector(".zoom-label").textContent };`;

/** Samples `block`'s place on the page every frame, the sharper rendering loading or not, until stopped. */
const followBox = (block) => `
  window.boxTrail = [];
  window.boxTrailOn = true;
  const sample = () => {
    const image = document.querySelector(".page-image");
    const loading = !image.complete || image.naturalWidth < Math.floor(image.clientWidth * devicePixelRatio);
    window.boxTrail.push({ loading, ...(() => {${onPage(block)}})() });
    if (window.boxTrailOn) requestAnimationFrame(sample);
  };
  requestAnimationFrame(sample);`;

test("+ and − step the zoom from 100% of the page's printed size, and the boxes stay on the page", async () => {
  const size = popplerPageSize(pdf, 1);
  await app.clickOn(`.zoom-controls button[data-zoom="fitWidth"]`);
  const block = await app.run(firstBlock);
  const before = await app.waitFor("the page at fit width", measure(block));
  // Fit width, then + twice from whatever scale that is: onto the zoom levels.
  await app.run(followBox(block));
  await app.type("++");
  const after1 = await app.waitFor("the zoom to change", `const m = (() => {${measure(block)}})(); return m && m.img.width !== ${before.img.width} ? m : null;`);
  const trail = await app.run(`window.boxTrailOn = false; return window.boxTrail;`);
  const scale = Number(after1.label.replace("%", "")) / 100;
  assert.ok(Math.abs(after1.img.width - size.width * (96 / 72) * scale) < 1, `${after1.img.width} px at ${after1.label} for ${size.width} pt`);
  // The box keeps its place on the page: the same fraction of the page, whatever the zoom, to the
  // rendered pixel (boxes land on whole pixels of the rendering, as the reference draws them), and
  // so it does in every frame while the sharper rendering loads.
  for (const m of [before, after1]) assert.ok(m.fraction.width > 0);
  const pixel = 1.5 / before.natural + 1.5 / after1.natural;
  const tolerance = { left: pixel, width: pixel, top: pixel * (before.img.width / before.img.height) };
  const samples = [{ what: `at ${after1.label}`, ...after1.fraction }, ...trail.map((t, i) => ({ what: `in frame ${i}${t.loading ? ", loading" : ""}`, ...t }))];
  assert.ok(trail.some((t) => t.loading), `${trail.length} frames sampled, none while the rendering loaded`);
  for (const sample of samples) {
    for (const key of ["left", "top", "width"]) {
      const [a, b] = [before.fraction[key], sample[key]];
      assert.ok(Math.abs(a - b) < tolerance[key], `box ${key}: ${a} of the page at fit width, ${b} ${sample.what}`);
    }
  }

  await app.type("-");
  await app.type("-");
  const smaller = await app.waitFor("zooming out", `const m = (() => {${measure(block)}})(); return m && m.img.width < ${after1.img.width} ? m : null;`);
  const smallerScale = Number(smaller.label.replace("%", "")) / 100;
  assert.ok(smallerScale < scale);
  assert.ok(Math.abs(smaller.img.width - size.width * (96 / 72) * smallerScale) < 1);

  await app.clickOn(`.zoom-controls button[data-zoom="fitPage"]`);
  // Fit page may land on the zoom it was at: wait for the mode, then for the image at its size.
  const fitted = await app.waitFor(
    "the whole page in view",
    `const m = (() => {${measure(block)}})();
     return m && document.querySelector(".page-toolbar").dataset.zoom === "fitPage" ? m : null;`,
  );
  assert.ok(fitted.img.top >= 0 && fitted.img.top + fitted.img.height <= 900, "the whole page is on screen");
  assert.ok(Math.abs(fitted.img.width / fitted.img.height - size.width / size.height) < 0.01);
});

test("the Markdown pane is dragged wider and the pages pane collapses and opens again", async () => {
  const width = (id) => `return document.getElementById("${id}").getBoundingClientRect().width;`;
  const splitter = await app.run(`const r = document.querySelector('[data-splitter="markdown"]').getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + 200 };`);
  const windowWidth = await app.run(`return document.getElementById("panes").clientWidth;`);
  await app.drag(splitter, { x: windowWidth - 600, y: splitter.y });
  const markdown = await app.waitFor("the Markdown pane to take its new width", `const w = (() => {${width("markdown-pane")}})(); return Math.abs(w - 597) < 3 ? w : null;`);
  assert.ok(markdown);

  await app.clickOn("#toggle-library");
  const closed = await app.run(`const pane = document.getElementById("library-pane");
    return { width: pane.getBoundingClientRect().width, visibility: getComputedStyle(pane).visibility };`);
  assert.ok(closed.width <= 1, `the collapsed pane is ${closed.width} px wide (its border)`);
  assert.equal(closed.visibility, "hidden");
  await app.clickOn("#toggle-library");
  assert.equal(await app.run(width("library-pane")), 200);
});

test("Source shows the Markdown as written, This page keeps only the shown page's", async () => {
  await app.waitFor("every page's badge", `return [...document.querySelectorAll(".thumbnail")].every((t) => ["done", "fromCache"].includes(t.dataset.status));`, 60_000);
  await app.clickOn(`[data-view="source"] button[data-value="true"]`);
  const source = await app.waitFor(
    "the title's Markdown source",
    `const b = [...document.querySelectorAll('#markdown-pane [data-page="0"] .markdown-block')]
       .find((b) => b.textContent.includes("Trace-based Just-in-Time"));
     return b && !b.querySelector("h1, h2, h3") ? b.textContent : null;`,
  );
  assert.match(source, /^#+ Trace-based Just-in-Time/, "a heading, in Markdown");
  await app.clickOn(`[data-view="source"] button[data-value="false"]`);
  await app.waitFor("the title rendered again", `return document.querySelector('#markdown-pane [data-page="0"] h1, #markdown-pane [data-page="0"] h2') !== null;`);

  await app.clickOn(`[data-view="perPage"] button[data-value="true"]`);
  const visible = `return [...document.querySelectorAll("#markdown-pane .markdown-page")]
    .filter((s) => s.getClientRects().length > 0).map((s) => Number(s.dataset.page));`;
  assert.deepEqual(await app.run(visible), [0]);
  await app.type("\uE014"); // →
  assert.deepEqual(await app.waitFor("page 2's section alone", `const v = (() => {${visible.slice(0)}})(); return v[0] === 1 ? v : null;`), [1]);
  await app.clickOn(`[data-view="perPage"] button[data-value="false"]`);
  assert.ok((await app.run(visible)).length > 1);
});

test("a legend chip hides its label's boxes and shows them again", async () => {
  const chip = `.legend-chip[data-label="text"]`;
  const state = `const boxes = [...document.querySelectorAll('.grounding-box[data-label="text"]')];
    return { pressed: document.querySelector('${chip}').getAttribute("aria-pressed"),
             shown: boxes.filter((b) => b.getClientRects().length > 0).length, all: boxes.length,
             others: [...document.querySelectorAll('.grounding-box:not([data-label="text"])')].filter((b) => b.getClientRects().length > 0).length };`;
  // The page shown was just changed by the test before: its boxes are drawn once its rendering arrives.
  const stateWhen = (what, condition) =>
    app.waitFor(what, `const s = (() => {${state}})(); return ${condition} ? s : null;`);
  const before = await stateWhen("the shown page's boxes, text and others", "s.all > 0 && s.shown === s.all && s.others > 0");
  await app.clickOn(chip);
  const hidden = await stateWhen("the chip released", `s.pressed === "false"`);
  assert.deepEqual([hidden.shown, hidden.others], [0, before.others]);
  await app.clickOn(chip);
  const shown = await stateWhen("the chip pressed again", `s.pressed === "true"`);
  assert.equal(shown.shown, before.all);
});
