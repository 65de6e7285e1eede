import { describe, expect, it } from "vitest";
import type { Block, PageEvent, PageStats } from "../events";
import { clock, describeProgress, ReadingProgress } from "./progress";

const stats: PageStats = {
  promptTokens: 0,
  generatedTokens: 0,
  visionMs: 0,
  prefillMs: 0,
  decodeMs: 0,
  tokensPerS: 0,
  recognizer: "test",
};
const blocks: Block[] = [];
const done = (page: number): PageEvent => ({ type: "done", page, markdown: "", blocks, stats });
const delta = (page: number, tokens: number): PageEvent => ({ type: "delta", page, text: "x", tokens });

function clockAt(start = 0) {
  const time = { now: start };
  return { time, now: () => time.now };
}

describe("ReadingProgress", () => {
  it("counts pages read, pages from the cache, and pages that failed or looped", () => {
    const progress = new ReadingProgress(5);
    for (let page = 0; page < 5; page++) progress.apply({ type: "queued", page });
    progress.apply({ type: "fromCache", page: 0 });
    progress.apply(done(0));
    progress.apply({ type: "started", page: 1 });
    progress.apply(done(1));
    progress.apply({ type: "started", page: 2 });
    progress.apply({ type: "failed", page: 2, error: "no image" });
    progress.apply({ type: "started", page: 3 });
    progress.apply({ type: "looped", page: 3, markdown: "", blocks, reason: { kind: "repeatedBlockText", count: 4 } });
    const figures = progress.figures();
    expect(figures).toMatchObject({ read: 3, total: 5, cacheHits: 1, failed: 1, looped: 1, pending: 1 });
    expect(progress.reading).toBe(true);
    progress.apply({ type: "started", page: 4 });
    progress.apply(done(4));
    expect(progress.reading).toBe(false);
    expect(progress.figures().read).toBe(4);
  });

  it("measures tokens per second over the last three seconds while reading, then the reading's average", () => {
    const { time, now } = clockAt(1000);
    const progress = new ReadingProgress(2, now);
    progress.apply({ type: "queued", page: 0 });
    progress.apply({ type: "queued", page: 1 });
    progress.apply({ type: "started", page: 0 });
    // 100 tokens every 100 ms for 5 s: 1,000 tokens/s.
    for (let step = 0; step < 50; step++) {
      progress.apply(delta(0, 100));
      time.now += 100;
    }
    expect(progress.figures().tokensPerS).toBeCloseTo(1000, -1);
    // Then twice as fast: the window forgets the slow part.
    for (let step = 0; step < 40; step++) {
      progress.apply(delta(0, 200));
      time.now += 100;
    }
    expect(progress.figures().tokensPerS).toBeCloseTo(2000, -1);
    progress.apply(done(0));
    progress.apply({ type: "started", page: 1 });
    progress.apply(done(1));
    // 50·100 + 40·200 tokens, the first delta's 100 made before it came: 12,900 in the 8.9 s to the last.
    expect(progress.figures().tokensPerS).toBeCloseTo(12900 / 8.9, 3);
  });

  it("does not count a reading's first tokens as made in the moment they arrived", () => {
    const { time, now } = clockAt(1000);
    const progress = new ReadingProgress(1, now);
    progress.apply({ type: "queued", page: 0 });
    progress.apply({ type: "started", page: 0 });
    // 256 tokens a 16 ms frame: 16,000 tokens/s from the first frame on.
    progress.apply(delta(0, 256));
    expect(progress.figures().tokensPerS).toBeNull();
    time.now += 2;
    expect(progress.figures().tokensPerS).toBeNull();
    time.now += 14;
    progress.apply(delta(0, 256));
    expect(progress.figures().tokensPerS).toBeCloseTo(16000, 3);
    time.now += 16;
    progress.apply(delta(0, 256));
    expect(progress.figures().tokensPerS).toBeCloseTo(16000, 3);
  });

  it("says nothing of tokens when the reader has none (the text layer)", () => {
    const progress = new ReadingProgress(1);
    progress.apply({ type: "queued", page: 0 });
    progress.apply({ type: "started", page: 0 });
    progress.apply(delta(0, 0));
    progress.apply(done(0));
    expect(progress.figures().tokensPerS).toBeNull();
    expect(describeProgress(progress.figures())).not.toMatch(/tokens/);
  });

  it("estimates the time left from the pages read so far, not counting cache hits", () => {
    const { time, now } = clockAt();
    const progress = new ReadingProgress(10, now);
    for (let page = 0; page < 10; page++) progress.apply({ type: "queued", page });
    expect(progress.figures().etaS).toBeNull();
    progress.apply({ type: "fromCache", page: 0 });
    progress.apply(done(0));
    expect(progress.figures().etaS, "a cache hit says nothing of the reader's pace").toBeNull();
    progress.apply({ type: "started", page: 1 });
    time.now += 4000;
    progress.apply(done(1));
    progress.apply({ type: "started", page: 2 });
    time.now += 4000;
    progress.apply(done(2));
    // Two pages in 8 s: 4 s a page, 7 pages to go.
    expect(progress.figures().etaS).toBeCloseTo(28, 6);
  });

  it("forgets the queue when the reading is stopped, and late 'stopped' failures do not count", () => {
    const progress = new ReadingProgress(3);
    for (let page = 0; page < 3; page++) progress.apply({ type: "queued", page });
    progress.apply({ type: "started", page: 0 });
    progress.stopped();
    progress.apply({ type: "failed", page: 0, error: "stopped" });
    expect(progress.reading).toBe(false);
    expect(progress.figures()).toMatchObject({ read: 0, failed: 0, pending: 0, etaS: null });
  });
});

describe("describeProgress", () => {
  it("puts the figures in one line a person reads", () => {
    const line = describeProgress({
      read: 12,
      total: 25,
      failed: 1,
      looped: 0,
      cacheHits: 3,
      pending: 12,
      tokensPerS: 1023.6,
      etaS: 41.2,
      pagesAtOnce: null,
    });
    expect(line).toBe("12 of 25 pages read · 1,024 tokens/s · 0:42 left · 3 from cache · 1 failed");
  });

  it("says while a reading goes on with fewer pages at a time for GPU memory, and forgets it for the next", () => {
    const progress = new ReadingProgress(3);
    for (let page = 0; page < 3; page++) progress.apply({ type: "queued", page });
    progress.fewerPagesAtOnce(12);
    const slowed = describeProgress(progress.figures());
    expect(slowed).toMatch(/ · GPU memory is short: 12 pages at a time$/);
    for (let page = 0; page < 3; page++) {
      progress.apply({ type: "started", page });
      progress.apply(done(page));
    }
    expect(describeProgress(progress.figures())).toContain("GPU memory is short: 12 pages at a time");
    progress.apply({ type: "queued", page: 1 });
    expect(describeProgress(progress.figures())).not.toContain("GPU memory");
    progress.fewerPagesAtOnce(1);
    expect(describeProgress(progress.figures())).toContain("GPU memory is short: 1 page at a time");
  });

  it("writes time left as m:ss or h:mm:ss", () => {
    expect(clock(0)).toBe("0:00");
    expect(clock(59.2)).toBe("1:00");
    expect(clock(3725)).toBe("1:02:05");
  });
});
