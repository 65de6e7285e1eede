// The Export dialog (Ctrl+E, the Export button): which formats to write, how an EPUB is cut into
// chapters, and, when files of an earlier export are in the folder, whether to replace them. Rust picks
// the folder and writes; the dialog remembers the choice for the next start.
import type { AlreadyThere, Exported, ExportOutcome } from "../api";
import { checkRow, el } from "../dom";
import { fillSelect } from "../reading/modes";
import {
  CHAPTER_OPTIONS,
  chaptersFromValue,
  chaptersValue,
  describeExisting,
  EXPORT_STORAGE_KEY,
  FORMAT_OPTIONS,
  inFormatOrder,
  parseExportChoice,
  type ExportChoice,
  type ExportFormat,
} from "./export-choice";

/** The command the dialog calls (api.ts's; tests give their own). `replaceIn` names the folder of an
 * earlier answer, whose outputs are then replaced. */
export interface ExportApi {
  exportDocument(id: string, choice: ExportChoice, replaceIn?: string): Promise<ExportOutcome>;
}

export class ExportDialog {
  private readonly form: HTMLFormElement;
  private readonly checkboxes: Record<ExportFormat, HTMLInputElement>;
  private readonly chaptersRow: HTMLElement;
  private readonly chapters: HTMLSelectElement;
  private readonly question: HTMLElement;
  private readonly error: HTMLElement;
  private readonly cancelButton: HTMLButtonElement;
  private readonly replaceButton: HTMLButtonElement;
  private readonly confirmButton: HTMLButtonElement;
  private documentId = "";
  private onWritten: (exported: Exported) => void = () => {};
  /** The outputs the last answer found in the folder, while the dialog asks about replacing them. */
  private existing: AlreadyThere | null = null;
  private busy = false;

