// The Markdown pane while pages are read: one section per page, one element per block
// (`data-block-id`). Deltas only mark a block dirty; once per animation frame each dirty block
// is rendered again, so a fast stream costs one render per block per frame, not one per token.
import { describeLoop, type Block, type BoxNorm, type CorrectedPage, type PageEvent } from "../events";
import { isFigure } from "./figure";
import { typesetMath } from "./math";
import "./markdown.css";

/** Markdown to HTML. In the app a Rust command that returns sanitized HTML, hence async. */
export type RenderBlock = (markdown: string) => Promise<string> | string;

/** Runs a callback before the next paint; requestAnimationFrame in the app, by hand in tests. */
export type FrameScheduler = (callback: () => void) => void;

export type PageStatus = "queued" | "reading" | "done" | "fromCache" | "failed" | "looped";

/** What a block the person corrected says on hover. */
export const CORRECTED_TITLE = "You corrected this block (double-click to edit)";
/** What a block the person added (a region read again) says on hover. */
export const ADDED_TITLE = "You added this block from a region of the page (double-click to edit)";

/** Whose text a block shows when not the reading's: the person's correction, or a block the person added. */
const MARKS = ["corrected", "added"] as const;
export type BlockMark = (typeof MARKS)[number];

const MARK_TITLES: Record<BlockMark, string> = { corrected: CORRECTED_TITLE, added: ADDED_TITLE };

export interface StreamingRendererOptions {
  renderBlock: RenderBlock;
  schedule?: FrameScheduler;
  /** Adds a page's own controls (a heading, buttons) when its section is made. */
  decoratePage?: (section: HTMLElement, page: number) => void;
  /** The figure an `image` block shows: the page under its boxes. */
  figure?: (page: number, boxes: readonly BoxNorm[]) => HTMLElement;
}

interface BlockState {
  readonly page: number;
  readonly element: HTMLElement;
  markdown: string;
  /** The Markdown last sent to renderBlock: the same text is never rendered twice. */
  requested: string | null;
  /** Bumped per render, so a slow async render cannot overwrite a newer one. */
  version: number;
  /** The figure shown above the block's text, and the boxes it was cropped for. */
  figure: { element: HTMLElement; boxes: string } | null;
  /** It shows the person's text (a correction, a block added), not the model's; null: the model's. */
  mark: BlockMark | null;
}

interface PageState {
  readonly section: HTMLElement;
  readonly blocks: Map<number, BlockState>;
}

export class StreamingRenderer {
  private readonly pages = new Map<number, PageState>();
  private readonly dirty = new Set<BlockState>();
  private readonly inFlight = new Set<Promise<void>>();
  private frameRequested = false;
  /** Source view: blocks show their Markdown as written, not rendered. */
  private source = false;
  private readonly renderBlock: RenderBlock;
  private readonly schedule: FrameScheduler;
  private readonly decoratePage: ((section: HTMLElement, page: number) => void) | undefined;
  private readonly figure: ((page: number, boxes: readonly BoxNorm[]) => HTMLElement) | undefined;

  constructor(
    private readonly root: HTMLElement,
    options: StreamingRendererOptions,
  ) {
    this.renderBlock = options.renderBlock;
    this.schedule = options.schedule ?? ((callback) => requestAnimationFrame(() => callback()));
    this.decoratePage = options.decoratePage;
    this.figure = options.figure;
    root.classList.add("markdown-document");
  }

  handle(event: PageEvent): void {
    switch (event.type) {
      case "queued":
        this.setStatus(event.page, "queued");
        break;
      case "started":
        // A re-read starts from nothing; what was shown is replaced as the new text arrives.
        this.clearPage(event.page);
        this.setStatus(event.page, "reading");
        break;
      case "delta":
        // Raw model text: the block events carry the same content, already parsed.
        break;
      case "blockOpened": {
        const block = this.ensureBlock(event.page, event.blockId);
        block.element.dataset["label"] = event.label;
        this.setFigure(block, event.label, event.boxes);
        this.setWriting(event.page, event.blockId);
        break;
      }
      case "blockText": {
        const block = this.ensureBlock(event.page, event.blockId);
        block.markdown += event.delta;
        this.markDirty(block);
        break;
      }
      case "blockClosed":
        this.pages.get(event.page)?.blocks.get(event.blockId)?.element.classList.remove("writing");
        break;
      case "done":
        this.showBlocks(event.page, event.blocks, this.status(event.page) === "fromCache" ? "fromCache" : "done");
        break;
      case "looped":
        this.showBlocks(event.page, event.blocks, "looped");
        this.setNotice(event.page, `Stopped: the model looped (${describeLoop(event.reason)}).`);
        break;
      case "failed":
        // What was already read stays on screen.
        this.setWriting(event.page, null);
        this.setStatus(event.page, "failed");
        this.setNotice(event.page, event.error);
        break;
      case "fromCache":
        this.setStatus(event.page, "fromCache");
        break;
    }
  }

