// Copying Markdown to the system clipboard.

/** Puts `text` on the clipboard; the older execCommand route where the Clipboard API refuses. */
export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    return;
  } catch {
    // WebKitGTK may refuse the Clipboard API outside a user gesture it recognises.
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  const copied = document.execCommand("copy");
  area.remove();
  if (!copied) throw new Error("the clipboard refused the text");
}

/** A page's Markdown source: its final Markdown once read, else its blocks so far. */
export function pageSource(final: string | undefined, blocks: readonly { markdown: string }[]): string {
  if (final !== undefined) return final.trim();
  return blocks
    .map((b) => b.markdown.trim())
    .filter((m) => m !== "")
    .join("\n\n");
}
