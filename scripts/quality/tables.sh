#!/usr/bin/env bash
# Table extraction by the text layer, cell by cell, against camelot's published expected tables:
# prints | file | tables expected | tables found | row recall | cell recall |.
#
#   scripts/quality/tables.sh [CORPUS_DIR]     (default tests/corpus/tables; see its SOURCES.md)
#
# DEEPREAD=path/to/deepread scores another build (default target/debug/deepread).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# The PDFium the Makefile installs, as `make test` uses, unless told otherwise.
export DEEPREAD_PDFIUM=${DEEPREAD_PDFIUM:-$root/.deps/pdfium/libpdfium.so}
exec python3 "$root/scripts/quality/tables.py" "$@"