  /** A page's final blocks, rendered now: the end of a reading, or a page from the cache. */
  showBlocks(page: number, blocks: readonly Block[], status: PageStatus): void {
    this.replaceBlocks(page, blocks);
    // The reading's own text; its corrections, if any, follow (showCorrected).
    this.markBlocks(page, { corrected: [], added: [] });
    this.setStatus(page, status);
    this.setNotice(page, null);
  }

  /** A page read, with the person's corrections over it: the blocks `marks` lists as corrected or added are
   * marked as theirs. Its status and notice (a loop's) stay. */
  showCorrected(page: number, blocks: readonly Block[], marks: Pick<CorrectedPage, "corrected" | "added">): void {
    this.replaceBlocks(page, blocks);
    this.markBlocks(page, marks);
  }

  /** Whose text a block shows: the person's (a correction, a block added), or null for the reading's. */
  mark(page: number, blockId: number): BlockMark | null {
    return this.pages.get(page)?.blocks.get(blockId)?.mark ?? null;
  }

  private markBlocks(page: number, marks: Pick<CorrectedPage, "corrected" | "added">): void {
    const corrected = new Set(marks.corrected);
    const added = new Set(marks.added);
    for (const [id, block] of this.ensurePage(page).blocks) {
      block.mark = corrected.has(id) ? "corrected" : added.has(id) ? "added" : null;
      wearMark(block);
    }
  }

  private replaceBlocks(page: number, blocks: readonly Block[]): void {
    const state = this.ensurePage(page);
    const keep = new Set(blocks.map((b) => b.id));
    for (const [id, block] of state.blocks) {
      if (keep.has(id)) continue;
      this.dirty.delete(block);
      block.element.remove();
      state.blocks.delete(id);
    }
    for (const final of [...blocks].sort((a, b) => a.id - b.id)) {
      const block = this.ensureBlock(page, final.id);
      block.element.dataset["label"] = final.label;
      this.setFigure(block, final.label, final.boxes);
      block.markdown = final.markdown;
      block.element.classList.remove("writing");
      // Final blocks do not wait for a frame: nothing else is coming for this page.
      this.dirty.delete(block);
      this.render(block);
    }
  }

  pageElement(page: number): HTMLElement | undefined {
    return this.pages.get(page)?.section;
  }

  blockElement(page: number, blockId: number): HTMLElement | undefined {
    return this.pages.get(page)?.blocks.get(blockId)?.element;
  }

  /** Rendered or source view; switching redraws every block from its Markdown. */
  setSource(source: boolean): void {
    if (source === this.source) return;
    this.source = source;
    this.root.classList.toggle("source-view", source);
    for (const page of this.pages.values()) {
      for (const block of page.blocks.values()) {
        // An empty block shows nothing in either view.
        block.requested = block.markdown === "" ? "" : null;
        block.version++; // a rendered view still on its way must not land in the source view
        this.render(block);
      }
    }
  }

  status(page: number): PageStatus | undefined {
    return this.pages.get(page)?.section.dataset["status"] as PageStatus | undefined;
  }

