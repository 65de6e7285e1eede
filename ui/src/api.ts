// The Rust side's commands and the page image protocol, typed.
import { Channel, invoke } from "@tauri-apps/api/core";
import type { BoxNorm, CorrectedPage, ReadingEvent } from "./events";
import type { ExportChoice, ExportFormat } from "./export/export-choice";
import type { ReadingChoice } from "./reading/modes";
import type { RecentDocument } from "./recent";
import type { DownloadEvent } from "./model/download";
import type { OpenError } from "./password/unlock";
import type { EngineStatus } from "./status/engine-status";

export interface PageSize {
  width_pt: number;
  height_pt: number;
}

export interface DocumentInfo {
  id: string;
  path: string;
  title: string;
  pages: PageSize[];
  /** How its password was used: "none" (not encrypted), "entered" (typed, not kept), "remembered" (from the
   * system keyring, now or just stored there). */
  password: "none" | "entered" | "remembered";
  /** A word for the status bar about the password, e.g. why it could not be remembered; null when none. */
  passwordNotice: string | null;
}

export function launchPaths(): Promise<string[]> {
  return invoke<string[]>("launch_paths");
}

/** The documents `paths` name: files as they are, each folder replaced by the documents inside it. */
export function documentsIn(paths: string[]): Promise<string[]> {
  return invoke<string[]>("documents_in", { paths });
}

/** Opens a document; an encrypted PDF with its `password`, which Rust keeps in the system keyring when
 * `remember` and otherwise uses once. Without a password Rust tries one remembered for the document.
 * Rejects with an {@link OpenError}. */
export function openDocument(path: string, password?: string, remember = false): Promise<DocumentInfo> {
  return invoke<DocumentInfo>("open_document", password === undefined ? { path } : { path, password, remember });
}

/** Drops the password remembered for document `id` from the system keyring. Rejects with why it could not. */
export function forgetPdfPassword(id: string): Promise<void> {
  return invoke<void>("forget_pdf_password", { id });
}

// Custom protocols are `scheme://localhost/` on Linux and macOS, `http://scheme.localhost/` on Windows.
const pageOrigin = navigator.userAgent.includes("Windows") ? "http://page.localhost" : "page://localhost";

export function pageImageUrl(documentId: string, page: number, widthPx: number): string {
  return `${pageOrigin}/${encodeURIComponent(documentId)}/${page}?w=${Math.round(widthPx)}`;
}

/** The figure under `boxes`, cropped from the page rendered `pageWidthPx` wide (page_protocol.rs). */
export function figureImageUrl(documentId: string, page: number, pageWidthPx: number, boxes: readonly BoxNorm[]): string {
  const crop = boxes.map((b) => `&box=${b.x1},${b.y1},${b.x2},${b.y2}`).join("");
  return `${pageImageUrl(documentId, page, pageWidthPx)}${crop}`;
}

export interface ReadingStarted {
  recognizer: string;
  notice: string | null;
}

/** `ReadRequest` of src-tauri/src/reading.rs: the mode, and for a re-read which pages and whether
 * the cache may answer. */
export interface ReadRequest extends ReadingChoice {
  pages?: number[];
  useCache?: boolean;
}

/** Starts reading a document; its events arrive through `onEvent` in order. */
export function readDocument(
  id: string,
  request: ReadRequest,
  onEvent: (event: ReadingEvent) => void,
): Promise<ReadingStarted> {
  const events = new Channel<ReadingEvent>();
  events.onmessage = onEvent;
  return invoke<ReadingStarted>("read_document", { id, request, events });
}

/** Who reads and on what device; the first call loads the model. */
export function engineStatus(): Promise<EngineStatus> {
  return invoke<EngineStatus>("engine_status");
}

/** Downloads DeepSeek-OCR-2; progress and the outcome arrive through `onEvent`. */
export function downloadModel(onEvent: (event: DownloadEvent) => void): Promise<void> {
  const events = new Channel<DownloadEvent>();
  events.onmessage = onEvent;
  return invoke<void>("download_model", { events });
}

/** Stops the model download; what was fetched is kept for the next one. */
export function cancelModelDownload(): Promise<void> {
  return invoke<void>("cancel_model_download");
}

export function stopReading(id: string): Promise<void> {
  return invoke<void>("stop_reading", { id });
}

/** Markdown to sanitized HTML, in Rust (pulldown-cmark and an allow-list). */
export function renderMarkdown(markdown: string): Promise<string> {
  return invoke<string>("render_markdown", { markdown });
}

export function notices(): Promise<string[]> {
  return invoke<string[]>("notices");
}

/** `Exported` of src-tauri/src/export_command.rs: what an export wrote, for the status bar. */
export interface Exported {
  folder: string;
  files: number;
  figures: number;
  pagesRead: number;
  /** The formats chosen that had nothing to write: the workbook and the CSV of a reading without tables. */
  unwritten: ExportFormat[];
}

/** Outputs of the export found in the folder; nothing was written. `files` are relative to `folder`,
 * folders ending in "/". */
export interface AlreadyThere {
  folder: string;
  files: string[];
}

/** `ExportOutcome` of src-tauri/src/export_command.rs. */
export type ExportOutcome =
  | { outcome: "cancelled" }
  | ({ outcome: "alreadyThere" } & AlreadyThere)
  | ({ outcome: "written" } & Exported);

