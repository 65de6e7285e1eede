// Wires the window together: opening documents (command line, Open dialog, drag and drop), reading
// them, and moving between pages. View state only; documents and results live in Rust.
import { getCurrentWebview } from "@tauri-apps/api/webview";
import { open } from "@tauri-apps/plugin-dialog";
import {
  documentsIn,
  engineSettings,
  exportDocument,
  forgetPdfPassword,
  launchPaths,
  notices,
  openDocument,
  recentDocuments,
  saveEngineSettings,
  testConnection,
  type DocumentInfo,
} from "./api";
import { describeExported } from "./export/export-choice";
import { ExportDialog } from "./export/export-dialog";
import { PaneControls } from "./layout/pane-controls";
import { LibraryPane } from "./library-pane";
import { ModelDownloadPanel } from "./model/download-panel";
import { MarkdownViewControls } from "./markdown/view-controls";
import { clickedPageAction } from "./page-controls";
import { copyText } from "./clipboard";
import { PageView } from "./page-view";
import { describePassword, ForgetPasswordButton } from "./password/forget-password";
import { PasswordForm } from "./password/password-form";
import { describeOpenError, needsPassword, Unlocker } from "./password/unlock";
import { scrollToWritingEdge, writingEdgeInView } from "./reading/follow";
import { PaneFollower } from "./reading/pane-follower";
import { SearchBar } from "./search/search-bar";
import { EngineSettingsPanel } from "./settings/settings-panel";
import { DocumentSession } from "./session";
import { describeProgress } from "./status/progress";
import { ThemeControl } from "./theme";
import { TopBar } from "./top-bar";

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page is missing #${id}`);
  return found as T;
}

new ThemeControl(element("theme-select"));

const markdownPane = element<HTMLElement>("markdown-pane");
const markdownContent = element<HTMLElement>("markdown-content");
const title = element<HTMLSpanElement>("document-title");
const statusProgress = element<HTMLElement>("status-progress");
const statusMessage = element<HTMLElement>("status-message");
const dropVeil = element<HTMLDivElement>("drop-veil");
const exportButton = element<HTMLButtonElement>("export-button");

let session: DocumentSession | undefined;
/** The page shown, as the session last said. */
let currentPage = 0;

const pageView = new PageView(
  element("page-pane"),
  { onSelect: (blockId) => session?.selectBox(blockId) },
  (region) => session?.readRegion(region),
);
const library = new LibraryPane(element("library-pane"), (page) => showPage(page));
const modelPanel = new ModelDownloadPanel(element("model-panel"), {
  say: (message) => say(message),
  onFinished: () => void topBar.refreshEngine(),
});
const topBar = new TopBar(
  element("read-button"),
  element("mode-select"),
  element("resolution-select"),
  element("engine-status"),
  (status) => modelPanel.setModelMissing(status.modelMissing),
);

// After a save the top bar asks the engine again, so its line names who reads now.
const settingsPanel = new EngineSettingsPanel(
  element<HTMLDialogElement>("engine-settings-dialog"),
  { engineSettings, saveEngineSettings, testConnection },
  () => void topBar.refreshEngine(),
);
element<HTMLButtonElement>("engine-settings-button").addEventListener("click", () => void settingsPanel.open());

new PaneControls(element("panes"), element("toggle-library"), element("toggle-markdown"));
const markdownToolbar = element<HTMLElement>("markdown-toolbar");
const markdownView = new MarkdownViewControls(markdownToolbar, (view) => {
  markdownContent.classList.toggle("per-page", view.perPage);
  session?.setSource(view.source);
});

const markdownFollower = new PaneFollower(markdownPane, {
  inView: writingEdgeInView,
  scrollTo: scrollToWritingEdge,
  // Text grows a line at a time: the pane moves with it, as a terminal does, not in animated jumps.
  smooth: false,
  what: "the text being written",
  coveredTop: () => markdownToolbar.offsetHeight,
});
// Blocks grow when their text is rendered, after the event that brought it.
new ResizeObserver(() => markdownFollower.look()).observe(markdownContent);

const searchBar = new SearchBar(element("search-slot"), () => session);
const unlocker = new Unlocker(new PasswordForm(element<HTMLFormElement>("password-form")));
const forgetPassword = new ForgetPasswordButton(element("forget-password"), forgetPdfPassword, say);

function say(message: string): void {
  statusMessage.textContent = message;
}

/** Adds `message` after what the status bar says, so that neither hides the other. */
function sayAlso(message: string): void {
  const said = statusMessage.textContent ?? "";
  say(said === "" ? message : `${said} — ${message}`);
}

