// Wires the window together: opening documents (command line, Open dialog, drag and drop) and
// moving between pages. View state only; documents live in Rust.
import { getCurrentWebview } from "@tauri-apps/api/webview";
import { open } from "@tauri-apps/plugin-dialog";
import { launchPaths, openDocument, type DocumentInfo } from "./api";
import { LibraryPane } from "./library-pane";
import { PageView } from "./page-view";

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page is missing #${id}`);
  return found as T;
}

const pageView = new PageView(element("page-pane"));
const library = new LibraryPane(element("library-pane"), (page) => showPage(page));
const title = element<HTMLSpanElement>("document-title");
const statusBar = element<HTMLElement>("status-bar");
const dropVeil = element<HTMLDivElement>("drop-veil");

let current: DocumentInfo | undefined;
let currentPage = 0;

async function openPaths(paths: string[]): Promise<void> {
  // Several files may arrive at once; the last one opened is shown.
  for (const path of paths) {
    try {
      current = await openDocument(path);
      currentPage = 0;
      title.textContent = current.title;
      library.show(current);
      showPage(0);
    } catch (error) {
      pageView.showError(`${path}: ${String(error)}`);
      statusBar.textContent = "";
    }
  }
}

function showPage(page: number): void {
  if (!current || page < 0 || page >= current.pages.length) return;
  currentPage = page;
  pageView.show(current, page);
  library.select(page);
  statusBar.textContent = `Page ${page + 1} of ${current.pages.length}`;
}

async function chooseFiles(): Promise<void> {
  const chosen = await open({
    multiple: true,
    filters: [{ name: "Documents", extensions: ["pdf", "png", "jpg", "jpeg", "tif", "tiff", "webp"] }],
  });
  if (chosen) await openPaths(Array.isArray(chosen) ? chosen : [chosen]);
}

element<HTMLButtonElement>("open-button").addEventListener("click", () => void chooseFiles());

window.addEventListener("keydown", (event) => {
  if (event.ctrlKey && event.key.toLowerCase() === "o") {
    event.preventDefault();
    void chooseFiles();
  } else if (event.key === "ArrowRight") {
    showPage(currentPage + 1);
  } else if (event.key === "ArrowLeft") {
    showPage(currentPage - 1);
  }
});

void getCurrentWebview().onDragDropEvent((event) => {
  const kind = event.payload.type;
  dropVeil.hidden = kind !== "enter" && kind !== "over";
  if (kind === "drop") void openPaths(event.payload.paths);
});

pageView.showWelcome();
void launchPaths().then(openPaths);
