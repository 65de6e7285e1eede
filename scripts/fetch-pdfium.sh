#!/usr/bin/env bash
# Installs the PDFium shared library into .deps/pdfium/ from the pypdfium2 wheel on PyPI
# (pinned version, checksum verified). Idempotent: does nothing when the library is present.
set -euo pipefail
VERSION=5.15.2
WHEEL=pypdfium2-$VERSION-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
SHA256=dc31aea5b0fb9fefc9b537a65f4113980b2c40798445736a7e6565bc85161e37
DEST=${1:-.deps/pdfium}

if [ -f "$DEST/libpdfium.so" ]; then exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "pdfium: downloading pypdfium2==$VERSION from PyPI"
python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux2014_x86_64 --python-version 3.11 -d "$tmp" "pypdfium2==$VERSION"
echo "$SHA256  $tmp/$WHEEL" | sha256sum --check --quiet
mkdir -p "$DEST"
python3 - "$tmp/$WHEEL" "$DEST" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    with z.open("pypdfium2_raw/libpdfium.so") as src, open(sys.argv[2] + "/libpdfium.so", "wb") as dst:
        dst.write(src.read())
PY
echo "pdfium: installed $DEST/libpdfium.so"
