// The window under a fast stream: the manual's recorded output replayed at 0.1 ms a token (with the
// sleeps' overhead, 5,000–6,000 tokens/s, above a fast GPU's pace), all 25 pages, while a probe in the
// webview times every animation frame and how late a 20 ms timer fires. Text events are merged per frame
// on their way (src-tauri/src/coalesce.rs) and Markdown re-rendered per block, so neither the frames nor
// the timer may stall for longer than a person notices.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { MANUAL_PAGES, openReplayedManual } from "./manual.mjs";

/** The rate the issue asks the window to keep up with. */
const REQUIRED_TOKENS_PER_S = 3000;
/** Longest stall allowed: a frame or a timer later than this is a hitch anyone sees. Generous for Xvfb's
 * software rendering of a debug build on a 2-core machine (measured: 117–190 ms, 264 ms with a compiler
 * running beside it); two IPC messages per token stalled frames for 650–1,800 ms. */
const MAX_STALL_MS = 400;

let opened;
let app;
before(async () => {
  opened = await openReplayedManual(0.1);
  app = opened.app;
});
after(() => opened?.close());

/** Installs the probe: frame gaps, timer lateness, and the status bar's tokens/s sampled every 100 ms. */
const PROBE = `
  const probe = { gaps: [], lags: [], rates: [], last: performance.now(), running: true };
  window.__probe = probe;
  const frame = (t) => {
    probe.gaps.push(t - probe.last);
    probe.last = t;
    if (probe.running) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  let due = performance.now() + 20;
  probe.timer = setInterval(() => {
    const now = performance.now();
    probe.lags.push(now - due);
    due = now + 20;
  }, 20);
  probe.sampler = setInterval(() => {
    const rate = /([\\d,.]+) tokens\\/s/.exec(document.getElementById("status-bar").textContent ?? "");
    if (rate) probe.rates.push(Number(rate[1].replaceAll(",", "")));
  }, 100);
  return true;`;

const STOP = `
  const probe = window.__probe;
  probe.running = false;
  clearInterval(probe.timer);
  clearInterval(probe.sampler);
  return { gaps: probe.gaps.slice(1), lags: probe.lags, rates: probe.rates };`;

test("at thousands of tokens a second the window keeps painting and its timers keep time", async () => {
  await app.run(PROBE);
  await app.waitFor(
    "every page of the manual read",
    `return document.querySelectorAll('#markdown-pane [data-page][data-status="done"]').length === ${MANUAL_PAGES};`,
    120_000,
  );
  const { gaps, lags, rates } = await app.run(STOP);
  const fastest = Math.max(...rates);
  const longestFrame = Math.max(...gaps);
  const latestTimer = Math.max(...lags);
  const summary = `fastest ${fastest} tokens/s; ${gaps.length} frames, longest ${longestFrame.toFixed(0)} ms; timer late by at most ${latestTimer.toFixed(0)} ms`;
  console.log(summary);
  assert.ok(fastest >= REQUIRED_TOKENS_PER_S, `the stream reached ${REQUIRED_TOKENS_PER_S} tokens/s: ${summary}`);
  assert.ok(longestFrame < MAX_STALL_MS, `no frame took ${MAX_STALL_MS} ms: ${summary}`);
  assert.ok(latestTimer < MAX_STALL_MS, `no timer ran ${MAX_STALL_MS} ms late: ${summary}`);
  // The page and its Markdown are all there afterwards: speed lost nothing.
  const blocks = await app.run(`return document.querySelectorAll("#markdown-pane .markdown-block").length;`);
  assert.ok(blocks > MANUAL_PAGES, `every page has its blocks (${blocks})`);
});
