// The left pane: recent documents from the cache, then one thumbnail per page of the open one,
// loaded only when scrolled into view.
import { pageImageUrl, type DocumentInfo } from "./api";
import { recentList, type RecentDocument } from "./recent";

const THUMBNAIL_WIDTH_PX = 160;

export class LibraryPane {
  private readonly observer: IntersectionObserver;
  private readonly recent: HTMLDetailsElement;
  private readonly root: HTMLElement;

  constructor(
    pane: HTMLElement,
    private readonly onSelect: (page: number) => void,
  ) {
    this.recent = document.createElement("details");
    this.recent.className = "recent";
    this.recent.open = true;
    this.recent.hidden = true;
    this.root = document.createElement("div");
    this.root.className = "thumbnails";
    pane.replaceChildren(this.recent, this.root);
    this.observer = new IntersectionObserver((entries) => this.loadVisible(entries), {
      root: pane,
      rootMargin: "200px",
    });
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
    this.observer.disconnect();
    this.root.replaceChildren(
      ...doc.pages.map((size, page) => this.thumbnail(doc.id, page, size.height_pt / size.width_pt)),
    );
  }

  select(page: number): void {
    for (const item of this.root.querySelectorAll<HTMLElement>(".thumbnail")) {
      const selected = Number(item.dataset.page) === page;
      item.classList.toggle("selected", selected);
      if (selected) item.scrollIntoView({ block: "nearest" });
    }
  }

  /** The page's reading status, shown as a badge on its thumbnail. */
  setStatus(page: number, status: string): void {
    const item = this.root.querySelector<HTMLElement>(`.thumbnail[data-page="${page}"]`);
    if (item) item.dataset.status = status;
  }

  private thumbnail(documentId: string, page: number, aspect: number): HTMLElement {
    const item = document.createElement("button");
    item.type = "button";
    item.className = "thumbnail";
    item.dataset.page = String(page);
    const image = document.createElement("img");
    image.alt = `Page ${page + 1}`;
    image.dataset.src = pageImageUrl(documentId, page, THUMBNAIL_WIDTH_PX * window.devicePixelRatio);
    image.style.aspectRatio = String(1 / aspect);
    const label = document.createElement("span");
    label.textContent = String(page + 1);
    item.append(image, label);
    item.addEventListener("click", () => this.onSelect(page));
    this.observer.observe(image);
    return item;
  }

  private loadVisible(entries: IntersectionObserverEntry[]): void {
    for (const entry of entries) {
      const image = entry.target as HTMLImageElement;
      if (entry.isIntersecting && image.dataset.src) {
        image.src = image.dataset.src;
        delete image.dataset.src;
        this.observer.unobserve(image);
      }
    }
  }
}
