// The question a page asks when it was read again where the person had corrected it, and the new reading
// wrote other text there: keep their correction, or use the new reading. One per differing correction,
// just before the block now where the corrected one was.
import type { CorrectedPage, DifferingCorrection } from "../events";
import { el } from "../dom";
import { sendCommand, type CorrectionApi, type OnAnswer } from "./corrected-page";
import "./corrections.css";

/** A prompt on screen, and where it says why a command was refused. */
interface Prompt {
  element: HTMLElement;
  error: HTMLElement;
}

export class CorrectionPrompts {
  constructor(
    private readonly documentId: string,
    private readonly api: CorrectionApi,
    private readonly onAnswer: OnAnswer,
  ) {}

  /** Replaces the prompts of a page's `section` with one per correction `corrected` says differs;
   * `blockElement` finds a block's element to put its prompt before. */
  show(section: HTMLElement, corrected: CorrectedPage, blockElement: (blockId: number) => HTMLElement | undefined): void {
    this.remove(section);
    for (const differing of corrected.differing) {
      const prompt = this.prompt(corrected.page, differing);
      const block = differing.block === null ? undefined : blockElement(differing.block);
      if (block) block.before(prompt);
      else section.insertBefore(prompt, section.querySelector(":scope > .page-notice"));
    }
  }

  /** The page is read again: what its prompts asked about is no longer there. */
  remove(section: HTMLElement): void {
    for (const prompt of section.querySelectorAll(":scope > .correction-prompt")) prompt.remove();
  }

  private prompt(page: number, differing: DifferingCorrection): HTMLElement {
    const element = el("div", { className: "correction-prompt" });
    element.setAttribute("role", "group");
    element.dataset["correctedBlock"] = String(differing.correctedBlock);
    const question = el("p", {
      className: "correction-prompt-text",
      textContent:
        differing.block === null
          ? "You corrected a block of this page, and the page was read again with nothing where it was."
          : "You corrected this block, and the page was read again with different text here.",
    });
    const mine = el("details", { className: "correction-mine" });
    // The person's Markdown as written: text, never HTML.
    mine.append(el("summary", { textContent: "Your correction" }), el("pre", { textContent: differing.mine }));
    const error = el("p", { className: "correction-prompt-error", hidden: true });
    error.setAttribute("role", "alert");
    const keep = el("button", { type: "button", className: "correction-keep", textContent: "Keep mine" });
    const drop = el("button", { type: "button", className: "correction-drop", textContent: "Use the new reading" });
    keep.title =
      differing.block === null
        ? "Keep your correction stored: it is offered again when the page is read again"
        : "Show your correction in place of the new text";
    drop.title = "Drop your correction";
    const buttons = el("div", { className: "correction-prompt-buttons" });
    buttons.append(keep, drop);
    element.append(question, mine, error, buttons);

    const prompt = { element, error };
    keep.addEventListener("click", () => void this.keep(prompt, page, differing));
    drop.addEventListener("click", () => void this.drop(prompt, page, differing));
    return element;
  }

  private keep(prompt: Prompt, page: number, differing: DifferingCorrection): Promise<void> {
    const blockId = differing.block;
    // No block to show it in: it stays stored, and the next reading offers it again.
    if (blockId === null) {
      prompt.element.remove();
      return Promise.resolve();
    }
    const correction = { id: this.documentId, page, blockId, markdown: differing.mine, replacing: differing.correctedBlock };
    return this.send(prompt, blockId, () => this.api.correctBlock(correction));
  }

  private drop(prompt: Prompt, page: number, differing: DifferingCorrection): Promise<void> {
    const stored = { id: this.documentId, page, blockId: differing.correctedBlock };
    return this.send(prompt, differing.block, () => this.api.forgetCorrection(stored));
  }

  /** The answer takes the prompt's place (the page shows the prompts still asked); a refusal is said in it. */
  private async send(prompt: Prompt, blockId: number | null, command: () => Promise<CorrectedPage>): Promise<void> {
    const shown = { busy: (busy: boolean) => setBusy(prompt, busy), say: (message: string) => say(prompt, message) };
    const answer = await sendCommand(shown, command);
    if (!answer) return;
    prompt.element.remove();
    this.onAnswer(answer, blockId);
  }
}

function setBusy(prompt: Prompt, busy: boolean): void {
  prompt.element.dataset["busy"] = String(busy);
  for (const button of prompt.element.querySelectorAll("button")) button.disabled = busy;
}

function say(prompt: Prompt, message: string): void {
  prompt.error.textContent = message;
  prompt.error.hidden = message === "";
}
