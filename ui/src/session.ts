// One open document being read: events from Rust go to the Markdown pane, the block index and the
// boxes on the page shown; boxes and blocks link to each other both ways.
import { readDocument, renderMarkdown, stopReading, type DocumentInfo } from "./api";
import type { PageEvent } from "./events";
import { BlockIndex } from "./linking/block-index";
import { StreamingRenderer } from "./markdown/streaming-renderer";
import type { PageView } from "./page-view";

export class DocumentSession {
  private readonly index = new BlockIndex();
  private readonly markdown: StreamingRenderer;
  private page = 0;
  private selected: number | null = null;
  private pagesDone = 0;

  constructor(
    readonly doc: DocumentInfo,
    private readonly pageView: PageView,
    markdownPane: HTMLElement,
    private readonly onStatus: (text: string) => void,
    private readonly onPageStatus: (page: number, status: string) => void,
  ) {
    markdownPane.replaceChildren();
    this.markdown = new StreamingRenderer(markdownPane, { renderBlock: renderMarkdown });
  }

  async read(): Promise<void> {
    const started = await readDocument(this.doc.id, (event) => this.handle(event));
    this.onStatus(started.notice ?? `Reading with ${started.recognizer}`);
  }

  stop(): Promise<void> {
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

  private handle(event: PageEvent): void {
    this.markdown.handle(event);
    this.index.apply(event);
    const status = this.markdown.status(event.page);
    if (status) this.onPageStatus(event.page, status);
    if (event.type === "done" || event.type === "looped" || event.type === "failed") {
      this.pagesDone += 1;
      this.onStatus(`${this.pagesDone} of ${this.doc.pages.length} pages read`);
    }
    if (event.page !== this.page) return;
    const boxes = this.pageView.boxes;
    switch (event.type) {
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
