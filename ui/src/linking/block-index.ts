// The document's blocks by page, as they stream in and once final: what j/k step through, what
// a box belongs to, and what Ctrl+F finds.
import type { Block, BoxNorm, PageEvent } from "../events";

export interface IndexedBlock {
  id: number;
  label: string;
  boxes: BoxNorm[];
  markdown: string;
}

export interface BlockRef {
  page: number;
  blockId: number;
}

export class BlockIndex {
  private readonly pages = new Map<number, Map<number, IndexedBlock>>();

  /** Follows a reading: blocks appear as they open and grow; done/looped replace them. */
  apply(event: PageEvent): void {
    switch (event.type) {
      case "started":
        this.pages.delete(event.page);
        break;
      case "blockOpened":
        this.page(event.page).set(event.blockId, {
          id: event.blockId,
          label: event.label,
          boxes: event.boxes,
          markdown: "",
        });
        break;
      case "blockText": {
        const block = this.pages.get(event.page)?.get(event.blockId);
        if (block) block.markdown += event.delta;
        break;
      }
      case "done":
      case "looped":
        this.setPage(event.page, event.blocks);
        break;
      default:
        break;
    }
  }

  setPage(page: number, blocks: readonly Block[]): void {
    const entries = new Map<number, IndexedBlock>();
    for (const b of blocks) entries.set(b.id, { id: b.id, label: b.label, boxes: b.boxes, markdown: b.markdown });
    this.pages.set(page, entries);
  }

  /** A page's blocks in reading order. */
  blocks(page: number): IndexedBlock[] {
    return [...(this.pages.get(page)?.values() ?? [])].sort((a, b) => a.id - b.id);
  }

  block(page: number, blockId: number): IndexedBlock | undefined {
    return this.pages.get(page)?.get(blockId);
  }

  boxes(page: number, blockId: number): BoxNorm[] {
    return this.block(page, blockId)?.boxes ?? [];
  }

  /** The block that owns a box (the same coordinates), for a box picked on the page. */
  blockOfBox(page: number, box: BoxNorm): number | null {
    for (const block of this.blocks(page)) {
      if (block.boxes.some((b) => b.x1 === box.x1 && b.y1 === box.y1 && b.x2 === box.x2 && b.y2 === box.y2)) {
        return block.id;
      }
    }
    return null;
  }

  /** `j`: the block after `current`, the first when none is current, null past the last. */
  next(page: number, current: number | null): number | null {
    const ids = this.blocks(page).map((b) => b.id);
    if (current === null) return ids[0] ?? null;
    return ids.find((id) => id > current) ?? null;
  }

  /** `k`: the block before `current`, the last when none is current, null before the first. */
  previous(page: number, current: number | null): number | null {
    const ids = this.blocks(page).map((b) => b.id);
    if (current === null) return ids[ids.length - 1] ?? null;
    return ids.filter((id) => id < current).pop() ?? null;
  }

  /** Ctrl+F: blocks whose Markdown holds the query, ignoring case, in document order. */
  search(query: string): BlockRef[] {
    const needle = query.trim().toLowerCase();
    if (needle === "") return [];
    const found: BlockRef[] = [];
    for (const page of [...this.pages.keys()].sort((a, b) => a - b)) {
      for (const block of this.blocks(page)) {
        if (block.markdown.toLowerCase().includes(needle)) found.push({ page, blockId: block.id });
      }
    }
    return found;
  }

  private page(page: number): Map<number, IndexedBlock> {
    let entries = this.pages.get(page);
    if (!entries) {
      entries = new Map();
      this.pages.set(page, entries);
    }
    return entries;
  }
}
