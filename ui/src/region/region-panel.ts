// The panel under a region drawn on the page: it reads the region again (the model may take seconds), shows
// its Markdown to edit and who read it, and keeps the text as a new block with the region as its box, or in
// place of the block the region covers most. One at a time. A plain element beside the region, not a modal
// dialog: the page stays usable, and the desktop tests' WebDriver screenshots hang on modal dialogs.
import type { AddedBlock, BlockCorrection, RegionRead, RegionRequest } from "../api";
import { rowsFor } from "../corrections/block-editor";
import { sendCommand } from "../corrections/corrected-page";
import { el } from "../dom";
import type { BoxNorm, CorrectedPage } from "../events";
import type { PageStatus } from "../markdown/streaming-renderer";
import type { ReadingChoice } from "../reading/modes";
import "./region.css";

/** The commands (api.ts's; tests give their own). */
export interface RegionApi {
  readRegion(request: RegionRequest): Promise<RegionRead>;
  addBlock(block: AddedBlock): Promise<CorrectedPage>;
  correctBlock(correction: BlockCorrection): Promise<CorrectedPage>;
}

export interface RegionPanelHooks {
  /** Puts the panel on screen, beside the region drawn. */
  show: (panel: HTMLElement) => void;
  /** The panel went (cancelled, or its text kept): the region drawn goes too. */
  closed: () => void;
  /** A command kept the text: the page as it now shows, and the status bar's line for it. */
  answered: (answer: CorrectedPage, message: string) => void;
}

/** A region of a page to read, with the mode to read it with. */
export interface AskedRegion {
  page: number;
  region: BoxNorm;
  choice: ReadingChoice;
}

/** The panel open on a region. */
interface Opened {
  page: number;
  element: HTMLElement;
  status: HTMLElement;
  text: HTMLTextAreaElement;
  error: HTMLElement;
  add: HTMLButtonElement;
  replace: HTMLButtonElement;
  /** What the region read as, once read. */
  read: RegionRead | null;
  busy: boolean;
}