  constructor(
    private readonly dialog: HTMLDialogElement,
    private readonly api: ExportApi,
    private readonly storage: Storage = localStorage,
  ) {
    dialog.replaceChildren();
    dialog.classList.add("settings-dialog");
    dialog.setAttribute("aria-labelledby", "export-title");
    this.form = el("form", { className: "settings-form" });
    const heading = el("h2", { id: "export-title", textContent: "Export" });

    const formats = el("fieldset", { className: "export-formats" });
    formats.append(el("legend", { textContent: "Formats" }));
    this.checkboxes = Object.fromEntries(
      FORMAT_OPTIONS.map((option) => [option.value, checkbox(formats, option.value, option.label)]),
    ) as Record<ExportFormat, HTMLInputElement>;
    this.chapters = el("select", { id: "export-epub-chapters" });
    fillSelect(this.chapters, CHAPTER_OPTIONS, "document");
    this.chaptersRow = el("div", { className: "settings-field export-chapters" });
    this.chaptersRow.append(el("label", { htmlFor: this.chapters.id, textContent: "EPUB chapters" }), this.chapters);
    this.checkboxes.epub.parentElement!.after(this.chaptersRow);

    this.question = el("p", { id: "export-existing", className: "settings-warning" });
    this.question.setAttribute("role", "alert");
    this.error = el("p", { id: "export-error", className: "settings-error" });
    this.error.setAttribute("role", "alert");
    const buttons = el("div", { className: "settings-buttons" });
    this.cancelButton = el("button", { id: "export-cancel", type: "button", textContent: "Cancel" });
    this.replaceButton = el("button", { id: "export-replace", type: "button", textContent: "Replace" });
    this.confirmButton = el("button", { id: "export-confirm", type: "submit", textContent: "Export…" });
    buttons.append(this.cancelButton, this.replaceButton, this.confirmButton);
    this.form.append(heading, formats, this.question, this.error, buttons);
    dialog.append(this.form);

    // A changed choice is another export: the question about the last one's files no longer applies.
    this.form.addEventListener("change", () => this.ask(null));
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.export();
    });
    this.cancelButton.addEventListener("click", () => this.close());
    this.replaceButton.addEventListener("click", () => void this.export(this.existing?.folder));
    dialog.addEventListener("keydown", (event) => {
      // Keys typed here are the dialog's: the window's shortcuts (Esc stops reading) are not for them.
      event.stopPropagation();
      if (event.key === "Escape") {
        event.preventDefault();
        if (!this.busy) this.close();
      }
    });
  }

  get isOpen(): boolean {
    return this.dialog.open;
  }

  /** Opens the dialog on the last choice for document `id`; `onWritten` hears of a finished export. */
  open(id: string, onWritten: (exported: Exported) => void): void {
    this.documentId = id;
    this.onWritten = onWritten;
    this.fill(parseExportChoice(this.storage.getItem(EXPORT_STORAGE_KEY)));
    this.say("");
    this.ask(null);
    if (!this.dialog.open) this.dialog.showModal();
    this.checkboxes[FORMAT_OPTIONS[0]!.value].focus();
  }

  close(): void {
    this.dialog.close();
  }

  private read(): ExportChoice {
    const checked = FORMAT_OPTIONS.map((option) => option.value).filter((format) => this.checkboxes[format].checked);
    return { formats: inFormatOrder(checked), epubChapters: chaptersFromValue(this.chapters.value) };
  }

  private fill(choice: ExportChoice): void {
    for (const option of FORMAT_OPTIONS) this.checkboxes[option.value].checked = choice.formats.includes(option.value);
    this.chapters.value = chaptersValue(choice.epubChapters);
  }

  /** Asks whether to replace the outputs an answer found, or (null) stops asking; shows the choice's state. */
  private ask(existing: AlreadyThere | null): void {
    this.existing = existing;
    this.question.textContent = existing ? describeExisting(existing.folder, existing.files) : "";
    this.question.hidden = existing === null;
    this.replaceButton.hidden = existing === null;
    this.confirmButton.hidden = existing !== null;
    this.showChoice();
  }

  private showChoice(): void {
    this.chaptersRow.hidden = !this.checkboxes.epub.checked;
    const none = this.read().formats.length === 0;
    this.confirmButton.disabled = this.busy || none;
    // An export under way is seen through: its outcome (the question, an error) is shown here.
    this.replaceButton.disabled = this.busy;
    this.cancelButton.disabled = this.busy;
    this.confirmButton.title = none ? "Check a format to export" : "Choose a folder and write the formats checked";
  }

  /** Exports the choice on screen; into `replaceIn`, replacing what is there, after the question. */
  private async export(replaceIn?: string): Promise<void> {
    const choice = this.read();
    if (choice.formats.length === 0 || this.busy) return;
    this.storage.setItem(EXPORT_STORAGE_KEY, JSON.stringify(choice));
    this.say("");
    this.setBusy(true);
    let outcome: ExportOutcome | null = null;
    try {
      outcome = await this.api.exportDocument(this.documentId, choice, replaceIn);
    } catch (error) {
      this.ask(null);
      this.say(String(error));
    }
    // The buttons come back before the outcome is shown, so that the question can focus one.
    this.setBusy(false);
    if (outcome) this.show(outcome);
  }

  private show(outcome: ExportOutcome): void {
    switch (outcome.outcome) {
      case "cancelled":
        // The person closed the folder dialog: the choice stays on screen for another try or Cancel.
        return;
      case "alreadyThere":
        this.ask(outcome);
        this.cancelButton.focus();
        return;
      case "written":
        this.close();
        this.onWritten(outcome);
        return;
    }
  }

  private setBusy(busy: boolean): void {
    this.busy = busy;
    this.dialog.dataset["busy"] = String(busy);
    this.showChoice();
  }

  private say(message: string): void {
    this.error.textContent = message;
    this.error.hidden = message === "";
  }
}

function checkbox(parent: HTMLElement, format: ExportFormat, text: string): HTMLInputElement {
  return checkRow(parent, el("input", { type: "checkbox", id: `export-format-${format}`, value: format }), text);
}
