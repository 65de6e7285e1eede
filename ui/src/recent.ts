// The library pane's recent documents, from the cache: a document read before opens with its
// results at once.

/** `RecentDocument` of src-tauri/src/reading.rs. */
export interface RecentDocument {
  path: string;
  title: string | null;
  pageCount: number;
  lastOpenedMs: number;
  available: boolean;
}

/** How long ago, in words: "just now", "5 min ago", "3 h ago", "2 days ago". */
export function describeAge(thenMs: number, nowMs: number): string {
  const minutes = Math.floor(Math.max(0, nowMs - thenMs) / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const days = Math.floor(hours / 24);
  return days === 1 ? "yesterday" : `${days} days ago`;
}

/** The name a recent document goes by: its title, else its file name. */
export function recentName(doc: RecentDocument): string {
  return doc.title?.trim() || doc.path.split(/[\\/]/).pop() || doc.path;
}

/** The recent list as buttons; a file moved away is listed, disabled, with where it was. */
export function recentList(docs: readonly RecentDocument[], now: number, onOpen: (path: string) => void): HTMLElement {
  const list = document.createElement("ul");
  list.className = "recent-list";
  for (const doc of docs) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "recent-document";
    button.dataset["path"] = doc.path;
    button.disabled = !doc.available;
    button.title = doc.available ? doc.path : `Not found where it was read: ${doc.path}`;
    const name = document.createElement("span");
    name.className = "recent-name";
    name.textContent = recentName(doc);
    const meta = document.createElement("span");
    meta.className = "recent-meta";
    meta.textContent = `${doc.pageCount} ${doc.pageCount === 1 ? "page" : "pages"} · ${describeAge(doc.lastOpenedMs, now)}`;
    button.append(name, meta);
    button.addEventListener("click", () => onOpen(doc.path));
    item.append(button);
    list.append(item);
  }
  return list;
}
