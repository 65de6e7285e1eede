// One open document being read: events from Rust go to the Markdown pane, the block index, the
// boxes on the page shown and the status bar's figures; boxes and blocks link to each other both ways.
// The person's corrections of blocks, and the blocks they add from regions read again, are laid over the
// pages read, wherever their text is used.
import {
  addBlock,
  correctBlock,
  figureImageUrl,
  forgetCorrection,
  readDocument,
  readRegion,
  renderMarkdown,
  stopReading,
  type DocumentInfo,
  type ReadingStarted,
} from "./api";
import { pageSource } from "./clipboard";
import { BlockEditor } from "./corrections/block-editor";
import { canCorrect, describeCorrected } from "./corrections/corrected-page";
import { CorrectionPrompts } from "./corrections/correction-prompt";
import type { Block, BoxNorm, CorrectedPage, PageEvent, ReadingEvent } from "./events";
import { BlockIndex, type BlockRef } from "./linking/block-index";
import { figureAspect, figureElement, pageWidthForFigure } from "./markdown/figure";
import { StreamingRenderer, type PageStatus } from "./markdown/streaming-renderer";
import { decoratePage, setRetryLabel } from "./page-controls";
import type { MarkdownView } from "./markdown/view-controls";
import type { PageView } from "./page-view";
import type { PaneFollower } from "./reading/pane-follower";
import { describeChoice, MODE_OPTIONS, retryChoice, type ReadingChoice } from "./reading/modes";
import { pagesForReRead } from "./reading/reread";
import { describeUnread, RegionPanel } from "./region/region-panel";
import type { SearchTarget } from "./search/search-bar";
import { ReadingProgress } from "./status/progress";

/** How wide a figure is cropped, in CSS pixels: about the Markdown pane's width, so it stays sharp. */
const FIGURE_WIDTH_PX = 640;

export interface SessionHooks {
  /** The page's reading status changed (for its thumbnail badge). */
  onPageStatus: (page: number, status: PageStatus) => void;
  /** The figures of the status bar may have changed. */
  onProgress: () => void;
  /** The mode the top bar shows now. */
  choice: () => ReadingChoice;
  /** Another page is shown (a search match, a clicked block of another page). */
  onPageShown: (page: number) => void;
  /** A line for the status bar: what a correction, or a region read again, did. */
  say: (message: string) => void;
}

export class DocumentSession implements SearchTarget {
  private readonly index = new BlockIndex();
  /** Each page's final Markdown, once read: what Copy puts on the clipboard. */
  private readonly finalMarkdown = new Map<number, string>();
  private matches: BlockRef[] = [];
  private readonly markdown: StreamingRenderer;
  readonly progress: ReadingProgress;
  private page = 0;
  /** The block last clicked or stepped to on the page shown: what Ctrl+C copies. */
  private selected: number | null = null;
  /** Bumped per reading; a newer reading owns the pages it reads (null: all of them). */
  private generation = 0;
  private latestPages: Set<number> | null = null;
  /** Each page's block being written (the last opened), while the page is read: the reading head. */
  private readonly heads = new Map<number, number>();
  /** The person's corrections: the editor of a block, and the prompts of corrections a re-read no longer matches. */
  private readonly editor: BlockEditor;
  private readonly prompts: CorrectionPrompts;
  /** A region of the page shown read again, to add as a block or to replace one with. */
  private readonly regionPanel: RegionPanel;

  constructor(
    readonly doc: DocumentInfo,
    private readonly pageView: PageView,
    markdownPane: HTMLElement,
    private readonly hooks: SessionHooks,
    view: MarkdownView,
    /** Keeps the block being written in view in the Markdown pane. */
    private readonly markdownFollower: PaneFollower,
  ) {
    markdownPane.replaceChildren();
    this.markdown = new StreamingRenderer(markdownPane, {
      renderBlock: renderMarkdown,
      decoratePage,
      figure: (page, boxes) => {
        const pageWidth = pageWidthForFigure(boxes, FIGURE_WIDTH_PX * window.devicePixelRatio);
        const size = doc.pages[page];
        const aspect = size ? figureAspect(boxes, { width: size.width_pt, height: size.height_pt }) : 1;
        return figureElement(figureImageUrl(doc.id, page, pageWidth, boxes), page, aspect);
      },
    });
    this.markdown.setSource(view.source);
    this.progress = new ReadingProgress(doc.pages.length);
    const commands = { correctBlock, forgetCorrection };
    const answered = (answer: CorrectedPage, blockId: number | null) =>
      this.answered(answer, describeCorrected(answer, blockId));
    this.editor = new BlockEditor(doc.id, commands, answered);
    this.prompts = new CorrectionPrompts(doc.id, commands, answered);
    this.regionPanel = new RegionPanel(doc.id, { readRegion, addBlock, correctBlock }, {
      show: (panel) => pageView.region.showBeside(panel),
      closed: () => pageView.region.clear(),
      answered: (answer, message) => this.answered(answer, message),
    });
  }