  /** Resolves once every render asked for so far has landed in the DOM. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  private markDirty(block: BlockState): void {
    this.dirty.add(block);
    if (this.frameRequested) return;
    this.frameRequested = true;
    this.schedule(() => this.flush());
  }

  private flush(): void {
    this.frameRequested = false;
    const blocks = [...this.dirty];
    this.dirty.clear();
    for (const block of blocks) this.render(block);
  }

  private render(block: BlockState): void {
    if (block.markdown === block.requested) return;
    block.requested = block.markdown;
    const version = ++block.version;
    if (this.source) {
      block.element.textContent = block.markdown;
      keepFigure(block);
      return;
    }
    const html = this.renderBlock(block.markdown);
    if (typeof html === "string") {
      this.apply(block, version, html);
      return;
    }
    const landing = html.then(
      (value) => this.apply(block, version, value),
      (error: unknown) => this.apply(block, version, null, error),
    );
    this.inFlight.add(landing);
    void landing.finally(() => this.inFlight.delete(landing));
  }

  private apply(block: BlockState, version: number, html: string | null, error?: unknown): void {
    if (version !== block.version) return;
    if (html === null) {
      // Show the source rather than nothing; the next change tries again.
      block.requested = null;
      block.element.textContent = block.markdown;
      keepFigure(block);
      block.element.title = `Could not render this block: ${String(error)}`;
      return;
    }
    // The HTML comes sanitized from the Rust side (architecture.md: model output is sanitized).
    block.element.innerHTML = html;
    typesetMath(block.element);
    keepFigure(block);
    // A failed render's title goes; a mark's stays.
    if (block.mark) block.element.title = MARK_TITLES[block.mark];
    else block.element.removeAttribute("title");
  }

  private ensurePage(page: number): PageState {
    let state = this.pages.get(page);
    if (state) return state;
    const section = document.createElement("section");
    section.className = "markdown-page";
    section.dataset["page"] = String(page);
    this.decoratePage?.(section, page);
    // Pages may start in any order (the page on screen first); keep the sections in page order.
    const after = [...this.pages.entries()].filter(([p]) => p > page).sort(([a], [b]) => a - b)[0];
    this.root.insertBefore(section, after ? after[1].section : null);
    state = { section, blocks: new Map() };
    this.pages.set(page, state);
    return state;
  }

  private ensureBlock(page: number, blockId: number): BlockState {
    const state = this.ensurePage(page);
    let block = state.blocks.get(blockId);
    if (block) return block;
    const element = document.createElement("div");
    element.className = "markdown-block";
    element.dataset["blockId"] = String(blockId);
    const after = [...state.blocks.entries()].filter(([id]) => id > blockId).sort(([a], [b]) => a - b)[0];
    state.section.insertBefore(element, after ? after[1].element : (state.section.querySelector(".page-notice") ?? null));
    // An empty block shows nothing, so there is nothing to render until text arrives.
    block = { page, element, markdown: "", requested: "", version: 0, figure: null, mark: null };
    state.blocks.set(blockId, block);
    return block;
  }

  /** An `image` block shows the page under its boxes, from the moment they are known. */
  private setFigure(block: BlockState, label: string, boxes: readonly BoxNorm[]): void {
    if (!this.figure || !isFigure(label) || boxes.length === 0) return;
    const key = JSON.stringify(boxes);
    if (block.figure?.boxes === key) return;
    block.figure?.element.remove();
    block.figure = { element: this.figure(block.page, boxes), boxes: key };
    keepFigure(block);
  }

  private clearPage(page: number): void {
    const state = this.pages.get(page);
    if (!state) return;
    for (const block of state.blocks.values()) {
      this.dirty.delete(block);
      block.version++; // drops renders still on their way
      block.element.remove();
    }
    state.blocks.clear();
    this.setNotice(page, null);
  }

  private setWriting(page: number, blockId: number | null): void {
    for (const [id, block] of this.pages.get(page)?.blocks ?? []) {
      block.element.classList.toggle("writing", id === blockId);
    }
  }

  private setStatus(page: number, status: PageStatus): void {
    this.ensurePage(page).section.dataset["status"] = status;
  }

  private setNotice(page: number, text: string | null): void {
    const section = this.ensurePage(page).section;
    let notice = section.querySelector<HTMLElement>(":scope > .page-notice");
    if (text === null) {
      notice?.remove();
      return;
    }
    if (!notice) {
      notice = document.createElement("p");
      notice.className = "page-notice";
      section.append(notice);
    }
    notice.textContent = text;
  }
}

/** A block of the person's wears its mark (class, attribute, title: `corrected` or `added`); renders keep it
 * (see apply). */
function wearMark(block: BlockState): void {
  const element = block.element;
  const wasMarked = MARKS.some((mark) => element.dataset[mark]);
  for (const mark of MARKS) {
    element.classList.toggle(mark, block.mark === mark);
    if (block.mark === mark) element.dataset[mark] = "true";
    else delete element.dataset[mark];
  }
  // A failed render's title stays on a block that was never marked.
  if (block.mark) element.title = MARK_TITLES[block.mark];
  else if (wasMarked) element.removeAttribute("title");
}

/** Puts the block's figure back first: its text was just replaced. */
function keepFigure(block: BlockState): void {
  if (block.figure) block.element.prepend(block.figure.element);
}
