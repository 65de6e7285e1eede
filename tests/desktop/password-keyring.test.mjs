// An encrypted PDF's password kept on request: in a real Secret Service (GNOME Keyring on a private D-Bus),
// never unasked. A remembered password opens the document in a later window without the form, wherever the
// file is; Forget password drops it, and the form asks again.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startSecretService } from "./secret-service.mjs";
import { fixtures, openApp, startDriver } from "./session.mjs";

const aes = path.join(fixtures, "pdfs/encrypted/pypdf__crazyones-encrypted-256.pdf");
const PASSWORD = "password";
const ENTER = "\uE007";

const scratch = mkdtempSync(path.join(tmpdir(), "deepread-keyring-pdf-"));
let keyring;
let driver;
before(async () => {
  keyring = await startSecretService();
  driver = await startDriver({ ...keyring.env, NO_AT_BRIDGE: "1" });
});
after(() => {
  driver?.close();
  keyring?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const formShown = `return !document.getElementById("password-form").hidden;`;
const pageShown = `const img = document.querySelector(".page-image"); return img !== null && img.complete && img.naturalWidth > 0;`;
const forgetShown = `const b = document.getElementById("forget-password"); return !!b && !b.hidden;`;
const status = `return document.getElementById("status-message").textContent;`;

/** Answers the form with the password, ticking "Remember" first when `remember`. */
async function answer(app, remember) {
  await app.waitFor("the password form", formShown);
  const box = ".password-form-remember input";
  assert.equal(await app.run(`return document.querySelector(${JSON.stringify(box)}).checked;`), false, "unticked unless asked");
  if (remember) await app.clickOn(box);
  await app.run(`document.querySelector("#password-form input[type=password]").focus();`);
  await app.type(`${PASSWORD}${ENTER}`);
  await app.waitFor("the decrypted page", pageShown);
}

/** Opens `file` in a new window and says whether the form asked for its password. */
async function opensWithoutAsking(file) {
  const app = await openApp(driver, [file]);
  try {
    const outcome = await app.waitFor(
      "the page or the form",
      `const page = (() => { ${pageShown} })(); const form = (() => { ${formShown} })();
       return page ? "page" : form ? "form" : null;`,
    );
    return { app, asked: outcome === "form" };
  } catch (error) {
    await app.close();
    throw error;
  }
}

test("a password is remembered only when asked, opens the document (moved too) without the form, and Forget drops it", async () => {
  // Not asked to: the next window asks again.
  let app = await openApp(driver, [aes]);
  await answer(app, false);
  assert.equal(await app.run(forgetShown), false, "nothing to forget");
  await app.close();
  let next = await opensWithoutAsking(aes);
  assert.equal(next.asked, true, "a password not remembered is asked for again");

  // Asked to: kept in the keyring.
  await answer(next.app, true);
  assert.equal(await next.app.run(forgetShown), true);
  await next.app.close();

  // A copy elsewhere under another name is the same document: it opens with the password remembered.
  const moved = path.join(scratch, "renamed.pdf");
  copyFileSync(aes, moved);
  next = await opensWithoutAsking(moved);
  assert.equal(next.asked, false, "the remembered password opened it");
  app = next.app;
  await app.waitFor("the word on the remembered password", `return /remembered in the system keyring/.test((() => { ${status} })());`);
  assert.equal(await app.run(forgetShown), true);

  await app.clickOn("#forget-password");
  await app.waitFor("the button to go", `return !(() => { ${forgetShown} })();`);
  assert.match(await app.run(status), /forgotten/);
  await app.close();

  next = await opensWithoutAsking(aes);
  assert.equal(next.asked, true, "asked again once forgotten");
  await next.app.run(`document.querySelector(".password-form-cancel").click();`);
  await next.app.close();
});
