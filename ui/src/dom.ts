/** Small builders the dialogs share. */

/** An element with its properties set. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  properties: Partial<HTMLElementTagNameMap[K]> = {},
): HTMLElementTagNameMap[K] {
  return Object.assign(document.createElement(tag), properties);
}

/** `input` (a checkbox or radio) with its label after it, as one row of a dialog, appended to `parent`. */
export function checkRow(parent: HTMLElement, input: HTMLInputElement, text: string): HTMLInputElement {
  const row = el("div", { className: "settings-check" });
  row.append(input, el("label", { htmlFor: input.id, textContent: text }));
  parent.append(row);
  return input;
}
