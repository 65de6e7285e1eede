// The centre pane: the current page, rendered by PDFium at the width it is shown at, with the model's
// boxes drawn over it, the label legend, the zoom (fit width, fit page, + and −), and the Region toggle
// that draws a region of the page to read again.
import { pageImageUrl, type DocumentInfo, type PageSize } from "./api";
import type { BoxNorm } from "./events";
import { describeScale, displayWidth, scaleOf, stepZoom, type Area, type Zoom } from "./layout/zoom";
import { BoxLayer, type BoxLayerOptions } from "./overlay/box-layer";
import type { PixelSize } from "./overlay/geometry";
import { Legend } from "./overlay/legend";
import { boxInView, scrollToBox } from "./reading/follow";
import { PaneFollower } from "./reading/pane-follower";
import { RegionSelect } from "./region/region-select";

/** The pane's padding and the gap under the toolbar (styles.css), taken off the room a page has. */
const PANE_PADDING_PX = 16;
const TOOLBAR_GAP_PX = 8;

export class PageView {
  readonly boxes: BoxLayer;
  readonly legend: Legend;
  /** A region drawn on the page, to read again. */
  readonly region: RegionSelect;
  /** Keeps the reading head's box in view while the page shown is read. */
  readonly follower: PaneFollower;
  private readonly toolbar: HTMLDivElement;
  private readonly legendBar: HTMLDivElement;
  private readonly zoomLabel: HTMLSpanElement;
  private readonly frame: HTMLDivElement;
  private readonly layer: HTMLDivElement;
  private image: HTMLImageElement | undefined;
  /** The pixel size of the shown page's latest decoded rendering; undefined until the first arrives. */
  private rendered: PixelSize | undefined;
  private shown: { doc: DocumentInfo; page: number; size: PageSize } | undefined;
  private zoom: Zoom = { kind: "fitWidth" };
  /** The widest rendering asked for of the page shown: zooming out keeps it, zooming in asks again. */
  private requestedPx = 0;
  private imageShown: Promise<void> = Promise.resolve();

  constructor(
    private readonly root: HTMLElement,
    boxOptions: BoxLayerOptions,
    /** A region was drawn on the page shown. */
    onRegion: (region: BoxNorm) => void = () => {},
  ) {
    this.frame = document.createElement("div");
    this.frame.className = "page-frame";
    this.layer = document.createElement("div");
    this.boxes = new BoxLayer(this.layer, boxOptions);
    this.legendBar = document.createElement("div");
    this.legend = new Legend(this.legendBar, this.boxes);
    this.region = new RegionSelect(this.layer, this.frame, this.boxes, onRegion);
    this.zoomLabel = document.createElement("span");
    this.zoomLabel.className = "zoom-label";
    this.toolbar = document.createElement("div");
    this.toolbar.className = "page-toolbar";
    this.toolbar.append(this.legendBar, this.region.button, this.zoomControls());
    this.follower = new PaneFollower(root, { inView: boxInView, scrollTo: scrollToBox, smooth: true, what: "the box being read" });
    new ResizeObserver(() => this.applyZoom()).observe(root);
  }

  show(doc: DocumentInfo, page: number): void {
    const size = doc.pages[page];
    if (!size) return;
    const image = document.createElement("img");
    image.className = "page-image";
    image.alt = `${doc.title}, page ${page + 1}`;
    image.style.aspectRatio = `${size.width_pt} / ${size.height_pt}`;
    this.imageShown = new Promise((resolve) => {
      image.addEventListener("load", () => {
        performance.mark("deepread:page-image", { detail: page });
        this.placeBoxes();
        resolve();
      });
      image.addEventListener("error", () => {
        this.showError(`Page ${page + 1} could not be rendered.`);
        resolve();
      });
    });
    this.image = image;
    this.shown = { doc, page, size };
    this.requestedPx = 0;
    // The boxes wait for the page's first rendering: until then they would be placed for the last page's.
    this.rendered = undefined;
    this.layer.hidden = true;
    this.region.clear();
    this.boxes.clear();
    this.legend.refresh();
    this.frame.replaceChildren(image, this.layer);
    this.root.replaceChildren(this.toolbar, this.frame, this.follower.slot);
    this.applyZoom();
  }