export class RegionPanel {
  private opened: Opened | null = null;
  /** Esc anywhere cancels the panel, not the reading (the window's Esc). */
  private readonly escape = (event: KeyboardEvent) => {
    if (event.key !== "Escape" || !this.opened) return;
    // A panel taken off the screen (another document's page shown) no longer has the key, nor the region
    // drawn now, which is another panel's.
    if (!this.opened.element.isConnected) {
      this.remove();
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    if (!this.opened.busy) this.close();
  };

  constructor(
    private readonly documentId: string,
    private readonly api: RegionApi,
    private readonly hooks: RegionPanelHooks,
  ) {}

  /** Opens the panel on `asked` and reads the region; a panel open on another region makes way, unread. */
  open(asked: AskedRegion): void {
    this.remove();
    const opened = this.panel(asked);
    this.opened = opened;
    document.addEventListener("keydown", this.escape);
    this.hooks.show(opened.element);
    // The keys go to the panel (Esc cancels it) until the text is read and the field takes them.
    opened.element.focus({ preventScroll: true });
    opened.element.scrollIntoView({ block: "nearest" });
    void this.read(opened, asked);
  }

  /** Closes the panel, if open: what it read is dropped, a command on its way still lands. */
  close(): void {
    if (!this.opened) return;
    this.remove();
    this.hooks.closed();
  }

  /** A page read again has no blocks to add to or replace until it is done. */
  closePage(page: number): void {
    if (this.opened?.page === page) this.close();
  }

  private remove(): void {
    this.opened?.element.remove();
    this.opened = null;
    document.removeEventListener("keydown", this.escape);
  }

  private panel(asked: AskedRegion): Opened {
    const element = el("div", { id: "region-panel", className: "region-panel", tabIndex: -1 });
    element.setAttribute("role", "group");
    element.setAttribute("aria-label", `Region of page ${asked.page + 1}`);
    const status = el("p", { className: "region-status" });
    const text = el("textarea", { id: "region-text", className: "region-text", hidden: true, spellcheck: false });
    text.setAttribute("aria-label", "Markdown of the region");
    const error = el("p", { id: "region-error", className: "region-error", hidden: true });
    error.setAttribute("role", "alert");
    const add = el("button", { type: "button", id: "region-add", textContent: "Add as a block", hidden: true });
    add.title = `Add the text as a new block of page ${asked.page + 1}, with the region as its box`;
    const replace = el("button", { type: "button", id: "region-replace", hidden: true });
    const cancel = el("button", { type: "button", id: "region-cancel", textContent: "Cancel", title: "Drop the region (Esc)" });
    const buttons = el("div", { className: "region-buttons" });
    buttons.append(add, replace, cancel);
    element.append(status, text, error, buttons);

    const opened: Opened = { page: asked.page, element, status, text, error, add, replace, read: null, busy: false };
    add.addEventListener("click", () => void this.add(opened));
    replace.addEventListener("click", () => void this.replace(opened));
    cancel.addEventListener("click", () => this.closeIfOpen(opened));
    text.addEventListener("input", () => (text.rows = rowsFor(text.value)));
    // Keys typed into the field are its own: the window's shortcuts (Esc stops reading, j/k/e step and edit
    // blocks, Ctrl+C copies the selected block) are not for them. Esc elsewhere is heard by `escape`.
    text.addEventListener("keydown", (event) => {
      event.stopPropagation();
      if (event.key === "Escape") {
        event.preventDefault();
        if (!opened.busy) this.closeIfOpen(opened);
      }
    });
    setState(opened, "reading", "Reading the region…");
    return opened;
  }

  private async read(opened: Opened, asked: AskedRegion): Promise<void> {
    const { page, region, choice } = asked;
    let read: RegionRead;
    try {
      read = await this.api.readRegion({ id: this.documentId, page, region, ...choice });
    } catch (error) {
      if (this.opened !== opened) return;
      setState(opened, "failed", "The region could not be read.");
      say(opened, String(error));
      return;
    }
    if (this.opened !== opened) return;
    opened.read = read;
    this.showRead(opened, read);
  }

  private showRead(opened: Opened, read: RegionRead): void {
    const { element, status, text, add, replace } = opened;
    setState(opened, "read", "Read by ");
    status.append(el("span", { className: "region-recognizer", textContent: read.recognizer }));
    if (read.looped) status.append(": it began to repeat itself and was stopped; the text before that is below.");
    element.dataset["label"] = read.label;
    text.value = read.markdown;
    text.rows = rowsFor(read.markdown);
    text.hidden = false;
    add.hidden = false;
    if (read.overlaps !== null) {
      const block = read.overlaps + 1;
      replace.textContent = `Replace block ${block}`;
      replace.title = `Use the text as block ${block}'s, in place of what it shows`;
      replace.hidden = false;
    }
    // The person waited on the panel (it has the focus): the text is theirs to edit now.
    if (element.contains(document.activeElement)) text.focus();
  }

  private add(opened: Opened): Promise<void> {
    const read = opened.read;
    if (!read) return Promise.resolve();
    const block = { id: this.documentId, page: read.page, region: read.region, label: read.label, markdown: opened.text.value };
    const message = `Block added to page ${read.page + 1} from the region read by ${read.recognizer}.`;
    return this.send(opened, () => this.api.addBlock(block), message);
  }

  private replace(opened: Opened): Promise<void> {
    const read = opened.read;
    if (!read || read.overlaps === null) return Promise.resolve();
    const blockId = read.overlaps;
    const correction = { id: this.documentId, page: read.page, blockId, markdown: opened.text.value, replacing: null };
    const message = `Block ${blockId + 1} of page ${read.page + 1} replaced by the region read by ${read.recognizer}.`;
    return this.send(opened, () => this.api.correctBlock(correction), message);
  }

  /** One command at a time: its answer closes the panel and is shown; a refusal is said in the panel, which
   * keeps the text. */
  private async send(opened: Opened, command: () => Promise<CorrectedPage>, message: string): Promise<void> {
    if (opened.busy) return;
    const shown = { busy: (busy: boolean) => setBusy(opened, busy), say: (message: string) => say(opened, message) };
    const answer = await sendCommand(shown, command);
    if (!answer) return;
    // Kept in the cache even if the panel was closed meanwhile: the page shows it all the same.
    this.closeIfOpen(opened);
    this.hooks.answered(answer, message);
  }

  private closeIfOpen(opened: Opened): void {
    if (this.opened === opened) this.close();
  }
}

/** The status bar's words when the page shown cannot have a region read: it has no blocks yet. */
export function describeUnread(page: number, status: PageStatus | undefined): string {
  const name = `Page ${page + 1}`;
  switch (status) {
    case "reading":
      return `${name} is being read: read a region of it once it is done.`;
    case "failed":
      return `${name} could not be read: retry it, then read a region of it.`;
    default:
      return `${name} is not read yet: read it, then read a region of it.`;
  }
}

function setState(opened: Opened, state: "reading" | "read" | "failed", status: string): void {
  opened.element.dataset["state"] = state;
  opened.status.textContent = status;
}

function setBusy(opened: Opened, busy: boolean): void {
  opened.busy = busy;
  opened.element.dataset["busy"] = String(busy);
  opened.text.readOnly = busy;
  for (const button of opened.element.querySelectorAll("button")) button.disabled = busy;
}

function say(opened: Opened, message: string): void {
  opened.error.textContent = message;
  opened.error.hidden = message === "";
}