/** The status bar's figures, at most once a frame however fast events arrive. */
let progressFrame = false;
function showProgress(): void {
  if (progressFrame) return;
  progressFrame = true;
  requestAnimationFrame(() => {
    progressFrame = false;
    if (!session) return;
    statusProgress.textContent = describeProgress(session.progress.figures());
    topBar.setReading(session.progress.reading, true);
  });
}

markdownPane.addEventListener("click", (event) => {
  const action = clickedPageAction(event.target);
  if (action) {
    void pageAction(action.page, action.action);
    return;
  }
  const block = (event.target as HTMLElement).closest<HTMLElement>("[data-block-id]");
  const section = block?.closest<HTMLElement>("[data-page]");
  if (!block || !section) return;
  session?.selectBlock(Number(section.dataset.page), Number(block.dataset.blockId));
});

// A double-clicked block of a page read opens its editor: the person corrects its Markdown.
markdownPane.addEventListener("dblclick", (event) => {
  const block = (event.target as HTMLElement).closest<HTMLElement>("[data-block-id]");
  const section = block?.closest<HTMLElement>("[data-page]");
  if (!block || !section) return;
  session?.editBlock(Number(section.dataset.page), Number(block.dataset.blockId));
});

/** Opens what a drop or the command line names: files, and the documents inside folders. */
async function openNamed(paths: string[]): Promise<void> {
  if (paths.length === 0) return;
  const documents = await documentsIn(paths);
  if (documents.length === 0) say(`No PDFs or images in ${paths.join(", ")}`);
  else await openPaths(documents);
}

async function openPaths(paths: string[]): Promise<void> {
  // Several files may arrive at once; the last one opened is shown. Those that ask for a password
  // come last, so that the others do not wait on the person answering.
  const locked: string[] = [];
  for (const path of paths) {
    try {
      // User Timing marks: how long from asking for a document to seeing its page (tests/desktop/scale).
      performance.mark("deepread:open", { detail: path });
      await showDocument(path, await openDocument(path));
    } catch (error) {
      if (needsPassword(error)) locked.push(path);
      else showOpenError(path, error);
    }
  }
  for (const path of locked) {
    try {
      const doc = await unlocker.unlock(path, ({ password, remember }) => openDocument(path, password, remember));
      if (doc) await showDocument(path, doc);
    } catch (error) {
      showOpenError(path, error);
    }
  }
}

/** Shows a document just opened and starts reading it. */
async function showDocument(path: string, doc: DocumentInfo): Promise<void> {
  performance.mark("deepread:opened", { detail: path });
  void session?.stop();
  session = new DocumentSession(doc, pageView, markdownContent, {
    onPageStatus: (page, status) => library.setStatus(page, status),
    onProgress: showProgress,
    choice: () => topBar.choice(),
    onPageShown: (page) => {
      currentPage = page;
      library.select(page);
    },
    say,
  }, markdownView.view, markdownFollower);
  title.textContent = doc.title;
  forgetPassword.show(doc);
  exportButton.disabled = false;
  library.show(doc);
  showPage(0);
  say("");
  // Reading starts with the page on screen (product.md): its events would hold up the first render.
  await Promise.race([pageView.pageOnScreen(), delay(READING_WAITS_FOR_PAGE_MS)]);
  await startReading(() => session!.read(topBar.choice()));
  const password = describePassword(doc);
  if (password !== null) sayAlso(password);
  void showRecent();
}

function showOpenError(path: string, error: unknown): void {
  pageView.showError(`${path}: ${describeOpenError(error)}`);
  say("");
}

/** The longest a reading waits for its first page to be on screen. */
const READING_WAITS_FOR_PAGE_MS = 1500;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function showRecent(): Promise<void> {
  try {
    library.showRecent(await recentDocuments(), (path) => void openPaths([path]));
  } catch (error) {
    say(String(error));
  }
}

/** Starts a reading and says who reads; a refused one says why. */
async function startReading(start: () => ReturnType<DocumentSession["read"]>): Promise<void> {
  try {
    const started = await start();
    say(started.notice ?? `Reading with ${started.recognizer}`);
  } catch (error) {
    say(String(error));
  }
  showProgress();
}

async function pageAction(page: number, action: "reread" | "retry" | "copy"): Promise<void> {
  const current = session;
  if (!current) return;
  if (action === "copy") {
    await copy(current.pageMarkdown(page), `page ${page + 1}`);
    return;
  }
  await startReading(() =>
    action === "retry" ? current.retry(page, topBar.choice()) : current.reRead(page, topBar.choice()),
  );
}

