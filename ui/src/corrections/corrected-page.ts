// What the Markdown pane's corrections share: the commands that keep and drop them, which pages can be
// corrected, and the status bar's words for a command's answer.
import type { BlockCorrection, CorrectedBlock } from "../api";
import type { CorrectedPage } from "../events";
import type { PageStatus } from "../markdown/streaming-renderer";

/** The commands (api.ts's; tests give their own). Each resolves with the page as it now shows. */
export interface CorrectionApi {
  correctBlock(correction: BlockCorrection): Promise<CorrectedPage>;
  forgetCorrection(block: CorrectedBlock): Promise<CorrectedPage>;
}

/** Hears a command's answer, and the block it concerns (null: a correction with no block now). */
export type OnAnswer = (answer: CorrectedPage, blockId: number | null) => void;

/** A page's blocks are corrected once it is read: a page being read has no blocks to keep a correction under. */
export function canCorrect(status: PageStatus | undefined): boolean {
  return status === "done" || status === "fromCache" || status === "looped";
}

/** The status bar's words for what a command's answer shows of `blockId`. */
export function describeCorrected(answer: CorrectedPage, blockId: number | null): string {
  const page = answer.page + 1;
  if (blockId === null) return `Your correction on page ${page} was dropped.`;
  if (answer.added.includes(blockId)) return `The block you added to page ${page} was changed: exports use your text.`;
  // Only a block the person added leaves the page when its text is dropped.
  if (!answer.blocks.some((b) => b.id === blockId)) return `The block you added to page ${page} was removed.`;
  const block = `Block ${blockId + 1} of page ${page}`;
  return answer.corrected.includes(blockId)
    ? `${block} corrected: exports use your text.`
    : `${block} shows the reading's text.`;
}

/** Where a command is asked from (the editor, a prompt, the region panel): it shows the command under way and
 * says a refusal. */
export interface CommandShown {
  busy(busy: boolean): void;
  say(message: string): void;
}

/** Runs `command`, shown on `shown`: its answer, or null once its refusal is said (the form keeps its text). */
export async function sendCommand(
  shown: CommandShown,
  command: () => Promise<CorrectedPage>,
): Promise<CorrectedPage | null> {
  shown.busy(true);
  shown.say("");
  try {
    return await command();
  } catch (error) {
    shown.busy(false);
    shown.say(String(error));
    return null;
  }
}
