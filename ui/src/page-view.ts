// The centre pane: the current page, rendered by PDFium at the pane's width.
import { pageImageUrl, type DocumentInfo } from "./api";

export class PageView {
  constructor(private readonly root: HTMLElement) {}

  show(doc: DocumentInfo, page: number): void {
    const size = doc.pages[page];
    if (!size) return;
    const image = document.createElement("img");
    image.className = "page-image";
    image.alt = `${doc.title}, page ${page + 1}`;
    image.style.aspectRatio = `${size.width_pt} / ${size.height_pt}`;
    const widthPx = this.root.clientWidth * window.devicePixelRatio;
    image.src = pageImageUrl(doc.id, page, widthPx);
    image.addEventListener("error", () => this.showError(`Page ${page + 1} could not be rendered.`));
    this.root.replaceChildren(image);
  }

  showError(message: string): void {
    const box = document.createElement("div");
    box.className = "message error";
    box.textContent = message;
    this.root.replaceChildren(box);
  }

  showWelcome(): void {
    const box = document.createElement("div");
    box.className = "message";
    box.textContent = "Drop PDFs or images here, or press Ctrl+O to open one.";
    this.root.replaceChildren(box);
  }
}