async function copy(markdown: string, what: string): Promise<void> {
  if (markdown === "") {
    say(`Nothing to copy: ${what} has no Markdown yet.`);
    return;
  }
  try {
    await copyText(markdown);
    say(`Copied the Markdown of ${what} (${markdown.length.toLocaleString("en-US")} characters).`);
  } catch (error) {
    say(`Could not copy ${what}: ${String(error)}`);
  }
}

/** Ctrl+C with no text selected copies the selected block's Markdown source. */
function copySelectedBlock(event: KeyboardEvent): void {
  const selection = window.getSelection();
  if (selection && !selection.isCollapsed) return; // the person's own selection: the usual copy
  const block = session?.selectedBlockMarkdown();
  if (!block) return;
  event.preventDefault();
  void copy(block.markdown, `block ${block.blockId + 1} of page ${block.page + 1}`);
}

function readOrStop(): void {
  const current = session;
  if (!current) return;
  if (current.progress.reading) void current.stop();
  else void startReading(() => current.read(topBar.choice()));
}

/** Shows a page of the open document (the session tells back through onPageShown). */
function showPage(page: number): void {
  if (!session || page < 0 || page >= session.doc.pages.length) return;
  session.showPage(page);
}

async function chooseFiles(): Promise<void> {
  const chosen = await open({
    multiple: true,
    filters: [{ name: "Documents", extensions: ["pdf", "png", "jpg", "jpeg", "tif", "tiff", "webp"] }],
  });
  if (chosen) await openPaths(Array.isArray(chosen) ? chosen : [chosen]);
}

const exportDialog = new ExportDialog(element<HTMLDialogElement>("export-dialog"), { exportDocument });

/** Opens the Export dialog on the open document; the status bar says what the export wrote. */
function exportRead(): void {
  if (!session) return;
  const total = session.doc.pages.length;
  exportDialog.open(session.doc.id, (exported) => say(describeExported(exported, total)));
}

exportButton.addEventListener("click", exportRead);
element<HTMLButtonElement>("open-button").addEventListener("click", () => void chooseFiles());
element<HTMLButtonElement>("read-button").addEventListener("click", readOrStop);

/** Keys typed into a field or a select are theirs, not the window's shortcuts. */
function typingInField(event: KeyboardEvent): boolean {
  const target = event.target as HTMLElement | null;
  return target?.closest("input, select, textarea") != null;
}

window.addEventListener("keydown", (event) => {
  if (!event.ctrlKey && event.key !== "Escape" && typingInField(event)) return;
  if (event.ctrlKey && event.key.toLowerCase() === "o") {
    event.preventDefault();
    void chooseFiles();
  } else if (event.ctrlKey && event.key.toLowerCase() === "e") {
    event.preventDefault();
    exportRead();
  } else if (event.ctrlKey && event.key.toLowerCase() === "f") {
    event.preventDefault();
    searchBar.open();
  } else if (event.ctrlKey && event.key.toLowerCase() === "c") {
    copySelectedBlock(event);
  } else if (event.key === "Escape" && searchBar.isOpen) {
    searchBar.close();
  } else if (event.key === "Escape") {
    void session?.stop();
  } else if (!event.ctrlKey && (event.key === "+" || event.key === "=")) {
    pageView.stepZoom(1);
  } else if (!event.ctrlKey && event.key === "-") {
    pageView.stepZoom(-1);
  } else if (event.key === "j" || event.key === "k") {
    session?.stepBlock(event.key === "j" ? 1 : -1);
  } else if (event.key === "e" && !event.ctrlKey && !event.altKey && !event.metaKey) {
    // Not typed into the editor it focuses.
    event.preventDefault();
    session?.editSelectedBlock();
  } else if (event.key === "ArrowRight") {
    showPage(currentPage + 1);
  } else if (event.key === "ArrowLeft") {
    showPage(currentPage - 1);
  }
});

void getCurrentWebview().onDragDropEvent((event) => {
  const kind = event.payload.type;
  dropVeil.hidden = kind !== "enter" && kind !== "over";
  if (kind === "drop") void openNamed(event.payload.paths);
});

pageView.showWelcome();
void notices().then((messages) => {
  if (messages.length > 0) say(messages.join(" "));
});
void topBar.refreshEngine();
void showRecent();
void launchPaths().then(openNamed);
