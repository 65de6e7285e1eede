// The 25-page manual and the real DeepSeek-OCR output recorded for each of its pages, as the replay
// recognizer (DEEPREAD_REPLAY) reads them.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fixtures } from "./session.mjs";

export const manual = path.join(fixtures, "grounding/with_source/xiongpu1_agent/vastera_manual");
export const MANUAL_PAGES = 25;

/** The model's text inside a reference `infer` stdout capture: between the header and the stats. */
export function capturedOutput(file) {
  const capture = readFileSync(file, "utf8");
  const header = "=====================\n";
  const start = capture.indexOf(header, capture.indexOf(header) + header.length) + header.length;
  const end = capture.indexOf("==================================================\nimage size");
  return capture.slice(start, end);
}

/** Every page's recorded output, as `pageNNN.md` in `dir`, for DEEPREAD_REPLAY. */
export function recordManual(dir) {
  mkdirSync(dir, { recursive: true });
  for (let page = 1; page <= MANUAL_PAGES; page++) {
    const name = `page${String(page).padStart(3, "0")}`;
    writeFileSync(path.join(dir, `${name}.md`), capturedOutput(path.join(manual, `${name}.stdout.md`)));
  }
}
