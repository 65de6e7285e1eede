// What a reading reports, page by page (and its rare notices): the TypeScript mirror of `PageEvent` in
// crates/core/src/events.rs (serde: a `type` tag, camelCase fields, `Option` as null).

/** A layout box in the model's normalised coordinates: 0..=999 of the page, x1 <= x2, y1 <= y2. */
export interface BoxNorm {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** The largest normalised coordinate; the reference divides by it, not by 1000. */
export const COORD_MAX = 999;

/** One layout block of a page, as the page's final result lists it. */
export interface Block {
  /** 0-based position of the block on its page. */
  id: number;
  label: string;
  /** Empty when the model wrote no box. */
  boxes: BoxNorm[];
  markdown: string;
  warning: string | null;
}

export interface PageStats {
  promptTokens: number;
  generatedTokens: number;
  visionMs: number;
  prefillMs: number;
  decodeMs: number;
  tokensPerS: number;
  recognizer: string;
}

/** Why a page was stopped as a loop (crates/core/src/sentinel). */
export type LoopReason =
  | { kind: "repeatedText"; window: number; novelty: number }
  | { kind: "repeatedBox"; bbox: BoxNorm; count: number }
  | { kind: "repeatedBlockText"; count: number }
  | { kind: "budgetSpent"; tokens: number; budget: number };

export type PageEvent =
  | { type: "queued"; page: number }
  | { type: "started"; page: number }
  /** `tokens`: generated tokens behind the text (0 when the reader has none). */
  | { type: "delta"; page: number; text: string; tokens: number }
  | {
      type: "blockOpened";
      page: number;
      blockId: number;
      label: string;
      boxes: BoxNorm[];
      warning: string | null;
    }
  | { type: "blockText"; page: number; blockId: number; delta: string }
  | { type: "blockClosed"; page: number; blockId: number }
  | { type: "done"; page: number; markdown: string; blocks: Block[]; stats: PageStats }
  | { type: "failed"; page: number; error: string }
  | { type: "looped"; page: number; markdown: string; blocks: Block[]; reason: LoopReason }
  | { type: "fromCache"; page: number };

/** What a reading says of itself rather than of one page: GPU memory ran short, so from now on it reads at most
 * `pagesAtOnce` pages together (said once a reading). */
export type ReadingNotice = { type: "fewerPagesAtOnce"; pagesAtOnce: number };

/** A page with the person's corrections laid over it (src-tauri/src/corrections.rs). */
export interface CorrectedPage {
  page: number;
  /** The page's Markdown with the corrections in place. */
  markdown: string;
  /** The page's blocks, corrected ones showing the person's Markdown. */
  blocks: Block[];
  /** Ids of the blocks that show a person's correction. */
  corrected: number[];
  /** Ids of the blocks the person added (a region read again): after the reading's blocks, never in `corrected`. */
  added: number[];
  /** Corrections the latest reading no longer matches: the person chooses to keep or drop each. */
  differing: DifferingCorrection[];
}

export interface DifferingCorrection {
  /** The block id the correction was stored under (the key to keep or drop it by). */
  correctedBlock: number;
  /** The person's Markdown. */
  mine: string;
  /** The block of the new reading where the corrected one was (its boxes overlap most), or null. */
  block: number | null;
  /** That block's Markdown now ("" when block is null). */
  now: string;
}

/** Sent right after the `done` or `looped` of a page that has corrections stored (only then). Not a
 * `PageEvent`: the core's readings know nothing of corrections, the window lays them over. */
export type CorrectedEvent = { type: "corrected" } & CorrectedPage;

/** Everything a reading's channel carries. */
export type ReadingEvent = PageEvent | CorrectedEvent | ReadingNotice;

export type PageEventType = PageEvent["type"];

/** The event of one type, e.g. `EventOf<"blockOpened">`. */
export type EventOf<T extends PageEventType> = Extract<PageEvent, { type: T }>;

/** Words for a loop reason, as the Rust side's `Display` says them. */
export function describeLoop(reason: LoopReason): string {
  switch (reason.kind) {
    case "repeatedText":
      return `the same text again and again (${Math.round(reason.novelty * 100)}% new in the last ${reason.window} characters)`;
    case "repeatedBox": {
      const b = reason.bbox;
      return `the same box [${b.x1}, ${b.y1}, ${b.x2}, ${b.y2}] ${reason.count} times`;
    }
    case "repeatedBlockText":
      return `the same block text ${reason.count} times in a row`;
    case "budgetSpent":
      return `${reason.tokens} of ${reason.budget} tokens spent without reaching the end`;
  }
}
