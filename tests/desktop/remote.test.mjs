// Reading through a server: the engine panel sets a vLLM-shaped server on 127.0.0.1 (endpoint, model, an API key
// kept in the system keyring, a connection test), and a real manual is read through it, every page answered
// with its own recorded DeepSeek-OCR output, its boxes drawn and linked as with the local engine.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startFakeOpenAi } from "./fake-openai.mjs";
import { capturedOutput, manual, MANUAL_PAGES } from "./manual.mjs";
import { startSecretService } from "./secret-service.mjs";
import { openApp, popplerPageCount, startDriver } from "./session.mjs";

const MODEL = "deepseek-ai/DeepSeek-OCR-2";
const KEY = "sk-deepread-test-0123456789";
const ARROW_DOWN = "\uE015"; // WebDriver's key code
// The official prompt of the layout mode (the model card's), less the image placeholder vLLM puts in itself.
const LAYOUT_PROMPT = "<|grounding|>Convert the document to markdown.";
const source = path.join(manual, "source.pdf");
const recording = (page) => capturedOutput(path.join(manual, `page${String(page + 1).padStart(3, "0")}.stdout.md`));

const scratch = mkdtempSync(path.join(tmpdir(), "deepread-remote-"));
const settingsFile = path.join(scratch, "settings.json");
let keyring;
let server;
let driver;

before(async () => {
  keyring = await startSecretService();
  const outputs = Array.from({ length: MANUAL_PAGES }, (_, page) => recording(page));
  server = await startFakeOpenAi({ pdf: source, outputs, model: MODEL, apiKey: KEY, pauseMs: 2 });
  driver = await startDriver({
    ...keyring.env,
    DEEPREAD_SETTINGS: settingsFile,
    DEEPREAD_REPLAY: undefined,
    NO_AT_BRIDGE: "1", // the private bus has no accessibility bus to offer
  });
});
after(async () => {
  driver?.close();
  await server?.close();
  keyring?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Types `text` into the field key by key, over what it held. */
async function fill(app, selector, text) {
  await app.clickOn(selector);
  await app.run(`document.querySelector(${JSON.stringify(selector)}).select();`);
  await app.type(text);
}

const connectionStatus = (app) =>
  app.waitFor(
    "the connection test's answer",
    `const s = document.getElementById("connection-status");
     return s && s.dataset.ok !== undefined && !document.getElementById("test-connection").disabled
       ? { ok: s.dataset.ok, text: s.textContent } : null;`,
  );

test("the engine panel keeps the server: a wrong key fails the test, the right one passes and lives in the keyring", async () => {
  const app = await openApp(driver, []);
  try {
    await app.clickOn("#engine-settings-button");
    await app.waitFor("the engine panel to open", `return document.getElementById("engine-settings-dialog").open;`);
    // The panel opens with the focus on its first choice; the arrow key moves it to the server.
    assert.equal(await app.run(`return document.activeElement.id;`), "engine-local");
    await app.type(ARROW_DOWN);
    assert.ok(await app.run(`return document.getElementById("engine-remote").checked;`));
    await fill(app, "#remote-endpoint", server.endpoint);
    await fill(app, "#remote-model", MODEL);

    await fill(app, "#remote-api-key", "sk-wrong");
    await app.clickOn("#test-connection");
    const refused = await connectionStatus(app);
    assert.equal(refused.ok, "false", refused.text);
    assert.match(refused.text, /401|key|unauthori[sz]ed/i);

    await fill(app, "#remote-api-key", KEY);
    await app.clickOn("#test-connection");
    const passed = await connectionStatus(app);
    assert.equal(passed.ok, "true", passed.text);
    assert.ok(passed.text.includes(MODEL), passed.text);
    assert.deepEqual(
      server.requests.filter((r) => r.path === "/v1/models").map((r) => r.authorization),
      ["Bearer sk-wrong", `Bearer ${KEY}`],
    );

    await app.clickOn("#save-engine-settings");
    await app.waitFor("the panel to close", `return !document.querySelector("dialog[open]");`);
    const engine = await app.waitFor(
      "the engine line to name the server",
      `const line = document.getElementById("engine-status").textContent;
       return line.includes(${JSON.stringify(MODEL)}) ? line : null;`,
    );
    assert.ok(engine);
  } finally {
    await app.close();
  }
  // The file has the server and the model; the key is in the keyring only.
  const saved = readFileSync(settingsFile, "utf8");
  assert.equal(JSON.parse(saved).engine, "remote");
  assert.equal(JSON.parse(saved).endpoint, server.endpoint);
  assert.ok(!saved.includes(KEY), "the API key is not written to the settings file");
});

test("a window opened later reads the manual through the server: each page its own recording, boxes linked", async () => {
  const app = await openApp(driver, [source]);
  try {
    const pages = popplerPageCount(source);
    await app.waitFor(
      "every page to be read through the server",
      `return [...document.querySelectorAll("#markdown-pane [data-page]")].filter((s) => s.dataset.status === "done").length === ${pages};`,
      120_000,
    );
    // Every page was asked for once, with the key from the keyring, the layout prompt and greedy decoding.
    const reads = server.requests.filter((r) => r.path === "/v1/chat/completions");
    assert.deepEqual(reads.map((r) => r.page).sort((a, b) => a - b), [...Array(pages).keys()]);
    for (const read of reads) {
      assert.equal(read.authorization, `Bearer ${KEY}`);
      assert.equal(read.prompt, LAYOUT_PROMPT);
      assert.equal(read.body.model, MODEL);
      assert.equal(read.body.stream, true);
      assert.equal(read.body.temperature, 0);
    }

    // Page 1, the page shown, has its own recording: one block of boxes per <|det|>, its heading in the pane.
    const capture = recording(0);
    const blocks = capture.split("<|det|>").length - 1;
    const shown = await app.run(
      `return new Set([...document.querySelectorAll(".grounding-box")].map((b) => b.dataset.blockId)).size;`,
    );
    assert.equal(shown, blocks, "one block of boxes per <|det|> in page 1's recording");
    const heading = /^# (.+)$/m.exec(capture)[1].trim();
    assert.ok(
      await app.run(`return document.querySelector('#markdown-pane [data-page="0"]').textContent.includes(${JSON.stringify(heading)});`),
    );
    // Every other page's Markdown carries a line of its own recording.
    for (let page = 1; page < pages; page++) {
      const line = recording(page).split("\n").map((l) => l.replace(/<\|[^|]*\|>.*?<\|\/[^|]*\|>/g, "").trim())
        .find((l) => /^[A-Za-z][A-Za-z ,.'-]{15,}$/.test(l));
      if (!line) continue;
      assert.ok(
        await app.run(`return document.querySelector('#markdown-pane [data-page="${page}"]').textContent.includes(${JSON.stringify(line)});`),
        `page ${page + 1} shows "${line}" from its recording`,
      );
    }

    // A click on a box of page 1 brings its block into view and flashes it.
    const target = await app.run(`
      const box = document.querySelector('.grounding-box');
      box.scrollIntoView({ block: "center" });
      const r = box.getBoundingClientRect();
      return { id: box.dataset.blockId, x: r.left + r.width / 2, y: r.top + r.height / 2 };`);
    await app.clickAt(target.x, target.y);
    assert.ok(
      await app.waitFor(
        "the clicked box's block to flash",
        `return document.querySelector('#markdown-pane .markdown-block[data-block-id="${target.id}"]')?.classList.contains("flash");`,
      ),
    );
  } finally {
    await app.close();
  }
});
