#!/usr/bin/env bash
# Scores the text-layer reader (`deepread convert --engine text`) against published ground truth, beside
# poppler's pdftotext (the baseline to beat), and prints the Markdown table docs/quality.md keeps.
#
#   scripts/quality/text-layer.sh
#
# Reads every <dir>/<name>.pdf that has a <dir>/groundtruth/<name>.md, under $DEEPREAD_FIXTURES/pdfs and
# tests/corpus. DEEPREAD=path/to/deepread scores another build (default target/debug/deepread).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
deepread=${DEEPREAD:-$root/target/debug/deepread}
fixtures=${DEEPREAD_FIXTURES:-$root/../shared/fixtures}
# The PDFium the Makefile installs, as `make test` uses, unless told otherwise.
export DEEPREAD_PDFIUM=${DEEPREAD_PDFIUM:-$root/.deps/pdfium/libpdfium.so}

# rapidfuzz from a private venv when the system Python lacks it: never installed globally.
python=python3
if ! python3 -c 'import rapidfuzz' 2>/dev/null; then
  venv=$root/.deps/quality-venv
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  "$venv/bin/python" -c 'import rapidfuzz' 2>/dev/null || "$venv/bin/pip" install --quiet rapidfuzz
  python=$venv/bin/python
fi
score() { "$python" "$root/scripts/quality/similarity.py" "$@"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo '| file | DeepRead text layer | pdftotext |'
echo '|---|---|---|'
total=0 wins=0
for base in "$fixtures/pdfs" "$root/tests/corpus"; do
  [[ -d $base ]] || { echo "no such folder: $base" >&2; continue; }
  prefix=; [[ $base == "$root/tests/corpus" ]] && prefix=tests/corpus/
  while read -r truth; do
    dir=$(dirname "$(dirname "$truth")") name=$(basename "$truth" .md)
    pdf=$dir/$name.pdf
    [[ -f $pdf ]] || continue
    label=$prefix${pdf#"$base"/} label=${label%.pdf}
    # A cache of our own: --no-cache reads every page again, and the user's cache is left alone.
    if "$deepread" convert "$pdf" -o "$tmp/$name" --engine text --no-cache --cache "$tmp/cache.db" \
         </dev/null >"$tmp/$name.log" 2>&1; then
      ours=$(score "$tmp/$name/$name.md" "$truth")
    else
      ours=failed
      echo "deepread failed on $pdf:" >&2
      tail -n 5 "$tmp/$name.log" >&2
    fi
    theirs=$(pdftotext "$pdf" - 2>/dev/null | score - "$truth") || theirs=failed
    echo "| $label | $ours | $theirs |"
    total=$((total + 1))
    # Compared as printed (3 decimals), so that the count agrees with the table.
    if [[ $ours != failed ]] && { [[ $theirs == failed ]] || awk -v a="$ours" -v b="$theirs" 'BEGIN { exit !(a <= b) }'; }; then
      wins=$((wins + 1))
    fi
  done < <(find "$base" -path '*/groundtruth/*.md' | sort)
done
echo
echo "DeepRead <= pdftotext on $wins of $total files"
