// The panes' splitters and show/hide buttons, applying layout/panes.ts to the window and keeping
// the layout for the next start.
import { dragSplitter, gridColumns, parseLayout, type PaneLayout } from "./panes";

const STORAGE_KEY = "deepread.panes";

export class PaneControls {
  private layout: PaneLayout;

  constructor(
    private readonly panes: HTMLElement,
    private readonly libraryToggle: HTMLButtonElement,
    private readonly markdownToggle: HTMLButtonElement,
  ) {
    this.layout = parseLayout(localStorage.getItem(STORAGE_KEY));
    for (const splitter of panes.querySelectorAll<HTMLElement>("[data-splitter]")) this.makeDraggable(splitter);
    libraryToggle.addEventListener("click", () => this.update({ libraryOpen: !this.layout.libraryOpen }));
    markdownToggle.addEventListener("click", () => this.update({ markdownOpen: !this.layout.markdownOpen }));
    this.apply();
  }

  private update(change: Partial<PaneLayout>): void {
    this.layout = { ...this.layout, ...change };
    this.apply();
    localStorage.setItem(STORAGE_KEY, JSON.stringify(this.layout));
  }

  private apply(): void {
    this.panes.style.gridTemplateColumns = gridColumns(this.layout);
    this.panes.dataset["library"] = this.layout.libraryOpen ? "open" : "closed";
    this.panes.dataset["markdown"] = this.layout.markdownOpen ? "open" : "closed";
    this.libraryToggle.setAttribute("aria-pressed", String(this.layout.libraryOpen));
    this.markdownToggle.setAttribute("aria-pressed", String(this.layout.markdownOpen));
  }

  private makeDraggable(splitter: HTMLElement): void {
    const which = splitter.dataset["splitter"] === "library" ? "library" : "markdown";
    splitter.addEventListener("pointerdown", (down) => {
      down.preventDefault();
      splitter.setPointerCapture(down.pointerId);
      splitter.classList.add("dragging");
      const move = (event: PointerEvent) => {
        this.layout = dragSplitter(this.layout, which, event.clientX, this.panes.clientWidth);
        this.apply();
      };
      const up = () => {
        splitter.classList.remove("dragging");
        splitter.removeEventListener("pointermove", move);
        splitter.removeEventListener("pointerup", up);
        this.update({});
      };
      splitter.addEventListener("pointermove", move);
      splitter.addEventListener("pointerup", up);
    });
  }
}
