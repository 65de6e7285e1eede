// The centre pane: the current page, rendered by PDFium at the pane's width, with the model's
// boxes drawn over it.
import { pageImageUrl, type DocumentInfo } from "./api";
import { BoxLayer, type BoxLayerOptions } from "./overlay/box-layer";
import { Legend } from "./overlay/legend";

export class PageView {
  readonly boxes: BoxLayer;
  readonly legend: Legend;
  private readonly legendBar: HTMLDivElement;
  private readonly frame: HTMLDivElement;
  private readonly layer: HTMLDivElement;
  private image: HTMLImageElement | undefined;

  constructor(
    private readonly root: HTMLElement,
    boxOptions: BoxLayerOptions,
  ) {
    this.frame = document.createElement("div");
    this.frame.className = "page-frame";
    this.layer = document.createElement("div");
    this.boxes = new BoxLayer(this.layer, boxOptions);
    this.legendBar = document.createElement("div");
    this.legend = new Legend(this.legendBar, this.boxes);
    new ResizeObserver(() => this.placeBoxes()).observe(root);
  }

  show(doc: DocumentInfo, page: number): void {
    const size = doc.pages[page];
    if (!size) return;
    const image = document.createElement("img");
    image.className = "page-image";
    image.alt = `${doc.title}, page ${page + 1}`;
    image.style.aspectRatio = `${size.width_pt} / ${size.height_pt}`;
    image.src = pageImageUrl(doc.id, page, this.root.clientWidth * window.devicePixelRatio);
    image.addEventListener("load", () => this.placeBoxes());
    image.addEventListener("error", () => this.showError(`Page ${page + 1} could not be rendered.`));
    this.image = image;
    this.boxes.clear();
    this.legend.refresh();
    this.frame.replaceChildren(image, this.layer);
    this.root.replaceChildren(this.legendBar, this.frame);
  }

  /** Brings a box of the page into view. */
  reveal(blockId: number): void {
    this.boxes.boxElement(blockId)?.scrollIntoView({ block: "center", behavior: "smooth" });
  }

  showError(message: string): void {
    this.image = undefined;
    this.root.replaceChildren(messageBox(message, "message error"));
  }

  showWelcome(): void {
    this.image = undefined;
    this.root.replaceChildren(messageBox("Drop PDFs or images here, or press Ctrl+O to open one.", "message"));
  }

  /** Boxes follow the image: its natural size is the page's pixel size, its shown width the zoom. */
  private placeBoxes(): void {
    const image = this.image;
    if (!image || image.naturalWidth === 0) return;
    const page = { width: image.naturalWidth, height: image.naturalHeight };
    this.boxes.setPage(page, { zoom: image.clientWidth / image.naturalWidth, rotation: 0 });
  }
}

function messageBox(text: string, className: string): HTMLElement {
  const box = document.createElement("div");
  box.className = className;
  box.textContent = text;
  return box;
}
