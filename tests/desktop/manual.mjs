// The 25-page manual and the real DeepSeek-OCR output recorded for each of its pages, as the replay
// recognizer (DEEPREAD_REPLAY) reads them.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fixtures, openApp, startDriver } from "./session.mjs";

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

/** The app on the manual, its pages read from their recorded output at `pauseMs` a token (slow enough
 *  to watch a page being read); `close()` ends the app, the driver and the recording. */
export async function openReplayedManual(pauseMs) {
  const dir = mkdtempSync(path.join(tmpdir(), "deepread-replay-"));
  recordManual(dir);
  const driver = await startDriver({ DEEPREAD_REPLAY: dir, DEEPREAD_REPLAY_PAUSE_MS: String(pauseMs) });
  const close = async (app) => {
    await app?.close();
    driver.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const app = await openApp(driver, [path.join(manual, "source.pdf")]);
    return { app, close: () => close(app) };
  } catch (error) {
    await close();
    throw error;
  }
}
