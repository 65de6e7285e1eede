// The form that corrects a block's Markdown in the Markdown pane (a double-click, or `e` on the selected
// block). It stands just before the block, which is hidden meanwhile: the renderer rewrites the block's
// content, never the form. One at a time; Ctrl+Enter saves, Esc cancels.
import type { CorrectedPage } from "../events";
import { el } from "../dom";
import type { BlockMark } from "../markdown/streaming-renderer";
import { sendCommand, type CommandShown, type CorrectionApi, type OnAnswer } from "./corrected-page";
import "./corrections.css";

export interface EditedBlock {
  page: number;
  blockId: number;
  /** The block's element in the Markdown pane, hidden while the editor stands in for it. */
  element: HTMLElement;
  /** The block's Markdown as the pane shows it: a corrected block's is the correction. */
  markdown: string;
  /** Whose text it shows: a correction the editor can drop for the reading's text, a block the person added,
   * which the editor can remove, or (null) the reading's. */
  mark: BlockMark | null;
}

/** The textarea's height, in rows, whatever the block's length. */
const MIN_ROWS = 3;
const MAX_ROWS = 24;

/** Rows for `markdown`: a line each and one to grow into, within bounds. */
export function rowsFor(markdown: string): number {
  return Math.min(MAX_ROWS, Math.max(MIN_ROWS, markdown.split("\n").length + 1));
}

/** The button that drops the person's text: back to the reading's, or the block added gone. */
const REVERTS: Record<BlockMark, { textContent: string; title: string }> = {
  corrected: { textContent: "Use the reading's text", title: "Drop your correction: the block shows what the model read" },
  added: { textContent: "Remove this block", title: "Remove the block you added: the page and its exports lose it" },
};

/** An editor open on a block. */
interface Editing {
  block: EditedBlock;
  form: HTMLFormElement;
  text: HTMLTextAreaElement;
  error: HTMLElement;
  busy: boolean;
}

export class BlockEditor {
  private editing: Editing | null = null;

  constructor(
    private readonly documentId: string,
    private readonly api: CorrectionApi,
    private readonly onAnswer: OnAnswer,
  ) {}

  /** Opens the editor on `block`, closing (as Cancel) one open on another; one open on it keeps what was typed. */
  edit(block: EditedBlock): void {
    const open = this.editing?.block;
    if (open?.page === block.page && open.blockId === block.blockId) {
      this.editing?.text.focus();
      return;
    }
    this.close();
    const editing = this.form(block);
    this.editing = editing;
    block.element.before(editing.form);
    block.element.hidden = true;
    editing.text.focus();
  }

  /** Closes the editor, if open; the block shows again as it was. */
  close(): void {
    if (!this.editing) return;
    this.editing.form.remove();
    this.editing.block.element.hidden = false;
    this.editing = null;
  }

  /** A page read again loses its editor, as it loses its blocks. */
  closePage(page: number): void {
    if (this.editing?.block.page === page) this.close();
  }

  /** The page now shows other blocks, without the one edited: the editor goes too. */
  closeIfGone(): void {
    if (this.editing && !this.editing.block.element.isConnected) this.close();
  }

  private form(block: EditedBlock): Editing {
    const form = el("form", { className: "block-editor" });
    const text = el("textarea", {
      className: "block-editor-text",
      value: block.markdown,
      rows: rowsFor(block.markdown),
      spellcheck: false,
    });
    text.setAttribute("aria-label", `Markdown of block ${block.blockId + 1} of page ${block.page + 1}`);
    const error = el("p", { className: "block-editor-error", hidden: true });
    error.setAttribute("role", "alert");
    const buttons = el("div", { className: "block-editor-buttons" });
    const hint = el("span", { className: "block-editor-hint", textContent: "Ctrl+Enter saves, Esc cancels" });
    const cancel = el("button", { type: "button", className: "block-editor-cancel", textContent: "Cancel" });
    const save = el("button", { type: "submit", className: "block-editor-save", textContent: "Save" });
    buttons.append(hint);
    const editing: Editing = { block, form, text, error, busy: false };
    if (block.mark) {
      const revert = el("button", { type: "button", className: "block-editor-revert", ...REVERTS[block.mark] });
      revert.addEventListener("click", () => void this.revert(editing));
      buttons.append(revert);
    }
    buttons.append(cancel, save);
    form.append(text, error, buttons);

    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.save(editing);
    });
    cancel.addEventListener("click", () => this.closeIfOpen(editing));
    text.addEventListener("input", () => (text.rows = rowsFor(text.value)));
    form.addEventListener("keydown", (event) => {
      // Keys typed here are the editor's: the window's shortcuts (Esc stops reading, Ctrl+C copies the
      // selected block, j/k/e step and edit blocks) are not for them.
      event.stopPropagation();
      if (event.key === "Escape") {
        event.preventDefault();
        if (!editing.busy) this.closeIfOpen(editing);
      } else if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        void this.save(editing);
      }
    });
    return editing;
  }

  private closeIfOpen(editing: Editing): void {
    if (this.editing === editing) this.close();
  }

  private save(editing: Editing): Promise<void> {
    const { page, blockId } = editing.block;
    const markdown = editing.text.value;
    return this.send(editing, () =>
      this.api.correctBlock({ id: this.documentId, page, blockId, markdown, replacing: null }),
    );
  }

  private revert(editing: Editing): Promise<void> {
    const { page, blockId } = editing.block;
    return this.send(editing, () => this.api.forgetCorrection({ id: this.documentId, page, blockId }));
  }

  /** One command at a time: its answer closes the editor and is shown; a refusal is said in the editor,
   * which keeps what the person typed. */
  private async send(editing: Editing, command: () => Promise<CorrectedPage>): Promise<void> {
    if (editing.busy) return;
    const answer = await sendCommand(shownOn(editing), command);
    if (!answer) return;
    // Kept in the cache even if the editor was closed meanwhile: the page shows it all the same.
    this.closeIfOpen(editing);
    this.onAnswer(answer, editing.block.blockId);
  }
}

function shownOn(editing: Editing): CommandShown {
  return { busy: (busy) => setBusy(editing, busy), say: (message) => say(editing, message) };
}

function setBusy(editing: Editing, busy: boolean): void {
  editing.busy = busy;
  editing.form.dataset["busy"] = String(busy);
  editing.text.readOnly = busy;
  for (const button of editing.form.querySelectorAll("button")) button.disabled = busy;
}

function say(editing: Editing, message: string): void {
  editing.error.textContent = message;
  editing.error.hidden = message === "";
}
