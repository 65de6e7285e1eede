// The Markdown pane's toolbar: rendered or source, this page or the whole document.

export interface MarkdownView {
  source: boolean;
  perPage: boolean;
}

export class MarkdownViewControls {
  readonly view: MarkdownView = { source: false, perPage: false };

  constructor(
    toolbar: HTMLElement,
    private readonly onChange: (view: MarkdownView) => void,
  ) {
    toolbar.append(
      this.pair("source", [
        ["Rendered", false],
        ["Source", true],
      ]),
      this.pair("perPage", [
        ["Whole document", false],
        ["This page", true],
      ]),
    );
  }

  private pair(key: keyof MarkdownView, choices: [string, boolean][]): HTMLElement {
    const group = document.createElement("div");
    group.className = "segmented";
    group.dataset["view"] = key;
    const buttons = choices.map(([label, value]) => {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = label;
      button.dataset["value"] = String(value);
      button.setAttribute("aria-pressed", String(this.view[key] === value));
      button.addEventListener("click", () => {
        this.view[key] = value;
        for (const b of buttons) b.setAttribute("aria-pressed", String(b === button));
        this.onChange({ ...this.view });
      });
      return button;
    });
    group.append(...buttons);
    return group;
  }
}
