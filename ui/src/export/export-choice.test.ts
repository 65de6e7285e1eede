import { describe, expect, it } from "vitest";
import {
  CHAPTER_OPTIONS,
  chaptersFromValue,
  chaptersValue,
  DEFAULT_EXPORT,
  describeExisting,
  describeExported,
  FORMAT_OPTIONS,
  inFormatOrder,
  parseExportChoice,
  type ExportChoice,
} from "./export-choice";

describe("export choice", () => {
  it("offers every format the core writes, each once, under its file extension", () => {
    expect(FORMAT_OPTIONS.map((o) => o.value)).toEqual(["md", "json", "html", "docx", "epub", "xlsx", "csv"]);
    expect(new Set(FORMAT_OPTIONS.map((o) => o.label)).size).toBe(FORMAT_OPTIONS.length);
  });

  it("defaults to what the Export button wrote before: Markdown with figures and the JSON sidecar", () => {
    expect(DEFAULT_EXPORT.formats).toEqual(["md", "json"]);
    expect(DEFAULT_EXPORT.epubChapters).toBe("document");
  });

  it("reads back a choice it stored", () => {
    const choice: ExportChoice = { formats: ["docx", "epub", "xlsx"], epubChapters: { heading: 2 } };
    expect(parseExportChoice(JSON.stringify(choice))).toEqual(choice);
  });

  it("falls back on the default for anything it could not have stored", () => {
    for (const stored of [null, "", "{", "[]", "42", '{"formats":"md"}', '{"formats":[]}', '{"formats":["pdf"]}']) {
      expect(parseExportChoice(stored), String(stored)).toEqual(DEFAULT_EXPORT);
    }
  });

  it("keeps the known formats of a stored choice, in order, and a chapter cut it offers", () => {
    const stored = JSON.stringify({ formats: ["csv", "pdf", "md", "csv"], epubChapters: { heading: 5 } });
    expect(parseExportChoice(stored)).toEqual({ formats: ["md", "csv"], epubChapters: "document" });
    expect(parseExportChoice('{"formats":["html"]}').epubChapters).toBe("document");
  });

  it("maps the chapter menu to the core's chapter cuts and back", () => {
    expect(chaptersFromValue("document")).toBe("document");
    expect(chaptersFromValue("h1")).toEqual({ heading: 1 });
    expect(chaptersFromValue("h2")).toEqual({ heading: 2 });
    for (const option of CHAPTER_OPTIONS) expect(chaptersValue(chaptersFromValue(String(option.value)))).toBe(option.value);
  });

  it("orders formats as the dialog lists them, each once", () => {
    expect(inFormatOrder(["xlsx", "md", "xlsx", "nope"])).toEqual(["md", "xlsx"]);
  });

  it("says what an export wrote, and which tables' formats had nothing to write", () => {
    const exported = { folder: "/out", files: 5, figures: 2, pagesRead: 3, unwritten: [] };
    expect(describeExported(exported, 25)).toBe("Exported 3 of 25 pages to /out (5 files, 2 figures)");
    const noTables = describeExported({ ...exported, unwritten: ["csv", "xlsx"] }, 25);
    expect(noTables).toBe(
      "Exported 3 of 25 pages to /out (5 files, 2 figures). " +
        "No tables were read, so there is no Excel workbook of the tables and no CSV of the tables.",
    );
  });

  it("asks about the files already there by count and name", () => {
    expect(describeExisting("/home/a/out", ["report.md", "images/"])).toBe(
      "2 files already there in /home/a/out: report.md, images/. Replace them?",
    );
    expect(describeExisting("/out", ["report.docx"])).toMatch(/^1 file already there/);
  });
});
