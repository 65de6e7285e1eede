#!/usr/bin/env python3
"""Cell-level check of the tables the text layer writes, against published ground truth.

    tables.py [CORPUS_DIR]      (default tests/corpus/tables)

For every CORPUS_DIR/<name>.pdf with a CORPUS_DIR/groundtruth/<name>.json ({"page": N, "tables": [rows of
cells]}), runs `deepread convert --engine text` on that one page, reads back the tables of the Markdown
(pipe tables and HTML tables) and prints a Markdown table of row recall and cell recall.

  row recall   share of a ground-truth table's rows found as a row of the matched table of ours. A row is
               compared as the sequence of its non-empty cells, whitespace collapsed, a run of equal
               neighbours counted once (so a colspan is one cell however the grid splits it).
  cell recall  share of the ground truth's non-empty cells found as a cell anywhere in the matched table.

Each ground-truth table is matched to the table of ours that scores best, each of ours used at most once;
a ground-truth table left without one scores 0.

DEEPREAD=path scores another build (default target/debug/deepread); DEEPREAD_PDFIUM defaults to the
PDFium the Makefile installs.
"""
import html.parser
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def norm(text):
    return re.sub(r'\s+', ' ', text).strip()


def row_key(cells):
    """The row as compared: equal neighbours merged, then empty cells dropped."""
    out, prev = [], None
    for c in map(norm, cells):
        if c != prev and c:
            out.append(c)
        prev = c
    return tuple(out)


# ---- our tables ------------------------------------------------------------------------------------------
# Each table is a grid of (text, anchor) places: anchor is False where a span repeats its cell's text. We
# keep both because camelot's ground truth writes a row span either way: the text in its first row only
# (lattice's default) or copied into every row it covers (copy_text="v").

def split_pipe_row(line):
    # GFM: `\|` is a literal pipe; a backslash before other ASCII punctuation is an escape too.
    cells, cur, i = [], '', 0
    line = line.strip()
    if line.startswith('|'):
        line = line[1:]
    while i < len(line):
        ch = line[i]
        if ch == '\\' and i + 1 < len(line) and line[i + 1] in '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~':
            cur += line[i + 1]
            i += 2
            continue
        if ch == '|':
            cells.append(cur)
            cur = ''
        else:
            cur += ch
        i += 1
    if cur.strip():  # text after the last pipe (a row without its closing pipe)
        cells.append(cur)
    return [re.sub(r'<br\s*/?>', ' ', c, flags=re.I) for c in cells]


SEPARATOR = re.compile(r'^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$')


def pipe_tables(md):
    lines, tables, i = md.splitlines(), [], 0
    while i + 1 < len(lines):
        if lines[i].lstrip().startswith('|') and SEPARATOR.match(lines[i + 1]):
            rows = [split_pipe_row(lines[i])]
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith('|'):
                rows.append(split_pipe_row(lines[i]))
                i += 1
            tables.append([[(c, True) for c in r] for r in rows])
        else:
            i += 1
    return tables


class HtmlTables(html.parser.HTMLParser):
    """<table>/<tr>/<td rowspan colspan> into grids; entities are unescaped by the parser itself."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.depth = [], 0
        self.rows = self.cell = None

    def handle_starttag(self, tag, attrs):
        if tag == 'table':
            self.depth += 1
            if self.depth == 1:
                self.rows = []
        elif self.depth != 1:
            return  # a nested table's tags count as its outer cell's text only
        elif tag == 'tr':
            self.rows.append([])
        elif tag in ('td', 'th') and self.rows is not None:
            a = dict(attrs)
            span = [int(v) if v.isdigit() and int(v) > 0 else 1
                    for v in (a.get('rowspan') or '1', a.get('colspan') or '1')]
            self.cell = [*span, '']
            if not self.rows:
                self.rows.append([])
            self.rows[-1].append(self.cell)
        elif tag == 'br' and self.cell:
            self.cell[2] += ' '

    def handle_endtag(self, tag):
        if tag == 'table':
            self.depth -= 1
            if self.depth == 0:
                self.tables.append(self.expand(self.rows))
                self.rows = self.cell = None
        elif tag in ('td', 'th') and self.depth == 1:
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[2] += data

    @staticmethod
    def expand(rows):
        grid = {}  # (row, col) -> (text, anchor)
        for r, cells in enumerate(rows):
            c = 0
            for rs, cs, text in cells:
                while (r, c) in grid:  # skip places taken by row spans from above
                    c += 1
                for dr in range(rs):
                    for dc in range(cs):
                        grid[r + dr, c + dc] = (text, dr == 0 and dc == 0)
                c += cs
        if not grid:
            return []
        height = max(r for r, _ in grid) + 1
        width = max(c for _, c in grid) + 1
        return [[grid.get((r, c), ('', True)) for c in range(width)] for r in range(height)]


def our_tables(md):
    parser = HtmlTables()
    parser.feed(md)
    return pipe_tables(md) + [t for t in parser.tables if t]


def row_variants(row):
    """A row's keys with spans copied (`filled`) and with span text in its first place only (`anchored`)."""
    filled = row_key(t for t, _ in row)
    anchored = row_key(t if a else '' for t, a in row)
    return {filled, anchored}


