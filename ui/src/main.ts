// Wires the window together: opening documents (command line, Open dialog, drag and drop), reading
// them, and moving between pages. View state only; documents and results live in Rust.
import { getCurrentWebview } from "@tauri-apps/api/webview";
import { open } from "@tauri-apps/plugin-dialog";
import { exportDocument, launchPaths, notices, openDocument } from "./api";
import { LibraryPane } from "./library-pane";
import { PageView } from "./page-view";
import { DocumentSession } from "./session";

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page is missing #${id}`);
  return found as T;
}

const markdownPane = element<HTMLElement>("markdown-pane");
const title = element<HTMLSpanElement>("document-title");
const statusBar = element<HTMLElement>("status-bar");
const dropVeil = element<HTMLDivElement>("drop-veil");
const exportButton = element<HTMLButtonElement>("export-button");

let session: DocumentSession | undefined;
let currentPage = 0;

const pageView = new PageView(element("page-pane"), {
  onSelect: (blockId) => session?.selectBox(blockId),
});
const library = new LibraryPane(element("library-pane"), (page) => showPage(page));

markdownPane.addEventListener("click", (event) => {
  const block = (event.target as HTMLElement).closest<HTMLElement>("[data-block-id]");
  const section = block?.closest<HTMLElement>("[data-page]");
  if (!block || !section) return;
  session?.selectBlock(Number(section.dataset.page), Number(block.dataset.blockId));
  showPage(Number(section.dataset.page), { keepMarkdown: true });
});

async function openPaths(paths: string[]): Promise<void> {
  // Several files may arrive at once; the last one opened is shown.
  for (const path of paths) {
    try {
      const doc = await openDocument(path);
      void session?.stop();
      session = new DocumentSession(
        doc,
        pageView,
        markdownPane,
        (text) => (statusBar.textContent = text),
        (page, status) => library.setStatus(page, status),
      );
      title.textContent = doc.title;
      exportButton.disabled = false;
      library.show(doc);
      showPage(0);
      await session.read();
    } catch (error) {
      pageView.showError(`${path}: ${String(error)}`);
      statusBar.textContent = "";
    }
  }
}

function showPage(page: number, { keepMarkdown = false } = {}): void {
  if (!session || page < 0 || page >= session.doc.pages.length) return;
  if (page !== currentPage || !keepMarkdown) session.showPage(page);
  currentPage = page;
  library.select(page);
}

async function chooseFiles(): Promise<void> {
  const chosen = await open({
    multiple: true,
    filters: [{ name: "Documents", extensions: ["pdf", "png", "jpg", "jpeg", "tif", "tiff", "webp"] }],
  });
  if (chosen) await openPaths(Array.isArray(chosen) ? chosen : [chosen]);
}

async function exportRead(): Promise<void> {
  if (!session) return;
  const total = session.doc.pages.length;
  exportButton.disabled = true;
  try {
    const exported = await exportDocument(session.doc.id);
    if (exported) {
      statusBar.textContent =
        `Exported ${exported.pagesRead} of ${total} pages to ${exported.folder} ` +
        `(${exported.files} files, ${exported.figures} figures)`;
    }
  } catch (error) {
    statusBar.textContent = String(error);
  } finally {
    exportButton.disabled = false;
  }
}

exportButton.addEventListener("click", () => void exportRead());
element<HTMLButtonElement>("open-button").addEventListener("click", () => void chooseFiles());
element<HTMLButtonElement>("stop-button").addEventListener("click", () => void session?.stop());

window.addEventListener("keydown", (event) => {
  if (event.ctrlKey && event.key.toLowerCase() === "o") {
    event.preventDefault();
    void chooseFiles();
  } else if (event.ctrlKey && event.key.toLowerCase() === "e") {
    event.preventDefault();
    void exportRead();
  } else if (event.key === "Escape") {
    void session?.stop();
  } else if (event.key === "j" || event.key === "k") {
    session?.stepBlock(event.key === "j" ? 1 : -1);
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
void notices().then((messages) => {
  if (messages.length > 0) statusBar.textContent = messages.join(" ");
});
void launchPaths().then(openPaths);
