// Recent documents: a document read in one run of the app is listed in the next, and opening it from
// the list shows its results from the cache, with no reading.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { fixtures, openApp, popplerPageCount, startDriver } from "./session.mjs";

const pdf = path.join(fixtures, "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
const recentButton = `document.querySelector(${JSON.stringify(`.recent-document[data-path=${JSON.stringify(pdf)}]`)})`;
const statuses = `return [...document.querySelectorAll(".thumbnail")].map((t) => t.dataset.status ?? "");`;

// One driver for the file: its cache outlives each window, as the person's does between runs.
let driver;
before(async () => {
  driver = await startDriver();
});
after(() => driver?.close());

test("a document read before is under Recent after a restart, and opens from it with its results cached", async () => {
  const pages = popplerPageCount(pdf);
  const first = await openApp(driver, [pdf]);
  try {
    await first.waitFor(
      "every page to be read through the text layer",
      `return document.getElementById("status-progress").textContent.startsWith("${pages} of ${pages} pages read");`,
      60_000,
    );
  } finally {
    await first.close();
  }

  const again = await openApp(driver, []);
  try {
    const listed = await again.waitFor(
      "the paper under Recent",
      `const b = ${recentButton};
       return b ? { disabled: b.disabled, meta: b.querySelector(".recent-meta").textContent,
         open: b.closest("details").open, hidden: b.closest("details").hidden } : null;`,
    );
    assert.deepEqual(
      { ...listed, meta: listed.meta.split(" · ")[0] },
      { disabled: false, meta: `${pages} pages`, open: true, hidden: false },
    );
    assert.equal(await again.run(`return document.querySelectorAll(".thumbnail").length;`), 0, "nothing open yet");

    await again.run(`${recentButton}.click();`);
    const shown = await again.waitFor(
      "the pages in view to come from the cache",
      `const s = [...document.querySelectorAll(".thumbnail")].map((t) => t.dataset.status);
       return s.length > 0 && s.every((x) => x === "fromCache") ? s : null;`,
    );
    assert.ok(shown.length > 0);
    const page1 = await again.waitFor(
      "page 1's Markdown",
      `return document.querySelector('#markdown-pane [data-page="0"]')?.textContent
        .includes("Trace-based Just-in-Time Type Specialization for Dynamic Languages");`,
    );
    assert.ok(page1);
    const progress = await again.waitFor(
      "every page counted as read from the cache",
      `const t = document.getElementById("status-progress").textContent; return t.startsWith("${pages} of") ? t : null;`,
    );
    assert.match(progress, new RegExp(`^${pages} of ${pages} pages read.*${pages} from cache`));
    assert.equal(await again.run(`return document.querySelector(".recent").open;`), false, "Recent folds away for the pages");
    assert.ok((await again.run(statuses)).every((s) => s === "fromCache"));
  } finally {
    await again.close();
  }
});
