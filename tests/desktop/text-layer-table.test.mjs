// A table read through the text layer, in the real window: the pane shows it as a table (not a run of
// one-line paragraphs or headings), its cells held row by row against docling's published ground truth
// for the same PDF, its caption a paragraph; its box on the page and its block in the pane are linked.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fixtures, openApp, repoRoot, startDriver } from "./session.mjs";

const dir = path.join(fixtures, "pdfs/born_digital_papers_math_tables");
const pdf = path.join(dir, "docling__2305.03393v1-pg9.pdf");
const section = `#markdown-pane [data-page="0"]`;

/** docling's ground-truth grid: each row's cell texts, a spanning cell repeated over what it spans. */
function groundTruthRows() {
  const json = JSON.parse(readFileSync(path.join(dir, "groundtruth/docling__2305.03393v1-pg9.json"), "utf8"));
  return json.tables[0].data.grid.map((row) => row.map((cell) => cell.text));
}

/** A row as compared: its non-empty cells, runs of one spanning cell counted once, spaces folded. */
const rowKey = (cells) =>
  cells
    .map((c) => c.replace(/\s+/g, " ").trim())
    .filter((c, i, all) => c !== "" && c !== all[i - 1])
    .join(" | ");

let driver;
let app;
before(async () => {
  driver = await startDriver();
  app = await openApp(driver, [pdf]);
});
after(async () => {
  await app?.close();
  driver?.close();
});

test("a paper's ruled table read through the text layer is a table in the pane, cell by cell", async () => {
  await app.waitFor(
    "page 1 to be read",
    `const s = document.querySelector('${section}')?.dataset.status; return s === "done" || s === "fromCache";`,
    60_000,
  );
  // The rendered table's rows, spans laid out as the browser lays them (rowspan and colspan expanded).
  const rows = await app.waitFor(
    "the table in the pane",
    `const table = document.querySelector('${section} .markdown-block table');
     if (!table) return null;
     const grid = [];
     [...table.rows].forEach((tr, r) => {
       let c = 0;
       for (const cell of tr.cells) {
         grid[r] ??= [];
         while (grid[r][c] !== undefined) c += 1;
         for (let dr = 0; dr < cell.rowSpan; dr++)
           for (let dc = 0; dc < cell.colSpan; dc++) (grid[r + dr] ??= [])[c + dc] = cell.textContent;
         c += cell.colSpan;
       }
     });
     return grid;`,
    30_000,
  );
  const ours = new Set(rows.map(rowKey));
  for (const row of groundTruthRows()) {
    assert.ok(ours.has(rowKey(row)), `ground-truth row "${rowKey(row)}" is not a row of the pane's table:\n${[...ours].join("\n")}`);
  }

  // No cell became a heading or a paragraph of its own; the caption is one paragraph.
  const outside = await app.run(`
    return [...document.querySelectorAll('${section} .markdown-block')]
      .filter((b) => !b.querySelector("table"))
      .map((b) => ({ text: b.textContent, heading: !!b.querySelector("h1, h2, h3") }));`);
  for (const cell of ["enc-layers", "0.965", "5.39"]) {
    assert.ok(!outside.some((b) => b.text.includes(cell)), `${cell} is read outside the table`);
  }
  const caption = outside.find((b) => b.text.startsWith("Table 1. HPO performed"));
  assert.ok(caption && !caption.heading, `the caption is a paragraph: ${JSON.stringify(outside.map((b) => b.text.slice(0, 40)))}`);

  // The table is one block with one box: clicking the box flashes the table's block.
  const target = await app.run(`
    const block = [...document.querySelectorAll('${section} .markdown-block')].find((b) => b.querySelector("table"));
    const boxes = document.querySelectorAll('.grounding-box[data-block-id="' + block.dataset.blockId + '"]');
    const box = boxes[0];
    box.scrollIntoView({ block: "center" });
    const r = box.getBoundingClientRect();
    return { id: block.dataset.blockId, boxes: boxes.length, label: box.dataset.label, x: r.left + r.width / 2, y: r.top + r.height / 2 };`);
  assert.equal(target.boxes, 1);
  assert.equal(target.label, "table");
  await app.clickAt(target.x, target.y);
  await app.waitFor(
    "the table's block to flash",
    `return document.querySelector('${section} .markdown-block[data-block-id="${target.id}"]').classList.contains("flash");`,
  );
  writeFileSync(path.join(repoRoot, "docs/screenshots/text-layer-table.png"), await app.screenshot());
});
