# Compares the raw model output of each page in two DeepRead caches (the last reading of each page): the text the
# model wrote up to where the reading stopped, loops included, and how many tokens it took. Stronger than comparing
# the Markdown, which keeps only what came before a loop.
import json
import sqlite3
import sys


def pages(path):
    rows = sqlite3.connect(path).execute("SELECT page_index, raw_output, stats_json FROM page_results")
    return {page: (raw, json.loads(stats)["generatedTokens"]) for page, raw, stats in rows}


a, b = pages(sys.argv[1]), pages(sys.argv[2])
same = 0
for page in sorted(set(a) | set(b)):
    x, y = a.get(page), b.get(page)
    if x == y:
        same += 1
    else:
        print(f"page {page + 1}: {x and x[1]} / {y and y[1]} tokens, raw outputs of {x and len(x[0])} / {y and len(y[0])} characters")
tokens = sum(t for _, t in a.values())
print(f"raw outputs: {same} of {len(set(a) | set(b))} pages identical, token counts included ({tokens} tokens in the first)")
