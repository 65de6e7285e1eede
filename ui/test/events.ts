// Event streams for tests, synthesised from real captures the way the Rust parser reports them.
import type { Block, PageEvent, PageStats } from "../src/events";
import { capturedBlocks } from "./fixtures";

/** The blocks of a capture as the parser keeps them: content without the separating newlines. */
export function blocksOf(capture: string): Block[] {
  // The capture's trailer (`=====...`) is the script's, not the model's.
  const output = capture.split(/\n={10,}\n/).find((part) => part.includes("<|ref|>")) ?? capture;
  return capturedBlocks(output).map((b, id) => ({
    id,
    label: b.label,
    boxes: b.boxes,
    markdown: b.body.replace(/^\n/, "").replace(/\s+$/, ""),
    warning: null,
  }));
}

export const STATS: PageStats = {
  promptTokens: 1,
  generatedTokens: 1,
  visionMs: 0,
  prefillMs: 0,
  decodeMs: 0,
  tokensPerS: 1,
  recognizer: "test",
};

/** The events of reading `blocks` on `page`, each block's Markdown cut into pieces of `chunk` characters. */
export function streamEvents(page: number, blocks: Block[], chunk: number): PageEvent[] {
  const events: PageEvent[] = [{ type: "started", page }];
  for (const b of blocks) {
    events.push({ type: "blockOpened", page, blockId: b.id, label: b.label, boxes: b.boxes, warning: null });
    const chars = [...b.markdown];
    for (let at = 0; at < chars.length; at += chunk) {
      events.push({ type: "blockText", page, blockId: b.id, delta: chars.slice(at, at + chunk).join("") });
    }
    events.push({ type: "blockClosed", page, blockId: b.id });
  }
  return events;
}
