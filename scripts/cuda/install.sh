#!/usr/bin/env bash
# Installs the CUDA 13.0 build toolkit into DIR (default .deps/cuda): nvcc, headers, cuBLAS, cuRAND, NVRTC and
# the runtime from NVIDIA's PyPI wheels (scripts/cuda/wheels.txt: versions and sha256 pinned), and a link-time
# stub of the driver library. Idempotent: does nothing when DIR holds this very set already.
#
# Why a stub: candle links libcuda.so (cudarc's `dynamic-linking`), which only a machine with the NVIDIA
# driver has. The stub defines every driver entry point cudarc can reference as an empty function, so the
# link succeeds anywhere; at run time the loader takes the driver's real libcuda.so.1 instead. Its names come
# from the cudarc version in Cargo.lock (fetched here if not yet downloaded) and from cuda.h, never from
# whatever happens to sit in the cargo registry.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=$(realpath -m "${1:-.deps/cuda}")
WHEELS=scripts/cuda/wheels.txt
CUDARC=$(awk '/^name = "cudarc"$/ { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)
STAMP="$DEST/installed"
want="$(sha256sum "$WHEELS" | cut -c1-16) cudarc-$CUDARC"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then exit 0; fi

case "$(uname -sm)" in
  "Linux x86_64") ;;
  *) echo "cuda: the pinned CUDA wheels are for Linux x86_64; this is $(uname -sm)" >&2; exit 1 ;;
esac
[ -n "$CUDARC" ] || { echo "cuda: Cargo.lock names no cudarc version" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$DEST/site" "$DEST/stub" "$STAMP"
mkdir -p "$DEST/site" "$DEST/stub"

echo "cuda: installing the CUDA 13.0 build toolkit into $DEST (about 700 MB to download, once)"
grep -v '^#' "$WHEELS" | while read -r spec sha file; do
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 --platform manylinux2010_x86_64 \
    --python-version 3.11 -d "$tmp" "$spec"
  echo "$sha  $tmp/$file" | sha256sum --check --quiet
  # zipfile drops the executable bits that nvcc and its tools need: restore them from the archive.
  python3 - "$tmp/$file" "$DEST/site" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        path = z.extract(info, sys.argv[2])
        mode = (info.external_attr >> 16) & 0o777
        if mode and not info.is_dir():
            os.chmod(path, mode)
PY
  rm -f "$tmp/$file"
done

CUDA_HOME="$DEST/site/nvidia/cu13"
(cd "$CUDA_HOME/lib" && for f in libcublas libcublasLt libcudart libnvrtc; do ln -sf "$f.so.13" "$f.so"; done \
  && ln -sf libcurand.so.10 libcurand.so)

# The driver stub, from the exact cudarc in Cargo.lock.
cargo fetch --quiet
sys=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -path "*/cudarc-$CUDARC/src/driver/sys/mod.rs" | head -1)
[ -n "$sys" ] || { echo "cuda: cudarc $CUDARC's driver bindings not found after cargo fetch" >&2; exit 1; }
{ grep -oP '\bfn \Kcu[A-Za-z0-9_]+(?=\s*\()' "$sys"
  grep -oP '\bcu[A-Z][A-Za-z0-9_]+(?=\s*\()' "$CUDA_HOME/include/cuda.h"
  grep -oP '#define\s+cu\w+\s+\Kcu\w+_v\d+' "$CUDA_HOME/include/cuda.h"
} | sort -u | awk '{ print "void " $1 "(void) {}" }' > "$DEST/stub/libcuda_stub.c"
for name in cuInit cuMemAlloc_v2 cuCtxCreate_v4 cuGraphInstantiateWithFlags; do
  grep -q "void $name(void)" "$DEST/stub/libcuda_stub.c" \
    || { echo "cuda: the driver stub lacks $name" >&2; exit 1; }
done
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$DEST/stub/libcuda.so" "$DEST/stub/libcuda_stub.c"

echo "$want" > "$STAMP"
echo "cuda: installed $("$CUDA_HOME/bin/nvcc" --version | tail -1) and a driver stub of $(grep -c . "$DEST/stub/libcuda_stub.c") entry points"
