// The window under a fast stream: the manual's recorded output replayed at 0.25 ms a token (4,000 tokens/s,
// a third above the rate asked for; the replay keeps to its schedule however the machine's sleeps overshoot,
// where a sleep after each token once held it to 2,992 tokens/s on a loaded CI machine), all 25 pages,
// while a probe in the webview times every animation frame and how late a 20 ms timer fires. Text events
// are merged per frame on their way (src-tauri/src/coalesce.rs) and Markdown re-rendered per block, so
// neither the frames nor the timer may stall for longer than a person notices.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { MANUAL_PAGES, openReplayedManual } from "./manual.mjs";

/** The rate the issue asks the window to keep up with. */
const REQUIRED_TOKENS_PER_S = 3000;
/** A frame or a timer later than this is a hitch anyone sees. Generous for Xvfb's software rendering of a
 * debug build on a 2-core machine (measured: 117–190 ms, 264–321 ms with a compiler running beside it); two
 * IPC messages per token stalled frames for 650–1,800 ms, again and again. */
const MAX_STALL_MS = 400;
/** A loaded CI machine now and then stalls every process at once (once 414 ms, with the status bar then
 * reporting 29,000 tokens/s as the backlog drained), so one such hitch is the machine's; a second, or any
 * stall past a second, is ours. */
const HITCHES_ALLOWED = 1;
const MAX_HITCH_MS = 1000;

let opened;
let app;
before(async () => {
  opened = await openReplayedManual(0.25);
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
  // One stall shows as a long frame and a late timer both, so the two are counted apart.
  const stalls = (times) => times.filter((ms) => ms >= MAX_STALL_MS).length;
  const hitches = Math.max(stalls(gaps), stalls(lags));
  const summary = `fastest ${fastest} tokens/s; ${gaps.length} frames, longest ${longestFrame.toFixed(0)} ms; timer late by at most ${latestTimer.toFixed(0)} ms; ${hitches} stalls of ${MAX_STALL_MS} ms or more`;
  console.log(summary);
  assert.ok(fastest >= REQUIRED_TOKENS_PER_S, `the stream reached ${REQUIRED_TOKENS_PER_S} tokens/s: ${summary}`);
  assert.ok(hitches <= HITCHES_ALLOWED, `at most ${HITCHES_ALLOWED} frame or timer stalled ${MAX_STALL_MS} ms: ${summary}`);
  assert.ok(Math.max(longestFrame, latestTimer) < MAX_HITCH_MS, `nothing stalled ${MAX_HITCH_MS} ms: ${summary}`);
  // The page and its Markdown are all there afterwards: speed lost nothing.
  const blocks = await app.run(`return document.querySelectorAll("#markdown-pane .markdown-block").length;`);
  assert.ok(blocks > MANUAL_PAGES, `every page has its blocks (${blocks})`);
});