/** Writes the pages read so far in the formats chosen, to a folder the person picks. Outputs already
 * there are replaced only in `replaceIn`, the folder of an earlier answer, which is not asked for again.
 * Rejects with the reason nothing was written. */
export function exportDocument(id: string, choice: ExportChoice, replaceIn?: string): Promise<ExportOutcome> {
  const request = {
    formats: choice.formats,
    epubChapters: choice.epubChapters,
    overwrite: replaceIn !== undefined,
    folder: replaceIn ?? null,
  };
  return invoke<ExportOutcome>("export_document", { id, request });
}

/** Documents read before, newest first, from the cache. */
export function recentDocuments(): Promise<RecentDocument[]> {
  return invoke<RecentDocument[]>("recent_documents");
}

/** `EngineSettings` of the Rust side: who reads, and for a server where and how. */
export interface EngineSettings {
  engine: "local" | "remote";
  /** The server's OpenAI-compatible base URL, such as http://127.0.0.1:8000/v1. */
  endpoint: string;
  /** The model name the server serves. */
  model: string;
  /** Pages sent at once; null for the default. */
  concurrency: number | null;
  /** Plain http to another machine, which the server refuses otherwise. */
  allowHttp: boolean;
  /** The local model's language-model weights: bf16 as downloaded, or int8 (half the memory). */
  weights: Weights;
}

export type Weights = "bf16" | "int8";

export interface StoredEngineSettings {
  settings: EngineSettings;
  /** An API key is in the system keyring (the key itself never comes back). */
  apiKeyStored: boolean;
  /** Why the keyring cannot be used; null when it can. */
  keyringProblem: string | null;
}

export interface ConnectionTest {
  ok: boolean;
  message: string;
  /** The models the server says it serves. */
  models: string[];
}

export function engineSettings(): Promise<StoredEngineSettings> {
  return invoke<StoredEngineSettings>("engine_settings");
}

/** Saves the settings; `apiKey` null keeps the stored key, "" forgets it, anything else is stored.
 * Rejects with the reason the settings were refused. */
export function saveEngineSettings(settings: EngineSettings, apiKey: string | null): Promise<StoredEngineSettings> {
  return invoke<StoredEngineSettings>("save_engine_settings", { settings, apiKey });
}

/** Asks the server in `settings` for its models; `apiKey` null uses the stored key. */
export function testConnection(settings: EngineSettings, apiKey: string | null): Promise<ConnectionTest> {
  return invoke<ConnectionTest>("test_connection", { settings, apiKey });
}

/** Block `blockId` of `page` as last read in this window (`id`: the document): what a correction is kept under. */
export interface CorrectedBlock {
  id: string;
  page: number;
  blockId: number;
}

/** The person's Markdown for a block. */
export interface BlockCorrection extends CorrectedBlock {
  markdown: string;
  /** The `correctedBlock` of a differing correction this one replaces (the person kept theirs), else null. */
  replacing: number | null;
}

/** Keeps the person's Markdown for a block in the cache, where every export and later reading finds it;
 * the model's own text drops the correction instead. Resolves with the page as it now shows; rejects with
 * why it could not be kept. */
export function correctBlock(correction: BlockCorrection): Promise<CorrectedPage> {
  return invoke<CorrectedPage>("correct_block", { ...correction });
}

/** Drops the correction stored under `blockId` of `page`: the reading's text shows again. Resolves with
 * the page as it now shows. */
export function forgetCorrection(block: CorrectedBlock): Promise<CorrectedPage> {
  return invoke<CorrectedPage>("forget_correction", { ...block });
}

/** A region of a page to read again (`id`: the document), with the mode and resolution the top bar shows. */
export interface RegionRequest extends ReadingChoice {
  id: string;
  page: number;
  region: BoxNorm;
}

/** `RegionRead` of src-tauri/src/region_command.rs: what a region of a page reads as. */
export interface RegionRead {
  page: number;
  region: BoxNorm;
  /** The region's Markdown as read. */
  markdown: string;
  /** The label of what was read ("text", "table", ...): the block's label if added. */
  label: string;
  /** The block of the page shown whose boxes the region overlaps most, or null: what "Replace" replaces. */
  overlaps: number | null;
  /** Who read it, e.g. "DeepSeek-OCR-2" or "text layer". */
  recognizer: string;
  /** The model looped and was stopped: the text is what came before the loop. */
  looped: boolean;
}

/** Reads a region of a page alone: Rust crops the page and reads the crop (the model may take seconds).
 * Rejects with why it could not (the region is too small, the page could not be rendered, the model failed). */
export function readRegion(request: RegionRequest): Promise<RegionRead> {
  return invoke<RegionRead>("read_region", { ...request });
}

/** A block the person adds to a page: text (a region's, as read and edited), with the region as its box. */
export interface AddedBlock {
  id: string;
  page: number;
  region: BoxNorm;
  label: string;
  markdown: string;
}

/** Keeps a new block on a page, stored in the cache as corrections are. Resolves with the page as it now
 * shows; rejects with why it could not be kept. */
export function addBlock(block: AddedBlock): Promise<CorrectedPage> {
  return invoke<CorrectedPage>("add_block", { ...block });
}
