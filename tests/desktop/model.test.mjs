// The model path inside the window. With no weights anywhere, the first-run panel downloads DeepSeek-OCR-2 from a
// hub on 127.0.0.1 (a tiny random model with the real tokenizer and its full vocabulary, written by `deepread
// synthesize`): progress in the panel and the status bar, Cancel, a resumed second try, and the engine then
// reads with it. A PDF opened next is read by the model on the CPU: the page is rendered, tokens stream into
// the Markdown pane, the page finishes (or is caught as a loop), is cached, reopens from the cache, and exports.
// The text is random: the test checks the path, not the words.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startFakeHub } from "./fake-hub.mjs";
import { fixtures, openApp, repoRoot, startDriver } from "./session.mjs";

const REPO = "deepseek-ai/DeepSeek-OCR-2";
// The revision the app downloads (crates/models: PINNED_REVISION).
const COMMIT = "aaa02f3811945a91062062994c5c4a3f4c0af2b0";
const pdf = path.join(fixtures, "pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf");

const scratch = mkdtempSync(path.join(tmpdir(), "deepread-model-"));
const source = path.join(scratch, "served-model");
const hfHome = path.join(scratch, "hf");
const exportDir = path.join(scratch, "export");
const repoCache = path.join(hfHome, "hub", `models--${REPO.replace("/", "--")}`);
let hub;
let driver;

before(async () => {
  const made = spawnSync(
    path.join(repoRoot, "target/debug/deepread"),
    ["synthesize", "--config", "tiny", "--tokenizer", path.join(fixtures, "tokenizer"), "--out", source, "--seed", "7"],
    { encoding: "utf8" },
  );
  assert.equal(made.status, 0, `deepread synthesize failed: ${made.stderr}`);
  hub = await startFakeHub({ dir: source, repo: REPO, commit: COMMIT, seconds: 10 });
  driver = await startDriver({
    HF_ENDPOINT: hub.endpoint,
    HF_HOME: hfHome,
    HF_TOKEN: "",
    // No folder named: the app looks in the Hugging Face cache, where the download puts the model.
    DEEPREAD_MODEL: "",
    DEEPREAD_EXPORT_DIR: exportDir,
  });
});