  /** Resolves once the page shown last is on screen, or could not be rendered. */
  pageOnScreen(): Promise<void> {
    return this.imageShown;
  }

  setZoom(zoom: Zoom): void {
    this.zoom = zoom;
    this.applyZoom();
  }

  /** + and −: the next zoom level from the scale shown now. */
  stepZoom(direction: 1 | -1): void {
    if (!this.shown) return;
    // From the scale asked for when there is one: the frame's width is whole pixels, and a level whose
    // width is not (100% of a 420.9 pt page) would measure just under itself and be stepped to again.
    const current =
      this.zoom.kind === "scale" ? this.zoom.scale : scaleOf(this.frame.getBoundingClientRect().width, pagePoints(this.shown.size));
    this.setZoom(stepZoom(current, direction));
  }

  /** Brings a box of the page into view. */
  reveal(blockId: number): void {
    this.boxes.boxElement(blockId)?.scrollIntoView({ block: "center", behavior: "smooth" });
  }

  showError(message: string): void {
    this.image = undefined;
    this.shown = undefined;
    this.root.replaceChildren(messageBox(message, "message error"));
  }

  showWelcome(): void {
    this.image = undefined;
    this.shown = undefined;
    this.root.replaceChildren(messageBox("Drop PDFs or images here, or press Ctrl+O to open one.", "message"));
  }

  /** Sizes the page for the zoom, asks for a sharper rendering when it grew, and moves the boxes. */
  private applyZoom(): void {
    const shown = this.shown;
    const image = this.image;
    if (!shown || !image) return;
    const width = displayWidth(this.zoom, pagePoints(shown.size), this.room());
    this.frame.style.width = `${width}px`;
    this.zoomLabel.textContent =
      this.zoom.kind === "scale" ? describeScale(this.zoom.scale) : describeScale(scaleOf(width, pagePoints(shown.size)));
    this.toolbar.dataset["zoom"] = this.zoom.kind;
    const wanted = Math.ceil(width * window.devicePixelRatio);
    if (wanted > this.requestedPx) {
      this.requestedPx = wanted;
      image.src = pageImageUrl(shown.doc.id, shown.page, wanted);
    }
    this.placeBoxes();
  }

  /** The room for the page: the pane less its padding and the toolbar. */
  private room(): Area {
    return {
      width: this.root.clientWidth - 2 * PANE_PADDING_PX,
      height: this.root.clientHeight - 2 * PANE_PADDING_PX - this.toolbar.offsetHeight - TOOLBAR_GAP_PX,
    };
  }

  /** Boxes follow the image: its natural size is the page's pixel size, its shown width the zoom. */
  private placeBoxes(): void {
    const image = this.image;
    if (!image) return;
    // While a sharper rendering loads the image may have no size (WebKit drops the old one): the boxes
    // keep the last rendering's pixels, scaled to the width shown now, until the load places them again.
    if (image.naturalWidth > 0) this.rendered = { width: image.naturalWidth, height: image.naturalHeight };
    const page = this.rendered;
    if (!page) return;
    this.boxes.setPage(page, { zoom: image.clientWidth / page.width, rotation: 0 });
    this.layer.hidden = false;
    this.region.place();
    // The boxes moved with the zoom: the head may be out of view now.
    this.follower.look();
  }

  private zoomControls(): HTMLElement {
    const controls = document.createElement("div");
    controls.className = "zoom-controls";
    const button = (label: string, title: string, zoom: string, act: () => void) => {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.title = title;
      b.dataset["zoom"] = zoom;
      b.addEventListener("click", act);
      return b;
    };
    controls.append(
      button("Fit width", "Fit the page's width to the pane", "fitWidth", () => this.setZoom({ kind: "fitWidth" })),
      button("Fit page", "Show the whole page", "fitPage", () => this.setZoom({ kind: "fitPage" })),
      button("−", "Zoom out (−)", "out", () => this.stepZoom(-1)),
      this.zoomLabel,
      button("+", "Zoom in (+)", "in", () => this.stepZoom(1)),
    );
    return controls;
  }
}

function pagePoints(size: PageSize): Area {
  return { width: size.width_pt, height: size.height_pt };
}

function messageBox(text: string, className: string): HTMLElement {
  const box = document.createElement("div");
  box.className = className;
  box.textContent = text;
  return box;
}
