// @vitest-environment happy-dom
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Exported, ExportOutcome } from "../api";
import { EXPORT_STORAGE_KEY, FORMAT_OPTIONS, type ExportChoice } from "./export-choice";
import { ExportDialog, type ExportApi } from "./export-dialog";

const WRITTEN: ExportOutcome = { outcome: "written", folder: "/out", files: 4, figures: 1, pagesRead: 3, unwritten: [] };

/** A promise the test settles when it wants, to look at the dialog while the command is waiting. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((res) => (resolve = res));
  return { promise, resolve };
}

function setup(answers: ExportOutcome[] = [WRITTEN]) {
  const dialog = document.createElement("dialog");
  document.body.append(dialog);
  const api = {
    exportDocument: vi.fn((_id: string, _choice: ExportChoice, _replaceIn?: string) =>
      Promise.resolve(answers.shift() ?? WRITTEN),
    ),
  } satisfies ExportApi;
  const exportDialog = new ExportDialog(dialog, api, localStorage);
  const written = vi.fn((_exported: Exported) => {});
  const $ = <T extends HTMLElement>(id: string) => dialog.querySelector<T>(`#${id}`)!;
  const box = (format: string) => $<HTMLInputElement>(`export-format-${format}`);
  const toggle = (format: string) => {
    box(format).checked = !box(format).checked;
    box(format).dispatchEvent(new Event("change", { bubbles: true }));
  };
  const checked = () => FORMAT_OPTIONS.map((o) => o.value).filter((f) => box(f).checked);
  const submit = () => dialog.querySelector("form")!.dispatchEvent(new Event("submit", { cancelable: true }));
  const settle = () => new Promise((resolve) => setTimeout(resolve));
  const open = () => exportDialog.open("doc-1", written);
  return { dialog, api, exportDialog, written, $, box, toggle, checked, submit, settle, open };
}

beforeEach(() => localStorage.clear());
afterEach(() => document.body.replaceChildren());

describe("ExportDialog", () => {
  it("opens as a modal with a labelled checkbox per format, Markdown and JSON checked", () => {
    const { dialog, $, checked, open } = setup();
    expect(dialog.open).toBe(false);
    open();
    expect(dialog.open).toBe(true);
    for (const option of FORMAT_OPTIONS) {
      expect(dialog.querySelector(`label[for=export-format-${option.value}]`)?.textContent).toBe(option.label);
    }
    expect(checked()).toEqual(["md", "json"]);
    expect($("export-epub-chapters").closest<HTMLElement>(".export-chapters")!.hidden).toBe(true);
    expect($<HTMLButtonElement>("export-confirm").disabled).toBe(false);
    expect($("export-replace").hidden).toBe(true);
  });

  it("shows the EPUB's chapters only while EPUB is checked, and cannot export nothing", () => {
    const { $, toggle, submit, api, open } = setup();
    open();
    const chapters = $("export-epub-chapters").closest<HTMLElement>(".export-chapters")!;
    toggle("epub");
    expect(chapters.hidden).toBe(false);
    expect([...$<HTMLSelectElement>("export-epub-chapters").options].map((o) => o.textContent)).toEqual([
      "One chapter",
      "A chapter per heading 1",
      "A chapter per heading 1–2",
    ]);
    toggle("epub");
    expect(chapters.hidden).toBe(true);
    toggle("md");
    toggle("json");
    expect($<HTMLButtonElement>("export-confirm").disabled).toBe(true);
    submit();
    expect(api.exportDocument).not.toHaveBeenCalled();
  });

  it("exports the formats checked, closes, reports, and opens on that choice after a restart", async () => {
    const { dialog, $, toggle, submit, settle, api, written, open } = setup();
    open();
    toggle("json");
    toggle("docx");
    toggle("epub");
    $<HTMLSelectElement>("export-epub-chapters").value = "h2";
    submit();
    await settle();
    expect(api.exportDocument).toHaveBeenCalledWith("doc-1", { formats: ["md", "docx", "epub"], epubChapters: { heading: 2 } }, undefined);
    expect(dialog.open).toBe(false);
    expect(written).toHaveBeenCalledWith(WRITTEN);

    // The next start: a new dialog over the same storage.
    document.body.replaceChildren();
    const next = setup();
    next.open();
    expect(next.checked()).toEqual(["md", "docx", "epub"]);
    expect(next.$<HTMLSelectElement>("export-epub-chapters").value).toBe("h2");
    expect(next.$("export-epub-chapters").closest<HTMLElement>(".export-chapters")!.hidden).toBe(false);
  });

  it("asks before replacing files already there, then replaces them in the same folder", async () => {
    const existing: ExportOutcome = { outcome: "alreadyThere", folder: "/home/a/out", files: ["source.md", "images/"] };
    const { dialog, $, submit, settle, api, written, open } = setup([existing, WRITTEN]);
    open();
    submit();
    await settle();
    expect(dialog.open).toBe(true);
    expect(written).not.toHaveBeenCalled();
    expect($("export-existing").hidden).toBe(false);
    expect($("export-existing").textContent).toContain("2 files already there in /home/a/out");
    expect($("export-existing").textContent).toContain("source.md, images/");
    expect($("export-replace").hidden).toBe(false);
    expect($("export-confirm").hidden).toBe(true);
    expect(document.activeElement, "the safe answer has the focus").toBe($("export-cancel"));

    $("export-replace").click();
    await settle();
    expect(api.exportDocument).toHaveBeenLastCalledWith("doc-1", { formats: ["md", "json"], epubChapters: "document" }, "/home/a/out");
    expect(dialog.open).toBe(false);
    expect(written).toHaveBeenCalledWith(WRITTEN);
  });

  it("writes nothing more when the question is cancelled, and asks afresh once the choice changes", async () => {
    const existing: ExportOutcome = { outcome: "alreadyThere", folder: "/out", files: ["source.json"] };
    const { dialog, $, toggle, submit, settle, api, open } = setup([existing, existing]);
    open();
    submit();
    await settle();
    toggle("html");
    expect($("export-existing").hidden).toBe(true);
    expect($("export-replace").hidden).toBe(true);
    expect($("export-confirm").hidden).toBe(false);
    submit();
    await settle();
    $("export-cancel").click();
    expect(dialog.open).toBe(false);
    expect(api.exportDocument).toHaveBeenCalledTimes(2);
    expect(api.exportDocument.mock.calls.every((call) => call[2] === undefined)).toBe(true);

    open();
    expect($("export-existing").hidden).toBe(true);
  });

  it("says why an export failed and stays open; a folder dialog closed unanswered changes nothing", async () => {
    const { dialog, $, submit, settle, api, written, open } = setup([{ outcome: "cancelled" }]);
    open();
    submit();
    await settle();
    expect(dialog.open).toBe(true);
    expect($("export-error").hidden).toBe(true);
    api.exportDocument.mockRejectedValueOnce("Export failed: permission denied (/out/source.md)");
    submit();
    await settle();
    expect(dialog.open).toBe(true);
    expect($("export-error").textContent).toBe("Export failed: permission denied (/out/source.md)");
    expect(written).not.toHaveBeenCalled();
  });

  it("cannot be exported twice or closed while an export is under way", async () => {
    const pending = deferred<ExportOutcome>();
    const { dialog, $, submit, settle, api, open } = setup();
    api.exportDocument.mockReturnValueOnce(pending.promise);
    open();
    submit();
    expect($<HTMLButtonElement>("export-confirm").disabled).toBe(true);
    expect($<HTMLButtonElement>("export-cancel").disabled).toBe(true);
    submit();
    dialog.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    expect(dialog.open).toBe(true);
    pending.resolve(WRITTEN);
    await settle();
    expect(api.exportDocument).toHaveBeenCalledTimes(1);
    expect(dialog.open).toBe(false);
  });

  it("closes on Escape, which the window's shortcuts do not see", () => {
    const { dialog, open } = setup();
    const windowKeys = vi.fn();
    window.addEventListener("keydown", windowKeys);
    open();
    dialog.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    window.removeEventListener("keydown", windowKeys);
    expect(dialog.open).toBe(false);
    expect(windowKeys).not.toHaveBeenCalled();
  });

  it("ignores a stored choice it cannot read", () => {
    localStorage.setItem(EXPORT_STORAGE_KEY, "not json");
    const { checked, open } = setup();
    open();
    expect(checked()).toEqual(["md", "json"]);
  });
});
