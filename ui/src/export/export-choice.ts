// What an export writes: the formats the Export dialog offers (`ExportFormat` of
// crates/core/src/export/formats.rs) and how an EPUB is cut into chapters, remembered for the next start.
import type { Exported } from "../api";
import type { Option } from "../reading/modes";

export type ExportFormat = "md" | "json" | "html" | "docx" | "epub" | "xlsx" | "csv";

/** `EpubChapters` of crates/core/src/export/epub/mod.rs: one chapter, or one per heading up to a level. */
export type EpubChapters = "document" | { heading: number };

export interface ExportChoice {
  formats: readonly ExportFormat[];
  epubChapters: EpubChapters;
}

export const FORMAT_OPTIONS: readonly { value: ExportFormat; label: string }[] = [
  { value: "md", label: "Markdown + figures" },
  { value: "json", label: "JSON boxes" },
  { value: "html", label: "HTML page" },
  { value: "docx", label: "Word (.docx)" },
  { value: "epub", label: "EPUB book" },
  { value: "xlsx", label: "Excel workbook of the tables" },
  { value: "csv", label: "CSV of the tables" },
];

/** The chapter menu's values; the menu offers the levels a reading's outline has in practice. */
export type ChaptersValue = "document" | "h1" | "h2";

export const CHAPTER_OPTIONS: readonly Option<ChaptersValue>[] = [
  { value: "document", label: "One chapter" },
  { value: "h1", label: "A chapter per heading 1" },
  { value: "h2", label: "A chapter per heading 1–2" },
];

/** What the app did before the dialog existed: the Markdown with its figures, and the JSON sidecar. */
export const DEFAULT_EXPORT: ExportChoice = Object.freeze({
  formats: Object.freeze<ExportFormat[]>(["md", "json"]),
  epubChapters: "document",
});

export const EXPORT_STORAGE_KEY = "deepread.export";

export function chaptersFromValue(value: string): EpubChapters {
  if (value === "h1") return { heading: 1 };
  if (value === "h2") return { heading: 2 };
  return "document";
}

export function chaptersValue(chapters: EpubChapters): ChaptersValue {
  if (chapters === "document") return "document";
  return chapters.heading === 1 ? "h1" : "h2";
}

function isFormat(value: unknown): value is ExportFormat {
  return FORMAT_OPTIONS.some((option) => option.value === value);
}

/** `formats` once each, in the dialog's order. */
export function inFormatOrder(formats: Iterable<unknown>): ExportFormat[] {
  const chosen = new Set(formats);
  return FORMAT_OPTIONS.map((option) => option.value).filter((format) => chosen.has(format));
}

function parseChapters(value: unknown): EpubChapters {
  if (typeof value !== "object" || value === null || !("heading" in value)) return "document";
  const heading = value.heading;
  return heading === 1 || heading === 2 ? { heading } : "document";
}

/** A stored choice; anything unreadable or empty (nothing yet, an older app's value) is the default. */
export function parseExportChoice(stored: string | null): ExportChoice {
  let value: unknown;
  try {
    value = JSON.parse(stored ?? "");
  } catch {
    return DEFAULT_EXPORT;
  }
  if (typeof value !== "object" || value === null || !("formats" in value) || !Array.isArray(value.formats)) {
    return DEFAULT_EXPORT;
  }
  const formats = inFormatOrder(value.formats.filter(isFormat));
  if (formats.length === 0) return DEFAULT_EXPORT;
  return { formats, epubChapters: parseChapters("epubChapters" in value ? value.epubChapters : undefined) };
}

/** The status bar's line after an export of a document of `total` pages. */
export function describeExported(exported: Exported, total: number): string {
  const wrote =
    `Exported ${exported.pagesRead} of ${total} pages to ${exported.folder} ` +
    `(${exported.files} files, ${exported.figures} figures)`;
  if (exported.unwritten.length === 0) return wrote;
  // Only the tables' formats can have nothing to write.
  const labels = FORMAT_OPTIONS.filter((o) => exported.unwritten.includes(o.value)).map((o) => o.label);
  return `${wrote}. No tables were read, so there is no ${labels.join(" and no ")}.`;
}

/** The question asked before replacing outputs already in the folder. */
export function describeExisting(folder: string, files: readonly string[]): string {
  const count = files.length === 1 ? "1 file" : `${files.length} files`;
  return `${count} already there in ${folder}: ${files.join(", ")}. Replace them?`;
}
