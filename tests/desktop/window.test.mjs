// The desktop shell, end to end: the real app under Xvfb, driven through WebDriver.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fixtures, openApp, popplerPageCount, repoRoot, startDriver } from "./session.mjs";

let driver;
before(async () => {
  driver = await startDriver();
});
after(() => driver?.close());

test("a PDF named on the command line shows its thumbnails and its first page", async () => {
  const pdf = path.join(fixtures, "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
  const app = await openApp(driver, [pdf]);
  try {
    const pageLoaded = `const img = document.querySelector(".page-image");
      return img !== null && img.complete && img.naturalWidth > 0 ? img.naturalWidth : 0;`;
    const width = await app.waitFor("the first page to render", pageLoaded);
    assert.ok(width >= 500, `the page image is ${width} px wide`);

    const thumbnails = await app.run(`return document.querySelectorAll(".thumbnail").length;`);
    assert.equal(thumbnails, popplerPageCount(pdf));
    const status = await app.run(`return document.getElementById("status-bar").textContent;`);
    assert.equal(status, `Page 1 of ${popplerPageCount(pdf)}`);

    await app.waitFor(
      "the first thumbnail to load",
      `const img = document.querySelector(".thumbnail img"); return img && img.complete && img.naturalWidth > 0;`,
    );
    const shots = path.join(repoRoot, "docs/screenshots");
    mkdirSync(shots, { recursive: true });
    writeFileSync(path.join(shots, "window.png"), await app.screenshot());
  } finally {
    await app.close();
  }
});

test("a corrupt PDF opens no page and says what is wrong", async () => {
  const pdf = path.join(fixtures, "pdfs/malformed/pdfjs__bug1020226_truncated.pdf");
  const app = await openApp(driver, [pdf]);
  try {
    const message = await app.waitFor(
      "the error message",
      `const box = document.querySelector(".message.error"); return box ? box.textContent : "";`,
    );
    assert.match(message, /pdfjs__bug1020226_truncated\.pdf/);
    assert.match(message, /corrupt|damaged|truncated/i);
    assert.equal(await app.run(`return document.querySelectorAll(".thumbnail").length;`), 0);
  } finally {
    await app.close();
  }
});