  /** Reads the document with `choice`: pages read with it before come from the cache. */
  read(choice: ReadingChoice): Promise<ReadingStarted> {
    return this.start({ ...choice }, null);
  }

  /** Reads `page` again with `choice`, then what the running reading had left. */
  reRead(page: number, choice: ReadingChoice): Promise<ReadingStarted> {
    const statuses = new Map(this.doc.pages.map((_, p) => [p, this.markdown.status(p)] as const));
    const pages = pagesForReRead(page, statuses);
    return this.start({ ...choice, pages, useCache: false }, pages);
  }

  /** Retries a failed or looped page: a looped one with the other prompt (modes.ts says why). */
  retry(page: number, current: ReadingChoice): Promise<ReadingStarted> {
    return this.reRead(page, retryChoice(current, this.markdown.status(page)));
  }

  stop(): Promise<void> {
    this.progress.stopped();
    this.hooks.onProgress();
    return stopReading(this.doc.id);
  }

  /** A page's Markdown source: final once read, its blocks so far while it is read. */
  pageMarkdown(page: number): string {
    return pageSource(this.finalMarkdown.get(page), this.index.blocks(page));
  }

  /** The selected block's Markdown source, with where it is; null when none is selected. */
  selectedBlockMarkdown(): { page: number; blockId: number; markdown: string } | null {
    if (this.selected === null) return null;
    const block = this.index.block(this.page, this.selected);
    return block ? { page: this.page, blockId: block.id, markdown: block.markdown.trim() } : null;
  }

  /** Opens the editor on a block of a page read (a double-click); a page being read has nothing to edit yet. */
  editBlock(page: number, blockId: number): void {
    const element = this.markdown.blockElement(page, blockId);
    const block = this.index.block(page, blockId);
    if (!element || !block || !canCorrect(this.markdown.status(page))) return;
    this.editor.edit({ page, blockId, element, markdown: block.markdown, mark: this.markdown.mark(page, blockId) });
  }

  /** A region drawn on the page shown is read again, once the page is read: it has blocks to add to or replace. */
  readRegion(region: BoxNorm): void {
    const status = this.markdown.status(this.page);
    if (!canCorrect(status)) {
      this.pageView.region.clear();
      this.hooks.say(describeUnread(this.page, status));
      return;
    }
    this.regionPanel.open({ page: this.page, region, choice: this.hooks.choice() });
  }

  /** `e`: edits the selected block. */
  editSelectedBlock(): void {
    if (this.selected !== null) this.editBlock(this.page, this.selected);
  }

  /** Ctrl+F: lights the blocks whose Markdown holds `query`, and their boxes on the page shown. */
  search(query: string): number {
    this.clearSearch();
    this.matches = this.index.search(query);
    for (const match of this.matches) this.markdown.blockElement(match.page, match.blockId)?.classList.add("search-match");
    this.markMatchedBoxes();
    return this.matches.length;
  }

  showMatch(index: number): void {
    const match = this.matches[index];
    if (!match) return;
    for (const element of document.querySelectorAll(".search-current")) element.classList.remove("search-current");
    if (match.page !== this.page) this.showPage(match.page, { scrollMarkdown: false });
    const block = this.markdown.blockElement(match.page, match.blockId);
    block?.classList.add("search-current");
    block?.scrollIntoView({ block: "center" });
    this.pageView.boxes.flash(match.blockId);
    this.pageView.reveal(match.blockId);
    this.detachFollowers();
  }

  clearSearch(): void {
    for (const match of this.matches) {
      this.markdown.blockElement(match.page, match.blockId)?.classList.remove("search-match", "search-current");
    }
    this.matches = [];
    this.pageView.boxes.setMatched([]);
  }

