// The left pane: recent documents from the cache, then one thumbnail per page of the open one.
// The list is virtual: only the thumbnails in view and a margin exist, so a 500-page document costs
// what a 10-page one does; their images are asked for once scrolling settles.
import { pageImageUrl, type DocumentInfo } from "./api";
import { layoutThumbnails, THUMBNAIL_METRICS, visibleRange, type ThumbnailLayout } from "./library/thumbnail-layout";
import { recentList, type RecentDocument } from "./recent";

const THUMBNAIL_WIDTH_PX = 160;
/** Thumbnails kept beyond the pane's edges, in CSS pixels: a short scroll shows them at once. */
const MARGIN_PX = 600;
/** Images are asked for once scrolling pauses this long: a fling does not queue every page it passes. */
const SETTLE_MS = 120;

interface Shown {
  doc: DocumentInfo;
  layout: ThumbnailLayout;
}

export class LibraryPane {
  private readonly recent: HTMLDetailsElement;
  private readonly list: HTMLElement;
  private shown: Shown | null = null;
  /** The thumbnails that exist now, by page. */
  private readonly items = new Map<number, HTMLElement>();
  private readonly statuses = new Map<number, string>();
  private selected: number | null = null;
  private frameRequested = false;
  private settleTimer: number | undefined;

  constructor(
    private readonly pane: HTMLElement,
    private readonly onSelect: (page: number) => void,
  ) {
    this.recent = document.createElement("details");
    this.recent.className = "recent";
    this.recent.open = true;
    this.recent.hidden = true;
    this.list = document.createElement("div");
    this.list.className = "thumbnails";
    pane.replaceChildren(this.recent, this.list);
    pane.addEventListener("scroll", () => this.scheduleUpdate(), { passive: true });
    this.recent.addEventListener("toggle", () => this.scheduleUpdate());
    new ResizeObserver(() => this.scheduleUpdate()).observe(pane);
  }

  /** Documents read before; opening one closes the list, to leave room for its pages. */
  showRecent(docs: readonly RecentDocument[], onOpen: (path: string) => void): void {
    const summary = document.createElement("summary");
    summary.textContent = "Recent";
    this.recent.replaceChildren(summary, recentList(docs, Date.now(), onOpen));
    this.recent.hidden = docs.length === 0;
  }

  show(doc: DocumentInfo): void {
    this.recent.open = false;
    const layout = layoutThumbnails(doc.pages.map((size) => size.height_pt / size.width_pt));
    this.shown = { doc, layout };
    this.items.clear();
    this.statuses.clear();
    this.selected = null;
    this.list.replaceChildren();
    this.list.style.height = `${layout.total}px`;
    this.pane.scrollTop = 0;
    this.update();
  }

  select(page: number): void {
    this.selected = page;
    for (const [p, item] of this.items) item.classList.toggle("selected", p === page);
    this.scrollToPage(page);
  }

  /** The page's reading status, shown as a badge on its thumbnail (now, or once it is scrolled to). */
  setStatus(page: number, status: string): void {
    this.statuses.set(page, status);
    const item = this.items.get(page);
    if (item) item.dataset["status"] = status;
  }

  private scheduleUpdate(): void {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      this.update();
    });
  }

  /** Makes the thumbnails in view and the margin, removes the rest. */
  private update(): void {
    const shown = this.shown;
    if (!shown) return;
    const top = this.list.getBoundingClientRect().top - this.pane.getBoundingClientRect().top;
    const range = visibleRange(shown.layout, -top - MARGIN_PX, -top + this.pane.clientHeight + MARGIN_PX);
    for (const [page, item] of this.items) {
      if (page >= range.first && page < range.end) continue;
      item.remove();
      this.items.delete(page);
    }
    for (let page = range.first; page < range.end; page++) {
      if (!this.items.has(page)) this.items.set(page, this.list.appendChild(this.thumbnail(shown, page)));
    }
    window.clearTimeout(this.settleTimer);
    this.settleTimer = window.setTimeout(() => this.loadImages(), SETTLE_MS);
  }

  private loadImages(): void {
    for (const item of this.items.values()) {
      const image = item.querySelector("img");
      if (image?.dataset["src"]) {
        image.src = image.dataset["src"];
        delete image.dataset["src"];
      }
    }
  }

  /** Scrolls the least that brings the page's thumbnail into view. */
  private scrollToPage(page: number): void {
    const layout = this.shown?.layout;
    const itemTop = layout?.tops[page];
    const height = layout?.heights[page];
    if (itemTop === undefined || height === undefined) return;
    const listTop = this.list.getBoundingClientRect().top - this.pane.getBoundingClientRect().top + this.pane.scrollTop;
    const top = listTop + itemTop;
    const bottom = top + height;
    if (top < this.pane.scrollTop) this.pane.scrollTop = top;
    else if (bottom > this.pane.scrollTop + this.pane.clientHeight) this.pane.scrollTop = bottom - this.pane.clientHeight;
  }

  private thumbnail({ doc, layout }: Shown, page: number): HTMLElement {
    const item = document.createElement("button");
    item.type = "button";
    item.className = "thumbnail";
    item.dataset["page"] = String(page);
    item.style.top = `${layout.tops[page] ?? 0}px`;
    item.style.height = `${layout.heights[page] ?? 0}px`;
    item.classList.toggle("selected", page === this.selected);
    const status = this.statuses.get(page);
    if (status) item.dataset["status"] = status;
    const image = document.createElement("img");
    image.alt = `Page ${page + 1}`;
    image.dataset["src"] = pageImageUrl(doc.id, page, THUMBNAIL_WIDTH_PX * window.devicePixelRatio);
    // Sized before it loads, as the layout has it: the list does not move when images arrive.
    image.style.width = `${THUMBNAIL_METRICS.imageWidth}px`;
    image.style.height = `${(layout.heights[page] ?? 0) - THUMBNAIL_METRICS.chrome}px`;
    const label = document.createElement("span");
    label.textContent = String(page + 1);
    item.append(image, label);
    item.addEventListener("click", () => this.onSelect(page));
    return item;
  }
}