after(async () => {
  driver?.close();
  await hub?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** The panel as a person sees it, as a JavaScript expression. */
const panel = `(() => {
  const p = document.getElementById("model-panel");
  const visible = (e) => !e.hidden && e.getBoundingClientRect().width > 0;
  const download = p.querySelector(".model-panel-download");
  return { shown: !p.hidden, state: p.dataset.state, text: p.querySelector(".model-panel-text").textContent,
    download: visible(download) ? download.textContent : null, cancel: visible(p.querySelector(".model-panel-cancel")),
    status: document.getElementById("status-message").textContent };
})()`;

const recognizer = `document.getElementById("engine-status").dataset.recognizer ?? null`;
const modelReads = `const r = ${recognizer}; return r === "DeepSeek-OCR-2" ? r : null;`;

test("with no weights, the panel downloads DeepSeek-OCR-2 with progress, cancels, resumes, and the engine loads it", async () => {
  const app = await openApp(driver, []);
  try {
    const offer = await app.waitFor("the download offer", `const s = ${panel}; return s.shown && s.download ? s : null;`);
    assert.equal(offer.download, "Download DeepSeek-OCR-2, 6.8 GB");
    assert.match(offer.text, /not on this computer/);
    assert.equal(await app.run(`return ${recognizer};`), "text layer");

    await app.clickOn(".model-panel-download");
    const moving = await app.waitFor(
      "the download's progress",
      `const s = ${panel}; return /GB of .* GB · .* MB\\/s/.test(s.text) ? s : null;`,
    );
    assert.equal(moving.state, "downloading");
    assert.ok(moving.cancel, "Cancel is offered while downloading");
    assert.match(moving.status, /^Downloading DeepSeek-OCR-2: /, "the status bar shows it too");
    writeFileSync(path.join(repoRoot, "docs/screenshots/model-download.png"), await app.screenshot());

    // Cancel midway: the bytes fetched so far stay, as a partial blob.
    await app.clickOn(".model-panel-cancel");
    const cancelled = await app.waitFor("the download to stop", `const s = ${panel}; return /cancelled/.test(s.status) ? s : null;`);
    assert.equal(cancelled.download, "Download DeepSeek-OCR-2, 6.8 GB", "the offer comes back");
    const partial = readdirSync(path.join(repoCache, "blobs")).filter((f) => f.endsWith(".incomplete"));
    assert.equal(partial.length, 1, `one partial file is kept: ${readdirSync(path.join(repoCache, "blobs"))}`);

    // Again: the partial file is continued, not fetched anew, and the engine then reads with the model.
    await app.clickOn(".model-panel-download");
    await app.waitFor("the panel to close once the model is there", `return document.getElementById("model-panel").hidden;`, 60_000);
    assert.ok(
      hub.requests.some((r) => /^GET \S+ bytes=[1-9]\d*-$/.test(r)),
      `the file cut by Cancel was resumed with a Range request: ${hub.requests.join("; ")}`,
    );
    assert.equal(await app.waitFor("the engine to load the model", modelReads, 60_000), "DeepSeek-OCR-2");

    // The download is the hub's own cache layout, each file the bytes served.
    const snapshot = path.join(repoCache, "snapshots", COMMIT);
    for (const name of readdirSync(source)) {
      assert.ok(readFileSync(path.join(snapshot, name)).equals(readFileSync(path.join(source, name))), `${name} as served`);
    }
    assert.equal(readdirSync(path.join(repoCache, "blobs")).filter((f) => f.endsWith(".incomplete")).length, 0);
  } finally {
    await app.close();
  }
});

const pageStatus = `document.querySelector('.thumbnail[data-page="0"]')?.dataset.status ?? null`;

test("a PDF is read by the downloaded model: tokens stream in, the page ends, is cached, reopens from the cache, exports", async () => {
  let ended;
  const app = await openApp(driver, [pdf]);
  try {
    assert.equal(await app.waitFor("the model to read", modelReads, 60_000), "DeepSeek-OCR-2");
    // Tokens arrive while the page is read: the status bar counts them, the Markdown pane grows.
    const streaming = await app.waitFor(
      "tokens to stream",
      `const p = document.getElementById("status-progress").textContent;
       const text = document.querySelector('#markdown-pane [data-page="0"]')?.textContent ?? "";
       return /tokens\\/s/.test(p) && text.length > 0 ? { p, length: text.length } : null;`,
      120_000,
    );
    assert.ok(streaming.length > 0);
    ended = await app.waitFor(
      "the page to end (read, or stopped as a loop)",
      `const s = ${pageStatus}; return s === "done" || s === "looped" ? s : null;`,
      240_000,
    );
    // The Export dialog opens with Markdown and JSON ticked, as it does for a first export.
    await app.pressCtrl("e");
    await app.waitFor("the Export dialog to open", `return document.getElementById("export-dialog").open;`);
    await app.clickOn("#export-confirm");
    const json = path.join(exportDir, "docling__2305.03393v1-pg9.json");
    for (let waited = 0; !existsSync(json); waited += 200) {
      assert.ok(waited < 60_000, "the export did not finish within a minute");
      await sleep(200);
    }
    const sidecar = JSON.parse(readFileSync(json, "utf8"));
    assert.equal(sidecar.pages[0].status, ended === "done" ? "read" : "looped");
    assert.equal(sidecar.pages[0].read_by.recognizer, "DeepSeek-OCR-2");
    assert.ok(sidecar.pages[0].read_by.generated_tokens > 0, "the model generated tokens");
    assert.ok(sidecar.pages[0].read_by.prompt_tokens > 256, "the prompt held the page's image tokens");
    assert.ok(existsSync(path.join(exportDir, "docling__2305.03393v1-pg9.md")));
  } finally {
    await app.close();
  }

  // A second window: the page comes from the cache, with no reading (a looped page stays marked as looped).
  const again = await openApp(driver, [pdf]);
  try {
    const cached = await again.waitFor(
      "page 1 from the cache",
      `const p = document.getElementById("status-progress").textContent;
       return /^1 of 1 pages read/.test(p) && /1 from cache/.test(p) ? { p, s: ${pageStatus} } : null;`,
      60_000,
    );
    assert.doesNotMatch(cached.p, /tokens\/s/, "nothing was generated");
    assert.equal(cached.s, ended === "done" ? "fromCache" : "looped");
  } finally {
    await again.close();
  }
});

test("int8 weights chosen in the settings: the model loads again in int8, kept beside it, and reads the PDF anew", async () => {
  const app = await openApp(driver, []);
  try {
    assert.equal(await app.waitFor("the model to load", modelReads, 60_000), "DeepSeek-OCR-2");
    await app.clickOn("#engine-settings-button");
    await app.waitFor("the engine panel to open", `return document.getElementById("engine-settings-dialog").open;`);
    assert.equal(await app.run(`return document.getElementById("local-weights").value;`), "bf16");
    await app.run(`const s = document.getElementById("local-weights");
      s.value = "int8"; s.dispatchEvent(new Event("change", { bubbles: true }));`);
    await app.clickOn("#save-engine-settings");
    const line = await app.waitFor(
      "the engine to load the model with int8 weights",
      `const t = document.getElementById("engine-status").textContent; return /int8 weights/.test(t) ? t : null;`,
      120_000,
    );
    assert.match(line, /^DeepSeek-OCR-2 · /);
    const snapshot = path.join(repoCache, "snapshots", COMMIT);
    assert.ok(existsSync(path.join(snapshot, "deepread-int8.gguf")), "the int8 weights are kept beside the model");
  } finally {
    await app.close();
  }

  // A window opened next reads the page with int8 weights: not from the bf16 pages' cache.
  const reading = await openApp(driver, [pdf]);
  try {
    const streaming = await reading.waitFor(
      "tokens to stream from the int8 model",
      `const p = document.getElementById("status-progress").textContent;
       return /tokens\\/s/.test(p) ? p : null;`,
      120_000,
    );
    assert.match(streaming, / 0 from cache/, "nothing came from the cache of the bf16 reading");
    await reading.waitFor(
      "the page to end (read, or stopped as a loop)",
      `const s = ${pageStatus}; return s === "done" || s === "looped" ? s : null;`,
      240_000,
    );
  } finally {
    await reading.close();
  }
});
