// The status bar's figures for the open document: pages read of all, tokens per second, time left,
// pages answered by the cache. Fed the reading's events; the clock is passed in so tests set it.
import type { PageEvent } from "../events";

/** Tokens/s is measured over this much recent time, so it follows the GPU's pace as it changes. */
const RATE_WINDOW_MS = 3000;

export interface ProgressFigures {
  /** Pages finished: read, from the cache, or looped (stopped early, with what came before). */
  read: number;
  total: number;
  failed: number;
  looped: number;
  cacheHits: number;
  /** Pages queued or being read. */
  pending: number;
  /** Generated tokens per second; null when the reader reports no tokens (the text layer). */
  tokensPerS: number | null;
  /** Seconds until the pending pages are read; null until a page has been read to measure by. */
  etaS: number | null;
  /** Set when GPU memory ran short during this reading: the most pages it reads together since. */
  pagesAtOnce: number | null;
}

type Finish = "done" | "fromCache" | "looped" | "failed";

export class ReadingProgress {
  private readonly finished = new Map<number, Finish>();
  private readonly pending = new Set<number>();
  private readonly fromCache = new Set<number>();
  private readonly recent: { at: number; tokens: number }[] = [];
  /** This reading's start and the pages the recognizer (not the cache) finished since. */
  private readingSince: number | null = null;
  private readByRecognizer = 0;
  /** `opening`: the tokens that came with the first delta, generated before it arrived. */
  private tokens = { total: 0, first: 0, last: 0, opening: 0 };
  private pagesAtOnce: number | null = null;

  constructor(
    readonly total: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  apply(event: PageEvent): void {
    const page = event.page;
    switch (event.type) {
      case "queued":
        this.pending.add(page);
        if (this.readingSince === null) {
          // A new reading: what memory allowed the last one says nothing of this one.
          this.readingSince = this.now();
          this.pagesAtOnce = null;
        }
        break;
      case "fromCache":
        this.fromCache.add(page);
        break;
      case "started":
        this.fromCache.delete(page);
        break;
      case "delta":
        if (event.tokens > 0) this.countTokens(event.tokens);
        break;
      case "done":
      case "looped":
      case "failed": {
        if (!this.pending.delete(page)) break;
        const cached = this.fromCache.has(page);
        this.finished.set(page, cached ? "fromCache" : event.type);
        if (!cached) this.readByRecognizer += 1;
        break;
      }
      default:
        break;
    }
    if (this.pending.size === 0) this.readingSince = null;
  }

  /** GPU memory ran short: the reading goes on with at most `pages` pages together. */
  fewerPagesAtOnce(pages: number): void {
    this.pagesAtOnce = pages;
  }

  /** The reading was stopped: its queued pages will not be read. */
  stopped(): void {
    this.pending.clear();
    this.readingSince = null;
  }

  get reading(): boolean {
    return this.pending.size > 0;
  }

  figures(): ProgressFigures {
    const states = [...this.finished.values()];
    const count = (what: Finish) => states.filter((s) => s === what).length;
    return {
      read: count("done") + count("fromCache") + count("looped"),
      total: this.total,
      failed: count("failed"),
      looped: count("looped"),
      cacheHits: count("fromCache"),
      pending: this.pending.size,
      tokensPerS: this.tokensPerS(),
      etaS: this.etaS(),
      pagesAtOnce: this.pagesAtOnce,
    };
  }

  private countTokens(tokens: number): void {
    const at = this.now();
    if (this.tokens.total === 0) this.tokens.first = at;
    if (at === this.tokens.first) this.tokens.opening += tokens;
    this.tokens.total += tokens;
    this.tokens.last = at;
    this.recent.push({ at, tokens });
    while (this.recent.length > 0 && this.recent[0]!.at < at - RATE_WINDOW_MS) this.recent.shift();
  }

  /** The first delta's tokens open the span rather than fall in it: counting them over the few ms since they
   *  came in showed tens of thousands of tokens/s as a reading began. */
  private tokensPerS(): number | null {
    const { total, first, last, opening } = this.tokens;
    if (total === 0) return null;
    if (!this.reading) {
      // Idle: the pace of the whole reading, which stays on screen afterwards.
      const seconds = (last - first) / 1000;
      return seconds > 0 ? (total - opening) / seconds : null;
    }
    const now = this.now();
    const since = Math.max(now - RATE_WINDOW_MS, first);
    const inWindow = this.recent.filter((r) => r.at >= since).reduce((sum, r) => sum + r.tokens, 0);
    const counted = since === first ? inWindow - opening : inWindow;
    if (since === first && counted === 0) return null;
    return now > since ? counted / ((now - since) / 1000) : null;
  }

  private etaS(): number | null {
    if (this.readingSince === null || this.readByRecognizer === 0 || this.pending.size === 0) return null;
    const perPage = (this.now() - this.readingSince) / 1000 / this.readByRecognizer;
    return perPage * this.pending.size;
  }
}

/** The status bar's line: "12 of 25 pages read · 1,024 tokens/s · 0:42 left · 3 from cache", and why the reading
 * slowed when GPU memory ran short. */
export function describeProgress(figures: ProgressFigures): string {
  const parts = [`${figures.read} of ${figures.total} pages read`];
  if (figures.tokensPerS !== null) parts.push(`${Math.round(figures.tokensPerS).toLocaleString("en-US")} tokens/s`);
  if (figures.etaS !== null) parts.push(`${clock(figures.etaS)} left`);
  parts.push(`${figures.cacheHits} from cache`);
  if (figures.looped > 0) parts.push(`${figures.looped} looped`);
  if (figures.failed > 0) parts.push(`${figures.failed} failed`);
  if (figures.pagesAtOnce !== null) {
    const pages = figures.pagesAtOnce === 1 ? "1 page" : `${figures.pagesAtOnce} pages`;
    parts.push(`GPU memory is short: ${pages} at a time`);
  }
  return parts.join(" · ");
}

/** Seconds as m:ss, or h:mm:ss past an hour. */
export function clock(seconds: number): string {
  const whole = Math.max(0, Math.ceil(seconds));
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  const pad = (n: number) => String(n).padStart(2, "0");
  return h > 0 ? `${h}:${pad(m)}:${pad(s)}` : `${m}:${pad(s)}`;
}
