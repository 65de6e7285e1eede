// Each page's heading in the Markdown pane, with what can be done to that page: re-read it with the
// chosen mode, retry it when it failed or looped, copy its Markdown. Buttons carry `data-action`; the pane's click
// handler acts on them.

export type PageAction = "reread" | "retry" | "copy";

export function decoratePage(section: HTMLElement, page: number): void {
  const header = document.createElement("header");
  header.className = "page-header";
  const title = document.createElement("span");
  title.className = "page-title";
  title.textContent = `Page ${page + 1}`;
  header.append(
    title,
    actionButton("copy", "Copy", "Copy this page's Markdown source"),
    actionButton("retry", "Retry", "Read this page again"),
    actionButton("reread", "Re-read", "Read this page again with the mode chosen in the top bar"),
  );
  section.prepend(header);
}

/** The retry's words, which say the mode a looped page is retried with. */
export function setRetryLabel(section: HTMLElement, label: string, title: string): void {
  const button = section.querySelector<HTMLButtonElement>(':scope > .page-header [data-action="retry"]');
  if (!button) return;
  button.textContent = label;
  button.title = title;
}

/** The page and action of a clicked page button, if one was clicked. */
export function clickedPageAction(target: EventTarget | null): { page: number; action: PageAction } | null {
  const button = (target as HTMLElement | null)?.closest<HTMLButtonElement>("button[data-action]");
  const section = button?.closest<HTMLElement>("[data-page]");
  if (!button || !section) return null;
  return { page: Number(section.dataset["page"]), action: button.dataset["action"] as PageAction };
}

function actionButton(action: PageAction, label: string, title: string): HTMLButtonElement {
  const button = document.createElement("button");
  button.type = "button";
  button.className = `page-action page-${action}`;
  button.dataset["action"] = action;
  button.textContent = label;
  button.title = title;
  return button;
}