# ---- scoring ---------------------------------------------------------------------------------------------

def score(truth, ours):
    """(row recall, cell recall) of ground-truth table `truth` against our table `ours` (None: not found)."""
    rows = [k for k in map(row_key, truth) if k]
    cells = [c for k in rows for c in k]
    if ours is None:
        return 0.0, 0.0
    # Each of our rows serves one ground-truth row, under whichever span convention fits it.
    left = [row_variants(r) for r in ours]
    hit = 0
    for k in rows:
        for i, v in enumerate(left):
            if k in v:
                hit += 1
                del left[i]
                break
    have = {norm(t) for r in ours for t, _ in r}
    return hit / max(1, len(rows)), sum(c in have for c in cells) / max(1, len(cells))


def match(truths, ours):
    """Scores per ground-truth table, pairing greedily by best score, each table of ours used once."""
    pairs = sorted(((score(t, o), i, j) for i, t in enumerate(truths) for j, o in enumerate(ours)),
                   reverse=True)
    result, used = {}, set()
    for s, i, j in pairs:
        if i not in result and j not in used:
            result[i] = s
            used.add(j)
    return [result.get(i, score(t, None)) for i, t in enumerate(truths)]


def convert(deepread, pdf, page, tmp):
    out = Path(tmp) / pdf.stem
    proc = subprocess.run([deepread, 'convert', str(pdf), '-o', str(out), '--engine', 'text', '--no-cache',
                           '--cache', str(Path(tmp) / 'c.db'), '--pages', str(page)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode:
        sys.stderr.write(f'deepread failed on {pdf}:\n{proc.stderr[-2000:]}\n')
        return None
    return (out / f'{pdf.stem}.md').read_text(encoding='utf-8')


def main():
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / 'tests/corpus/tables'
    deepread = os.environ.get('DEEPREAD', str(ROOT / 'target/debug/deepread'))
    os.environ.setdefault('DEEPREAD_PDFIUM', str(ROOT / '.deps/pdfium/libpdfium.so'))
    if not os.access(deepread, os.X_OK):
        sys.exit(f'no deepread binary at {deepread} (build it, or set DEEPREAD)')
    print('| file | tables expected | tables found | row recall | cell recall |')
    print('|---|---|---|---|---|')
    sums = [0, 0, 0.0, 0.0, 0]
    with tempfile.TemporaryDirectory() as tmp:
        for truth_file in sorted((corpus / 'groundtruth').glob('*.json')):
            pdf = corpus / f'{truth_file.stem}.pdf'
            if not pdf.exists():
                continue
            truth = json.loads(truth_file.read_text(encoding='utf-8'))
            md = convert(deepread, pdf, truth['page'], tmp)
            ours = our_tables(md) if md is not None else []
            scores = match(truth['tables'], ours)
            rows = sum(s[0] for s in scores) / len(scores)
            cells = sum(s[1] for s in scores) / len(scores)
            found = len(ours) if md is not None else 'failed'
            print(f'| {pdf.stem} (p. {truth["page"]}) | {len(scores)} | {found} | {rows:.3f} | {cells:.3f} |')
            sums = [sums[0] + len(scores), sums[1] + len(ours), sums[2] + rows, sums[3] + cells, sums[4] + 1]
    n = max(1, sums[4])
    print(f'| **mean of {sums[4]} files** | {sums[0]} | {sums[1]} | {sums[2] / n:.3f} | {sums[3] / n:.3f} |')


if __name__ == '__main__':
    main()
