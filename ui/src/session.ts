// One open document being read: events from Rust go to the Markdown pane, the block index, the
// boxes on the page shown and the status bar's figures; boxes and blocks link to each other both ways.
import { readDocument, renderMarkdown, stopReading, type DocumentInfo, type ReadingStarted } from "./api";
import type { PageEvent } from "./events";
import { BlockIndex } from "./linking/block-index";
import { StreamingRenderer, type PageStatus } from "./markdown/streaming-renderer";
import { decoratePage, setRetryLabel } from "./page-controls";
import type { PageView } from "./page-view";
import { describeChoice, MODE_OPTIONS, retryChoice, type ReadingChoice } from "./reading/modes";
import { pagesForReRead } from "./reading/reread";
import { ReadingProgress } from "./status/progress";

export interface SessionHooks {
  /** The page's reading status changed (for its thumbnail badge). */
  onPageStatus: (page: number, status: PageStatus) => void;
  /** The figures of the status bar may have changed. */
  onProgress: () => void;
  /** The mode the top bar shows now. */
  choice: () => ReadingChoice;
}

export class DocumentSession {
  private readonly index = new BlockIndex();
  private readonly markdown: StreamingRenderer;
  readonly progress: ReadingProgress;
  private page = 0;
  private selected: number | null = null;
  /** Bumped per reading; a newer reading owns the pages it reads (null: all of them). */
  private generation = 0;
  private latestPages: Set<number> | null = null;

  constructor(
    readonly doc: DocumentInfo,
    private readonly pageView: PageView,
    markdownPane: HTMLElement,
    private readonly hooks: SessionHooks,
  ) {
    markdownPane.replaceChildren();
    this.markdown = new StreamingRenderer(markdownPane, { renderBlock: renderMarkdown, decoratePage });
    this.progress = new ReadingProgress(doc.pages.length);
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

  /** Shows page `page`: its boxes so far, and its Markdown scrolled into view. */
  showPage(page: number): void {
    this.page = page;
    this.selected = null;
    this.pageView.show(this.doc, page);
    this.pageView.boxes.setBlocks(this.index.blocks(page));
    this.pageView.legend.refresh();
    this.markdown.pageElement(page)?.scrollIntoView({ block: "start" });
  }

  /** A box was clicked: its block in the Markdown pane. */
  selectBox(blockId: number): void {
    const block = this.markdown.blockElement(this.page, blockId);
    if (!block) return;
    block.scrollIntoView({ block: "center", behavior: "smooth" });
    flash(block);
    this.pageView.boxes.setHighlighted([blockId]);
  }

  /** A block was clicked: its box on the page. */
  selectBlock(page: number, blockId: number): void {
    if (page !== this.page) this.showPage(page);
    this.pageView.boxes.setHighlighted([blockId]);
    this.pageView.boxes.flash(blockId);
    this.pageView.reveal(blockId);
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
  }

  private async start(request: Parameters<typeof readDocument>[1], pages: number[] | null): Promise<ReadingStarted> {
    const generation = ++this.generation;
    this.latestPages = pages === null ? null : new Set(pages);
    const started = await readDocument(this.doc.id, request, (event) => this.handle(event, generation));
    this.hooks.onProgress();
    return started;
  }

  private handle(event: PageEvent, generation: number): void {
    // A replaced reading still reports the pages it had in flight ("stopped"); the newer one owns them.
    const owned = this.latestPages === null || this.latestPages.has(event.page);
    if (generation !== this.generation && owned) return;
    this.markdown.handle(event);
    this.index.apply(event);
    this.progress.apply(event);
    const status = this.markdown.status(event.page);
    if (status) {
      this.hooks.onPageStatus(event.page, status);
      if (event.type === "looped" || event.type === "failed") this.labelRetry(event.page, status);
    }
    if (event.type !== "delta" && event.type !== "blockText") this.hooks.onProgress();
    if (event.page === this.page) this.showEvent(event);
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
        boxes.setBlocks(event.blocks);
        this.pageView.legend.refresh();
        break;
      default:
        break;
    }
  }
}

function flash(element: HTMLElement): void {
  element.classList.remove("flash");
  // Restart the animation on a second click.
  void element.offsetWidth;
  element.classList.add("flash");
}
