# Compares the first N pages of two Markdown exports page by page: identical pages, pages where one text is the other's beginning
# (the same tokens, cut at another point: a loop stopped a few tokens later), and pages whose tokens part ways,
# with where.
import sys

SPLIT = "\n\n<--- Page Split --->\n"
pages = int(sys.argv[3])  # the pages read, from the first
a = open(sys.argv[1]).read().split(SPLIT)[:pages]
b = open(sys.argv[2]).read().split(SPLIT)[:pages]
same = prefix = 0
for page, (x, y) in enumerate(zip(a, b), 1):
    if x == y:
        same += 1
    elif x.startswith(y) or y.startswith(x):
        prefix += 1
        print(f"page {page}: one is the other's beginning ({len(x)} and {len(y)} characters)")
    else:
        at = next(i for i, (p, q) in enumerate(zip(x, y)) if p != q)
        print(f"page {page}: parts at character {at} of {len(x)} / {len(y)}: {x[at:at + 40]!r} / {y[at:at + 40]!r}")
print(f"pages: {same} identical, {prefix} the same up to where one stopped, "
      f"{len(a) - same - prefix} different, of {len(a)}")
