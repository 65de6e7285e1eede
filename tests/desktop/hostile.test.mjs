// A PDF can carry the words `<img src=x onerror=...>` and the model will transcribe them: whatever
// the model writes reaches the window as inert text.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fixtures, openApp, startDriver } from "./session.mjs";

const HOSTILE = [
  "<|ref|>text<|/ref|><|det|>[[100, 100, 900, 300]]<|/det|>",
  `Intro <img src=x onerror="window.__pwned='img'"> <script>window.__pwned='script'</script>`,
  `[click me](javascript:window.__pwned='link') <iframe src="javascript:window.__pwned='iframe'"></iframe>`,
  `<svg onload="window.__pwned='svg'"><script>window.__pwned='svg-script'</script></svg>`,
  `<a href="data:text/html,<script>window.__pwned='data'</script>">data</a> <style>body{display:none}</style>`,
  "",
  "<|ref|>table<|/ref|><|det|>[[100, 400, 900, 600]]<|/det|>",
  `<table><tr><td onclick="window.__pwned='td'">cell</td></tr></table>`,
  "",
].join("\n");

const replayDir = mkdtempSync(path.join(tmpdir(), "deepread-hostile-"));
let driver;
before(async () => {
  writeFileSync(path.join(replayDir, "page001.md"), HOSTILE);
  driver = await startDriver({ DEEPREAD_REPLAY: replayDir });
});
after(() => {
  driver?.close();
  rmSync(replayDir, { recursive: true, force: true });
});

test("hostile model output: no script runs, no handler, no javascript: link, no frame", async () => {
  const pdf = path.join(fixtures, "pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf");
  const app = await openApp(driver, [pdf]);
  try {
    await app.waitFor(
      "the page to be read",
      `return document.querySelector('.thumbnail[data-page="0"]')?.dataset.status === "done";`,
    );
    await app.waitFor(
      "the blocks to render",
      `return document.getElementById("markdown-pane").textContent.includes("click me");`,
    );
    // Give any handler (an image's onerror fires after load) time to run.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const found = await app.run(`
      const pane = document.getElementById("markdown-pane");
      const withHandlers = [...pane.querySelectorAll("*")].filter((e) => [...e.attributes].some((a) => a.name.startsWith("on")));
      return {
        pwned: window.__pwned ?? null,
        scripts: pane.querySelectorAll("script, iframe, svg, style, object, embed").length,
        handlers: withHandlers.length,
        jsLinks: [...pane.querySelectorAll("[href], [src]")].filter((e) => /^\\s*(javascript|data):/i.test(e.getAttribute("href") ?? e.getAttribute("src"))).length,
        text: pane.textContent,
        cells: pane.querySelectorAll("td").length,
      };`);
    assert.equal(found.pwned, null, "no hostile code ran");
    assert.equal(found.scripts, 0);
    assert.equal(found.handlers, 0);
    assert.equal(found.jsLinks, 0);
    assert.match(found.text, /Intro/);
    assert.match(found.text, /click me/);
    assert.equal(found.cells, 1, "the table itself survives");
  } finally {
    await app.close();
  }
});
