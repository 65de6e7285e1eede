// The grounding boxes drawn over the page: one element per box, coloured by label, placed with
// the reference's geometry. Clicks and hovers are hit-tested here, not by the browser, because
// boxes nest (a full-page image box holds all others) and the smallest box should win.
import type { Block, BoxNorm } from "../events";
import { boxToView, hitTest, viewSize, IDENTITY, type PageTransform, type PixelSize } from "./geometry";
import { labelKind, LABELS, type LabelKind } from "./labels";
import "./overlay.css";

export interface BoxLayerOptions {
  /** A box was clicked: link to its block. */
  onSelect?: (blockId: number) => void;
  /** The pointer moved onto another block's box, or off all boxes (null). */
  onHover?: (blockId: number | null) => void;
  /** How long a flash lasts. */
  flashMs?: number;
}

export interface LegendEntry {
  label: LabelKind;
  /** Blocks with this label on the page. */
  count: number;
  hidden: boolean;
}

interface LayerBlock {
  id: number;
  kind: LabelKind;
  boxes: readonly BoxNorm[];
  elements: HTMLElement[];
}

export class BoxLayer {
  private readonly blocks = new Map<number, LayerBlock>();
  private readonly hidden = new Set<LabelKind>();
  private page: PixelSize = { width: 1, height: 1 };
  private transform: PageTransform = IDENTITY;
  private hovered: number | null = null;
  private readonly flashTimers = new Map<number, ReturnType<typeof setTimeout>>();

  constructor(
    private readonly root: HTMLElement,
    private readonly options: BoxLayerOptions = {},
  ) {
    root.classList.add("box-layer");
    root.addEventListener("click", (event) => {
      const id = this.blockAt(event);
      if (id !== null) this.options.onSelect?.(id);
    });
    root.addEventListener("mousemove", (event) => this.hoverFromPointer(this.blockAt(event)));
    root.addEventListener("mouseleave", () => this.hoverFromPointer(null));
  }

  /** The rendered page image's pixel size and how it is shown; every box is placed again. */
  setPage(page: PixelSize, transform: PageTransform): void {
    this.page = page;
    this.transform = transform;
    const size = viewSize(page, transform);
    this.root.style.width = `${size.width}px`;
    this.root.style.height = `${size.height}px`;
    for (const block of this.blocks.values()) this.place(block);
  }

  /** The page image's pixel size and how it is shown: what maps boxes onto the layer, and back. */
  placement(): { page: PixelSize; transform: PageTransform } {
    return { page: this.page, transform: this.transform };
  }

  /** A block's boxes, shown the moment its `<|det|>` closes. */
  addBox(blockId: number, label: string, boxes: readonly BoxNorm[]): void {
    this.removeBlock(blockId);
    const kind = labelKind(label);
    const elements = boxes.map(() => {
      const element = document.createElement("div");
      element.className = `grounding-box label-${kind}`;
      element.dataset["blockId"] = String(blockId);
      element.dataset["label"] = label;
      element.hidden = this.hidden.has(kind);
      this.root.append(element);
      return element;
    });
    const block = { id: blockId, kind, boxes, elements };
    this.blocks.set(blockId, block);
    this.place(block);
  }

  /** A page's final blocks, replacing whatever was streamed. */
  setBlocks(blocks: readonly Pick<Block, "id" | "label" | "boxes">[]): void {
    this.clear();
    for (const block of blocks) this.addBox(block.id, block.label, block.boxes);
  }

  clear(): void {
    for (const id of [...this.blocks.keys()]) this.removeBlock(id);
    this.hovered = null;
  }

  /** Outlines the block being written; null when none is. */
  setReadingHead(blockId: number | null): void {
    this.toggleOnly("reading-head", blockId === null ? [] : [blockId]);
  }

  /** Hover from the other side (the Markdown pane), without calling onHover back. */
  setHovered(blockId: number | null): void {
    this.hovered = blockId;
    this.toggleOnly("hovered", blockId === null ? [] : [blockId]);
  }

  /** The selected block (clicked, or stepped to): its boxes are lit. */
  setHighlighted(blockIds: Iterable<number>): void {
    this.toggleOnly("highlighted", [...blockIds]);
  }

  /** Ctrl+F's matches on this page: their boxes are lit apart from the selection. */
  setMatched(blockIds: Iterable<number>): void {
    this.toggleOnly("matched", [...blockIds]);
  }

  /** Draws the eye to a block's boxes for a moment. */
  flash(blockId: number): void {
    const block = this.blocks.get(blockId);
    if (!block) return;
    const previous = this.flashTimers.get(blockId);
    if (previous !== undefined) clearTimeout(previous);
    for (const element of block.elements) element.classList.add("flash");
    this.flashTimers.set(
      blockId,
      setTimeout(() => {
        this.flashTimers.delete(blockId);
        for (const element of this.blocks.get(blockId)?.elements ?? []) element.classList.remove("flash");
      }, this.options.flashMs ?? 900),
    );
  }

  /** The first box of a block on the shown page, for scrolling it into view. */
  boxElement(blockId: number): HTMLElement | undefined {
    return this.blocks.get(blockId)?.elements[0];
  }

  /** The legend's chips: every label on the page, how many blocks, and whether it is hidden. */
  legend(): LegendEntry[] {
    const counts = new Map<LabelKind, number>();
    for (const block of this.blocks.values()) counts.set(block.kind, (counts.get(block.kind) ?? 0) + 1);
    return LABELS.filter((label) => counts.has(label)).map((label) => ({
      label,
      count: counts.get(label) ?? 0,
      hidden: this.hidden.has(label),
    }));
  }

  setLabelHidden(label: LabelKind, hidden: boolean): void {
    if (hidden) this.hidden.add(label);
    else this.hidden.delete(label);
    for (const block of this.blocks.values()) {
      if (block.kind === label) for (const element of block.elements) element.hidden = hidden;
    }
  }

  private place(block: LayerBlock): void {
    block.boxes.forEach((box, i) => {
      const element = block.elements[i];
      if (!element) return;
      const rect = boxToView(box, this.page, this.transform);
      element.style.left = `${rect.left}px`;
      element.style.top = `${rect.top}px`;
      element.style.width = `${rect.width}px`;
      element.style.height = `${rect.height}px`;
    });
  }

  private removeBlock(blockId: number): void {
    const block = this.blocks.get(blockId);
    if (!block) return;
    for (const element of block.elements) element.remove();
    this.blocks.delete(blockId);
  }

  private toggleOnly(className: string, blockIds: number[]): void {
    const on = new Set(blockIds);
    for (const block of this.blocks.values()) {
      for (const element of block.elements) element.classList.toggle(className, on.has(block.id));
    }
  }

  private blockAt(event: MouseEvent): number | null {
    const origin = this.root.getBoundingClientRect();
    const visible = [...this.blocks.values()].filter((b) => !this.hidden.has(b.kind));
    return hitTest({ x: event.clientX - origin.left, y: event.clientY - origin.top }, visible, this.page, this.transform);
  }

  private hoverFromPointer(blockId: number | null): void {
    if (blockId === this.hovered) return;
    this.setHovered(blockId);
    this.options.onHover?.(blockId);
  }
}
