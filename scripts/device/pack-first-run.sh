#!/usr/bin/env bash
# Packs the first-run job into the git-ignored .gpu/: the CUDA CLI exactly as `make check-cuda` builds it (debug,
# compute capability 8.6, run on a card of another capability on purpose), the tokenizer for `deepread synthesize
# --config full`, and real PDFs to read. Run `make check-cuda` first (then `make build` puts the CPU binaries back), or
# name the CUDA binary it left in target/debug/deps.
set -euo pipefail
cd "$(dirname "$0")/../.."
fixtures=${DEEPREAD_FIXTURES:-../shared/fixtures}
mkdir -p .gpu/first-run
strip -o /tmp/deepread-make-cuda "${1:-target/debug/deepread}"
xz -T2 -6 -c /tmp/deepread-make-cuda > .gpu/deepread-make-cuda.xz
cp -f "$fixtures"/tokenizer/tokenizer.json "$fixtures"/tokenizer/tokenizer_config.json .gpu/first-run/
cp -f "$fixtures"/pdfs/born_digital_papers_math_tables/docling__2305.03393v1-pg9.pdf \
  "$fixtures"/pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf .gpu/first-run/
cp -f scripts/device/first-run.sh .gpu/
ls -la .gpu .gpu/first-run