  /** Shows page `page` with its boxes so far; its Markdown scrolled into view unless told not to. */
  showPage(page: number, { scrollMarkdown = true } = {}): void {
    this.regionPanel.close();
    this.page = page;
    this.selected = null;
    this.pageView.show(this.doc, page);
    this.pageView.boxes.setBlocks(this.index.blocks(page));
    this.markMatchedBoxes();
    this.pageView.legend.refresh();
    this.markCurrentPage();
    if (scrollMarkdown) this.markdown.pageElement(page)?.scrollIntoView({ block: "start" });
    this.resetFollowers();
    this.followShownPage();
    this.hooks.onPageShown(page);
  }

  /** Rendered or source Markdown. */
  setSource(source: boolean): void {
    this.markdown.setSource(source);
  }

  /** The shown page's section wears `current`: what "This page" keeps in view. */
  private markCurrentPage(): void {
    for (const p of this.doc.pages.keys()) this.markdown.pageElement(p)?.classList.toggle("current", p === this.page);
  }

  get shownPage(): number {
    return this.page;
  }

  /** A box was clicked: its block in the Markdown pane. */
  selectBox(blockId: number): void {
    const block = this.markdown.blockElement(this.page, blockId);
    if (!block) return;
    this.selected = blockId;
    block.scrollIntoView({ block: "center", behavior: "smooth" });
    flash(block);
    this.pageView.boxes.setHighlighted([blockId]);
    this.markdownFollower.detach();
  }

  /** A block was clicked: its box on the page. */
  selectBlock(page: number, blockId: number): void {
    if (page !== this.page) this.showPage(page, { scrollMarkdown: false });
    this.selected = blockId;
    this.pageView.boxes.setHighlighted([blockId]);
    this.pageView.boxes.flash(blockId);
    this.pageView.reveal(blockId);
    this.pageView.follower.detach();
  }

  /** `j`/`k`: the next or previous block of the page shown, linked as if clicked. */
  stepBlock(direction: 1 | -1): void {
    const next =
      direction === 1 ? this.index.next(this.page, this.selected) : this.index.previous(this.page, this.selected);
    if (next === null) return;
    this.selected = next;
    this.selectBlock(this.page, next);
    const block = this.markdown.blockElement(this.page, next);
    block?.scrollIntoView({ block: "center", behavior: "smooth" });
    if (block) flash(block);
    this.markdownFollower.detach();
  }

  private async start(request: Parameters<typeof readDocument>[1], pages: number[] | null): Promise<ReadingStarted> {
    const generation = ++this.generation;
    this.latestPages = pages === null ? null : new Set(pages);
    this.resetFollowers();
    const started = await readDocument(this.doc.id, request, (event) => this.handle(event, generation));
    this.hooks.onProgress();
    return started;
  }

  private handle(event: ReadingEvent, generation: number): void {
    if (event.type === "fewerPagesAtOnce") {
      if (generation === this.generation) this.progress.fewerPagesAtOnce(event.pagesAtOnce);
      this.hooks.onProgress();
      return;
    }
    // A replaced reading still reports the pages it had in flight ("stopped"); the newer one owns them.
    const owned = this.latestPages === null || this.latestPages.has(event.page);
    if (generation !== this.generation && owned) return;
    if (event.type === "corrected") {
      this.showCorrected(event);
      return;
    }
    this.markdown.handle(event);
    this.index.apply(event);
    this.progress.apply(event);
    if (event.type === "done" || event.type === "looped") this.finalMarkdown.set(event.page, event.markdown);
    else if (event.type === "started") this.startPage(event.page);
    this.trackHead(event);
    const status = this.markdown.status(event.page);
    if (status) {
      this.hooks.onPageStatus(event.page, status);
      if (event.type === "looped" || event.type === "failed") this.labelRetry(event.page, status);
    }
    if (event.type !== "delta" && event.type !== "blockText") this.hooks.onProgress();
    if (event.type === "queued" && event.page === this.page) this.markCurrentPage();
    if (event.page === this.page) {
      this.showEvent(event);
      this.followEvent(event);
    }
  }

  /** A page read again starts afresh: what it showed, and what was asked or edited of it, goes. */
  private startPage(page: number): void {
    this.finalMarkdown.delete(page);
    this.editor.closePage(page);
    this.regionPanel.closePage(page);
    const section = this.markdown.pageElement(page);
    if (section) this.prompts.remove(section);
  }

