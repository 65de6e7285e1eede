// While a page is read, the page pane keeps the box being read in view and the Markdown pane the text
// being written, until the person scrolls away themselves; the Follow pill brings them back.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { openReplayedManual } from "./manual.mjs";

/** Page 2 of the manual: six blocks down the page, the third a long list (about 1,500 characters). */
const PAGE = 1;
/** Zoomed in so that the page is much taller than its pane: following has to move it. */
const ZOOM = "200%";
/** How long a head may be out of view before the pane has brought it back: a smooth scroll's time
 *  for the page, a frame or a few (the block is rendered asynchronously) for the Markdown. */
const SETTLE_MS = { page: 1500, markdown: 800 };

let opened;
let app;
before(async () => {
  // 20 ms a token: page 2 takes about 15 s, its long list about 7 s, time for a person's scroll.
  opened = await openReplayedManual(20);
  app = opened.app;
});
after(() => opened?.close());

/** Where each pane's head is against what the pane shows: in view (true), out (false), none (null). */
const probe = `
  const view = (pane, coveredTop = 0) => {
    const r = pane.getBoundingClientRect();
    const left = r.left + pane.clientLeft, top = r.top + pane.clientTop;
    return { left, top: top + coveredTop, right: left + pane.clientWidth, bottom: top + pane.clientHeight };
  };
  const pagePane = document.getElementById("page-pane");
  const markdownPane = document.getElementById("markdown-pane");
  const box = document.querySelector(".grounding-box.reading-head");
  const writing = document.querySelector('#markdown-pane [data-page="${PAGE}"] .markdown-block.writing');
  const pv = view(pagePane);
  const mv = view(markdownPane, document.getElementById("markdown-toolbar").offsetHeight);
  let page = null;
  if (box) {
    const b = box.getBoundingClientRect();
    // Down the page, inside the view (or covering it, taller than it); across, at least overlapping it
    // (zoomed in, a text box is wider than the pane).
    const down = (b.top >= pv.top - 1 && b.bottom <= pv.bottom + 1) || (b.top <= pv.top && b.bottom >= pv.bottom);
    page = down && b.right > pv.left && b.left < pv.right;
  }
  // Text is written at the bottom of the block being written.
  const bottom = writing?.getBoundingClientRect().bottom;
  const markdown = writing ? bottom >= mv.top - 1 && bottom <= mv.bottom + 1 : null;
  const pill = pagePane.querySelector(".follow-pill");
  return {
    head: box ? Number(box.dataset.blockId) : null,
    page, markdown,
    scrollTop: pagePane.scrollTop,
    pill: pill && !pill.hidden && pill.getBoundingClientRect().height > 0
      ? { x: pill.getBoundingClientRect().left + pill.offsetWidth / 2, y: pill.getBoundingClientRect().top + pill.offsetHeight / 2 }
      : null,
    status: document.querySelector('#markdown-pane [data-page="${PAGE}"]')?.dataset.status,
    pane: { x: (pv.left + pv.right) / 2, y: (pv.top + pv.bottom) / 2 },
  };`;

/** Samples both panes until `done(sample)`, failing if either head stays out of view past its settle time. */
async function watchFollowing(what, done, timeoutMs = 30_000) {
  const outSince = { page: null, markdown: null };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const sample = await app.run(probe);
    const now = Date.now();
    for (const pane of ["page", "markdown"]) {
      if (sample[pane] !== false) outSince[pane] = null;
      else outSince[pane] ??= now;
      const out = outSince[pane] === null ? 0 : now - outSince[pane];
      assert.ok(out <= SETTLE_MS[pane], `the ${pane} pane's reading head out of view for ${out} ms (block ${sample.head})`);
    }
    if (done(sample)) return sample;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The page pane once the wheel's scroll has come to rest, away from the head, with the Follow pill. */
async function restingAway() {
  const deadline = Date.now() + 5_000;
  let last = await app.run(probe);
  while (Date.now() < deadline) {
    await sleep(250);
    const now = await app.run(probe);
    if (now.pill && now.page === false && now.scrollTop === last.scrollTop) return now;
    last = now;
  }
  throw new Error(`the pane did not come to rest away from the head with the pill: ${JSON.stringify(last)}`);
}

async function zoomTo(label) {
  const seen = [];
  for (let press = 0; press < 12; press++) {
    seen.push(await app.run(`return document.querySelector(".zoom-label").textContent;`));
    if (seen.at(-1) === label) return;
    await app.type("+");
  }
  throw new Error(`+ never reached ${label}: ${seen.join(", ")}`);
}

test("both panes follow the block being read until the person scrolls the page away; Follow brings it back", async () => {
  await app.waitFor("page 1 on screen", `return document.querySelector(".page-image")?.complete;`);
  await zoomTo(ZOOM);
  await app.waitFor("page 1 to be read", `return document.querySelector('#markdown-pane [data-page="0"]')?.dataset.status === "done";`);
  await app.type("\uE014");
  await app.waitFor(`page ${PAGE + 1} on screen`, `const i = document.querySelector(".page-image");
    return i.alt.endsWith("page ${PAGE + 1}") && i.complete && i.naturalWidth >= i.clientWidth;`);

  // Followed: the long list's box is below the first screen, so the pane must have moved to it.
  const followed = await watchFollowing(
    "the page pane to follow the list down",
    (s) => s.head >= 2 && s.page === true && s.scrollTop > 0,
  );
  assert.equal(followed.status, "reading");
  assert.equal(followed.pill, null, "no Follow pill while following");

  // A person turns the wheel up, away from the head.
  await app.wheel(followed.pane.x, followed.pane.y, -3000);
  const away = await restingAway();
  assert.ok(away.scrollTop < followed.scrollTop, `scrolled up: ${followed.scrollTop} → ${away.scrollTop}`);

  // Reading goes on to the next block, out of view: the pane stays where the person left it.
  const next = await app.waitFor("the next block to open", `const s = (() => { ${probe} })(); return s.head > ${away.head} ? s : null;`, 15_000);
  await sleep(800);
  const still = await app.run(probe);
  assert.equal(still.status, "reading", "the page is still being read");
  assert.equal(still.page, false, `block ${still.head} is out of view`);
  assert.equal(still.scrollTop, away.scrollTop, "the pane did not move after the person scrolled it");
  assert.ok(still.pill, "the Follow pill is shown");
  assert.ok(next.head > followed.head);

  // Follow: the head back in view, the pill gone.
  await app.clickAt(still.pill.x, still.pill.y);
  const back = await app.waitFor("the head back in view", `const s = (() => { ${probe} })(); return s.page === true && !s.pill ? s : null;`, 5_000);
  assert.ok(back.scrollTop > still.scrollTop, `the pane moved down to the head: ${still.scrollTop} → ${back.scrollTop}`);
});
