#!/usr/bin/env python3
"""How far a reading is from its ground truth: normalised edit distance, 0 identical, 1 nothing shared.

    similarity.py READING GROUND_TRUTH      (READING may be '-' for stdin, e.g. pdftotext's output)

Both texts are first reduced to their words in order (image links, HTML tags and Markdown marks dropped,
whitespace and case folded), so that Markdown syntax neither helps nor hurts: only the words and their
order count. This is the metric docs/quality.md publishes; change it only together with that table.
"""
import re
import sys

from rapidfuzz.distance import Levenshtein


def normalise(text: str) -> str:
    text = re.sub(r'!\[[^\]]*\]\([^)]*\)', ' ', text)  # ![alt](figure.png)
    text = re.sub(r'<[^>]+>', ' ', text)                 # <td>, <!-- image -->
    text = re.sub(r'[#*_`|>\-]+', ' ', text)             # headings, emphasis, table pipes, rules, quotes
    return re.sub(r'\s+', ' ', text).strip().lower()


def read(path: str) -> str:
    if path == '-':
        return sys.stdin.buffer.read().decode('utf-8')
    with open(path, encoding='utf-8') as f:
        return f.read()


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    reading, truth = read(sys.argv[1]), read(sys.argv[2])
    print(f'{Levenshtein.normalized_distance(normalise(reading), normalise(truth)):.3f}')
