#!/usr/bin/env bash
# Packs what a GPU-machine job needs into the git-ignored .gpu/: the CUDA binaries (stripped, xz) and the Python
# that writes the random-weight checkpoint and runs the transformers oracle. Build first, with the CUDA
# environment of ../shared/gpu (see docs/benchmarks.md). Names given (`pack.sh deepread`) pack those binaries
# alone, for a job that needs no tests or examples.
set -euo pipefail
cd "$(dirname "$0")/../.."
T=target-cuda/release
shared=${DEEPREAD_SHARED:-../shared}
mkdir -p .gpu
newest() { ls -t $T/deps/"$1"-* 2>/dev/null | grep -v '\.d$' | head -1; }
wanted=" $* "
for pair in "$T/deepread:deepread" "$(newest fused_decode):fused_decode" \
  "$(newest flash_attention):flash_attention" "$(newest vision_kernels):vision_kernels" "$(newest int8):int8" "$(newest moe_kernels):moe_kernels" \
  "$(newest linear_tiles):linear_tiles" "$(newest qkv_rope):qkv_rope" \
  "$T/examples/full_size_parity:full_size_parity" "$T/examples/continuous_parity:continuous_parity" \
  "$T/examples/int8_agreement:int8_agreement"; do
  src=${pair%%:*} name=${pair##*:}
  [ $# -eq 0 ] || [[ $wanted == *" $name "* ]] || continue
  strip -o "/tmp/$name" "$src" && xz -T2 -6 -c "/tmp/$name" > ".gpu/$name.xz"
done
cp -f scripts/device/run.sh scripts/device/*.py crates/engine/fixtures/full_size_parity.py \
  crates/engine/fixtures/make_fixtures.py "$shared/gpu/hf_reference.py" .gpu/
# For the prepare step: PDFium and two real PDFs (a born-digital paper, a scan).
paper="$shared/fixtures/pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf"
if [ -f .deps/pdfium/libpdfium.so ]; then
  cp -f .deps/pdfium/libpdfium.so "$paper" \
    "$shared/fixtures/pdfs/scanned_image_only/pypdf__Seige_of_Vicksburg_Sample_OCR.pdf" .gpu/
else
  echo "pack.sh: no .deps/pdfium/libpdfium.so (make deps fetches it): the prepare and remote steps will not run" >&2
fi
# For the remote step: the real tokenizer (the random checkpoint has none) and a document of 42 pages (the
# paper three times), so that 32 pages are in flight at once.
mkdir -p .gpu/remote
cp -f "$shared"/fixtures/tokenizer/{tokenizer,tokenizer_config,special_tokens_map}.json .gpu/remote/
pdfunite "$paper" "$paper" "$paper" .gpu/remote/pages42.pdf
# For the int8 step: real DeepSeek-OCR output text (docling's examples, MIT) to teacher-force.
mkdir -p .gpu/int8
cp -f "$shared"/fixtures/grounding/with_source/docling_md_deepseek/*.md .gpu/int8/
ls -la .gpu
# The device tool carries at most 64 MiB: the tracked tree and untracked files besides .gpu/.
carried=$(( $(du -sb .gpu | cut -f1) + $(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- | tail -1 | cut -f1) ))
if [ "$carried" -gt $((64 * 1024 * 1024)) ]; then
  echo "pack.sh: $((carried / 1000000)) MB to carry, over the device tool's 64 MiB: pack fewer binaries" \
    "(or drop the PDFs and libpdfium.so where no prepare or remote step runs)" >&2
fi
