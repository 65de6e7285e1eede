// Encrypted PDFs: the window asks for the password in place, refuses a wrong one without closing the
// form, opens the document with the right one as any other, and keeps the password nowhere.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fixtures, openApp, startDriver } from "./session.mjs";

const aes = path.join(fixtures, "pdfs/encrypted/pypdf__crazyones-encrypted-256.pdf");
const docling = path.join(fixtures, "pdfs/encrypted/docling__2206.01062_pg3_password.pdf");
const tracemonkey = path.join(fixtures, "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
// Passwords no document holds, so finding them in the cache can only mean they were stored.
const WRONG = "wrong-guess-7Qz";
const ENTER = "\uE007";

// The cache where the test can look into it after the windows have closed.
const cacheDir = mkdtempSync(path.join(tmpdir(), "deepread-password-"));
let driver;
before(async () => {
  driver = await startDriver({ DEEPREAD_CACHE: path.join(cacheDir, "cache.sqlite3") });
});
after(() => {
  driver?.close();
  rmSync(cacheDir, { recursive: true, force: true });
});

/** The form as shown: the file it asks for, whether its password field has the focus, what it says. */
const formState = `
  const form = document.getElementById("password-form");
  if (form.hidden) return null;
  const input = form.querySelector("input");
  return {
    name: form.querySelector(".password-form-name").textContent,
    type: input.type,
    focused: document.activeElement === input,
    value: input.value,
    failure: form.querySelector(".password-form-failure").hidden ? "" : form.querySelector(".password-form-failure").textContent,
  };`;

/** The page on screen, rendered: its alt text and source; null until it has loaded. */
const pageShown = `
  const img = document.querySelector(".page-image");
  return img !== null && img.complete && img.naturalWidth > 0 ? { alt: img.alt, src: img.src, width: img.naturalWidth } : null;`;

const thumbnails = `return document.querySelectorAll(".thumbnail").length;`;

test("an encrypted PDF asks for its password: a wrong one is refused, the right one opens it, Cancel opens nothing", async () => {
  const app = await openApp(driver, [aes, docling]);
  try {
    const asked = await app.waitFor("the password form for the AES-256 file", `${formState}`);
    assert.deepEqual(asked, { name: "pypdf__crazyones-encrypted-256.pdf", type: "password", focused: true, value: "", failure: "" });
    assert.equal(await app.run(thumbnails), 0, "nothing opens before the password");

    await app.type(`${WRONG}${ENTER}`);
    const refused = await app.waitFor(
      "the wrong password to be refused",
      `const s = (() => { ${formState} })(); return s && s.failure ? s : null;`,
    );
    assert.deepEqual(refused, {
      name: "pypdf__crazyones-encrypted-256.pdf",
      type: "password",
      focused: true,
      value: "",
      failure: "The password is not correct.",
    });
    assert.equal(await app.run(`return document.querySelector(".page-image");`), null, "a wrong password opens nothing");

    await app.type(`password${ENTER}`);
    const page = await app.waitFor("the decrypted page to render", pageShown);
    assert.ok(page.width >= 300, `the page image is ${page.width} px wide`);
    assert.equal(await app.run(thumbnails), 1);
    assert.equal(await app.run(`return document.getElementById("document-title").textContent;`), "pypdf__crazyones-encrypted-256.pdf");
    // Read as any document is: through its text layer, here.
    await app.waitFor(
      "the page's text in the Markdown pane",
      `return document.querySelector('#markdown-pane [data-page="0"]')?.textContent.includes("crazy ones");`,
      60_000,
    );

    // Then the second file of the two: Cancel, and the first stays as it was.
    const second = await app.waitFor(
      "the password form for the second file",
      `const s = (() => { ${formState} })(); return s && s.name.startsWith("docling") ? s : null;`,
    );
    assert.equal(second.failure, "", "a new form, not the first one's failure");
    assert.equal(second.focused, true);
    await app.run(`document.querySelector(".password-form-cancel").click();`);
    await app.waitFor("the form to go", `return document.getElementById("password-form").hidden;`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(await app.run(pageShown), page, "the first document's page is still shown");
    assert.equal(await app.run(`return document.getElementById("document-title").textContent;`), "pypdf__crazyones-encrypted-256.pdf");
    assert.equal(await app.run(thumbnails), 1);
    assert.equal(await app.run(`return document.querySelector(".message.error");`), null, "Cancel is no error");

  } finally {
    await app.close();
  }
});

test("of several files opened at once, those without a password open while the form waits", async () => {
  const app = await openApp(driver, [docling, tracemonkey]);
  try {
    await app.waitFor("the password form", `const s = (() => { ${formState} })(); return s?.name.startsWith("docling");`);
    const other = await app.waitFor("the other file's page to render", pageShown);
    assert.match(other.alt, /^pdfjs__tracemonkey\.pdf, page 1$/);
    assert.equal(await app.run(`return document.getElementById("password-form").hidden;`), false, "the form still waits");

    await app.type(`1234${ENTER}`);
    const page = await app.waitFor(
      "the decrypted page to render",
      `const p = (() => { ${pageShown} })(); return p && p.alt.startsWith("DocLayNet") ? p : null;`,
    );
    assert.ok(page.width >= 300);
    assert.equal(await app.run(`return document.getElementById("password-form").hidden;`), true);
    assert.equal(await app.run(thumbnails), 1);

    // The AES-256 file, read in the first test's window, is under Recent: opened from there it asks
    // again, for the password was kept nowhere. Esc closes the form and leaves what is shown.
    const recent = `document.querySelector(${JSON.stringify(`.recent-document[data-path=${JSON.stringify(aes)}]`)})`;
    await app.waitFor("the AES-256 file under Recent", `return ${recent} !== null;`);
    await app.run(`${recent}.click();`);
    const again = await app.waitFor("the form again", formState);
    assert.deepEqual(again, { name: "pypdf__crazyones-encrypted-256.pdf", type: "password", focused: true, value: "", failure: "" });
    const stored = await app.run(
      `return Object.keys(localStorage).filter((k) => /password|${WRONG}/.test(localStorage.getItem(k)));`,
    );
    assert.deepEqual(stored, [], "no password in the webview's storage");
    await app.type("\uE00C"); // Escape
    await app.waitFor("Esc to close the form", `return document.getElementById("password-form").hidden;`);
    assert.deepEqual(await app.run(pageShown), page, "the decrypted document is still shown");
  } finally {
    await app.close();
  }
  // The cache (results, recent documents), written by both tests' windows, holds no password.
  for (const file of readdirSync(cacheDir)) {
    const bytes = readFileSync(path.join(cacheDir, file));
    assert.equal(bytes.includes(WRONG), false, `${file} holds no password`);
  }
});
