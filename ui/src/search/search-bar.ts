// The Ctrl+F bar over the Markdown pane: typing searches the document's Markdown, Enter and
// Shift+Enter step through the matches, Esc closes it.
import { describeMatches, stepMatch } from "./matches";

export interface SearchTarget {
  /** Lights the blocks holding `query` and their boxes; returns how many there are. */
  search(query: string): number;
  /** Brings match `index` into view, on its page. */
  showMatch(index: number): void;
  clearSearch(): void;
}

export class SearchBar {
  private readonly bar: HTMLDivElement;
  private readonly input: HTMLInputElement;
  private readonly counter: HTMLSpanElement;
  private count = 0;
  private current: number | null = null;

  constructor(
    parent: HTMLElement,
    private readonly target: () => SearchTarget | undefined,
  ) {
    this.bar = document.createElement("div");
    this.bar.className = "search-bar";
    this.bar.hidden = true;
    this.input = document.createElement("input");
    this.input.type = "search";
    this.input.placeholder = "Find in the document";
    this.input.setAttribute("aria-label", "Find in the document");
    this.counter = document.createElement("span");
    this.counter.className = "search-count";
    const close = document.createElement("button");
    close.type = "button";
    close.textContent = "×";
    close.title = "Close (Esc)";
    close.addEventListener("click", () => this.close());
    this.bar.append(this.input, this.counter, close);
    parent.prepend(this.bar);
    this.input.addEventListener("input", () => this.run());
    this.input.addEventListener("keydown", (event) => this.onKey(event));
  }

  get isOpen(): boolean {
    return !this.bar.hidden;
  }

  open(): void {
    this.bar.hidden = false;
    this.input.focus();
    this.input.select();
    if (this.input.value) this.run();
  }

  close(): void {
    this.bar.hidden = true;
    this.target()?.clearSearch();
    this.count = 0;
    this.current = null;
    this.counter.textContent = "";
  }

  private run(): void {
    const target = this.target();
    this.count = target ? target.search(this.input.value) : 0;
    this.current = null;
    this.showCount();
  }

  private onKey(event: KeyboardEvent): void {
    // The window's own shortcuts (Esc stops reading) are not for keys typed here.
    event.stopPropagation();
    if (event.key === "Escape") {
      event.preventDefault();
      this.close();
    } else if (event.key === "Enter") {
      event.preventDefault();
      this.current = stepMatch(this.current, this.count, event.shiftKey ? -1 : 1);
      if (this.current !== null) this.target()?.showMatch(this.current);
      this.showCount();
    }
  }

  private showCount(): void {
    this.counter.textContent = describeMatches(this.current, this.count, this.input.value);
  }
}
