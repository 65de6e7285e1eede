// The label legend over the page: one chip per label on it, with its count; a click hides or shows
// that label's boxes.
import type { BoxLayer } from "./box-layer";

export class Legend {
  constructor(
    private readonly root: HTMLElement,
    private readonly boxes: BoxLayer,
  ) {
    root.classList.add("legend");
    root.addEventListener("click", (event) => {
      const chip = (event.target as HTMLElement).closest<HTMLButtonElement>("button[data-label]");
      const entry = this.boxes.legend().find((e) => e.label === chip?.dataset.label);
      if (!entry) return;
      this.boxes.setLabelHidden(entry.label, !entry.hidden);
      this.refresh();
    });
  }

  /** Redraws the chips from the boxes now on the page. */
  refresh(): void {
    const chips = this.boxes.legend().map((entry) => {
      const chip = document.createElement("button");
      chip.type = "button";
      chip.className = `legend-chip label-${entry.label}`;
      chip.dataset.label = entry.label;
      chip.setAttribute("aria-pressed", String(!entry.hidden));
      chip.textContent = `${entry.label.replace("_", " ")} ${entry.count}`;
      return chip;
    });
    this.root.replaceChildren(...chips);
  }
}