  /** A page with the person's corrections over it, everywhere the page's text is used: the pane (marked,
   * with a prompt per correction the reading no longer matches), Ctrl+F and Ctrl+C, Copy, its boxes. */
  private showCorrected(corrected: CorrectedPage): void {
    const { page, blocks } = corrected;
    this.markdown.showCorrected(page, blocks, corrected);
    this.index.setPage(page, blocks);
    this.finalMarkdown.set(page, corrected.markdown);
    this.editor.closeIfGone();
    const section = this.markdown.pageElement(page);
    if (section) this.prompts.show(section, corrected, (blockId) => this.markdown.blockElement(page, blockId));
    if (page === this.page) this.showBoxes(blocks);
  }

  /** A command answered (a correction's, a region's): the page as it now shows, and the status bar's line. A page
   * being read again meanwhile shows its new reading instead, with the corrections laid over once it is done. */
  private answered(answer: CorrectedPage, message: string): void {
    if (!canCorrect(this.markdown.status(answer.page))) return;
    this.showCorrected(answer);
    this.hooks.say(message);
  }

  /** The reading head of each page: its last opened block, until the page's reading ends. */
  private trackHead(event: PageEvent): void {
    if (event.type === "blockOpened") this.heads.set(event.page, event.blockId);
    else if (event.type !== "delta" && event.type !== "blockText" && event.type !== "blockClosed") this.heads.delete(event.page);
  }

  /** Both panes follow the page shown while it is read, and nothing once it is not. */
  private followShownPage(): void {
    const page = this.page;
    const reading = this.markdown.status(page) === "reading";
    const head = () => this.heads.get(page);
    this.pageView.follower.follow(reading ? () => this.pageView.boxes.boxElement(head() ?? -1) : null);
    this.markdownFollower.follow(reading ? () => this.markdown.blockElement(page, head() ?? -1) : null);
  }

  private followEvent(event: PageEvent): void {
    switch (event.type) {
      case "started":
      case "done":
      case "looped":
      case "failed":
        this.followShownPage();
        break;
      case "blockOpened":
        this.pageView.follower.look();
        this.markdownFollower.look();
        break;
      case "blockText":
        // The block grows once its text is rendered, a frame or more later: the pane watches for that too.
        this.markdownFollower.look();
        break;
      default:
        break;
    }
  }

  private resetFollowers(): void {
    this.pageView.follower.reset();
    this.markdownFollower.reset();
  }

  /** The person was taken elsewhere on the page and in the Markdown: both panes stop following. */
  private detachFollowers(): void {
    this.pageView.follower.detach();
    this.markdownFollower.detach();
  }

  private labelRetry(page: number, status: PageStatus): void {
    const section = this.markdown.pageElement(page);
    if (!section) return;
    const choice = retryChoice(this.hooks.choice(), status);
    const mode = MODE_OPTIONS.find((o) => o.value === choice.mode)?.label ?? choice.mode;
    const label = status === "looped" ? `Retry as ${mode.toLowerCase()}` : "Retry";
    setRetryLabel(section, label, `Read page ${page + 1} again: ${describeChoice(choice)}`);
  }

  private showEvent(event: PageEvent): void {
    const boxes = this.pageView.boxes;
    switch (event.type) {
      case "started":
        boxes.clear();
        this.pageView.legend.refresh();
        break;
      case "blockOpened":
        boxes.addBox(event.blockId, event.label, event.boxes);
        boxes.setReadingHead(event.blockId);
        this.pageView.legend.refresh();
        break;
      case "blockClosed":
        boxes.setReadingHead(null);
        break;
      case "done":
      case "looped":
        boxes.setReadingHead(null);
        this.showBoxes(event.blocks);
        break;
      default:
        break;
    }
  }

  /** The page shown's final boxes, lit as its blocks are: selected, matched by Ctrl+F. */
  private showBoxes(blocks: readonly Block[]): void {
    const boxes = this.pageView.boxes;
    boxes.setBlocks(blocks);
    if (this.selected !== null) boxes.setHighlighted([this.selected]);
    this.markMatchedBoxes();
    this.pageView.legend.refresh();
  }

  private markMatchedBoxes(): void {
    this.pageView.boxes.setMatched(this.matches.filter((m) => m.page === this.page).map((m) => m.blockId));
  }
}

function flash(element: HTMLElement): void {
  element.classList.remove("flash");
  // Restart the animation on a second click.
  void element.offsetWidth;
  element.classList.add("flash");
}
