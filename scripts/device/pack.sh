#!/usr/bin/env bash
# Packs what a GPU-machine job needs into the git-ignored .gpu/: the CUDA binaries (stripped, xz) and the Python
# that writes the random-weight checkpoint and runs the transformers oracle. Build first, with the CUDA
# environment of ../shared/gpu (see docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
T=target-cuda/release
shared=${DEEPREAD_SHARED:-../shared}
mkdir -p .gpu
newest() { ls -t $T/deps/"$1"-* | grep -v '\.d$' | head -1; }
for pair in "$T/deepread:deepread" "$(newest fused_decode):fused_decode" \
  "$(newest flash_attention):flash_attention" "$(newest vision_kernels):vision_kernels" \
  "$T/examples/full_size_parity:full_size_parity" "$T/examples/continuous_parity:continuous_parity"; do
  src=${pair%%:*} name=${pair##*:}
  strip -o "/tmp/$name" "$src" && xz -T2 -6 -c "/tmp/$name" > ".gpu/$name.xz"
done
cp -f scripts/device/run.sh scripts/device/*.py crates/engine/fixtures/full_size_parity.py \
  crates/engine/fixtures/make_fixtures.py "$shared/gpu/hf_reference.py" .gpu/
# For the prepare step: PDFium and two real PDFs (a born-digital paper, a scan).
cp -f .deps/pdfium/libpdfium.so "$shared/fixtures/pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf" \
  "$shared/fixtures/pdfs/scanned_image_only/pypdf__Seige_of_Vicksburg_Sample_OCR.pdf" .gpu/
ls -la .gpu
