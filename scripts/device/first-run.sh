#!/usr/bin/env bash
# On the GPU machine, from the checkout root with .gpu/ and .deps/pdfium carried: a person's first run of the
# CUDA build that `make check-cuda` made (compute capability 8.6) on this card. `deepread models list` says
# where it reads; `deepread synthesize` writes a random full-size model with the real tokenizer; `deepread
# convert` reads real PDFs with it through the whole pipeline (render, model, cache, export).
set -uo pipefail
NV=$(python3 -c 'import nvidia;print(list(nvidia.__path__)[0])')
export LD_LIBRARY_PATH=$NV/cu13/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
export DEEPREAD_PDFIUM=$PWD/.deps/pdfium/libpdfium.so HOME=/tmp/home
mkdir -p "$HOME" "$OUT"
xz -dc .gpu/deepread-make-cuda.xz > /tmp/deepread && chmod +x /tmp/deepread
in=.gpu/first-run
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
echo "=== models list"; /tmp/deepread models list --model /tmp/none 2>&1 | tee "$OUT/models_list.txt"
echo "=== synthesize $(date +%T)"
[ -f /tmp/m/model.safetensors ] || /usr/bin/time -v /tmp/deepread synthesize --config full --tokenizer $in --out /tmp/m \
  2>&1 | grep -E 'wrote|Elapsed|Maximum resident' | tee "$OUT/synthesize.txt"
echo "=== convert $(date +%T)"
convert() {
  local start=$(date +%s%N)
  /tmp/deepread convert "$@" --model /tmp/m --json --overwrite --cache /tmp/cache.sqlite3 2>&1 | tail -6
  echo "exit ${PIPESTATUS[0]} in $(( ($(date +%s%N) - start) / 1000000 )) ms"
}
{ convert $in/docling__2305.03393v1-pg9.pdf -o /tmp/out
  convert $in/pdfjs__tracemonkey.pdf -o /tmp/out --pages 1-3; } 2>&1 | tee "$OUT/convert.txt"
echo "=== again, from the cache"
convert $in/pdfjs__tracemonkey.pdf -o /tmp/out2 --pages 1-3 2>&1 | tee -a "$OUT/convert.txt"
python3 - <<'PY' | tee "$OUT/table.txt"
import json, glob
print("| document | page | status | recognizer | prompt tokens | generated tokens |")
print("|---|---|---|---|---|---|")
for f in sorted(glob.glob("/tmp/out/*.json")):
    d = json.load(open(f))
    for p in d["pages"]:
        r = p.get("read_by") or {}
        if p["status"] != "not_read":
            print(f"| {f.split('/')[-1]} | {p['page'] + 1} | {p['status']} | {r.get('recognizer')} | {r.get('prompt_tokens')} | {r.get('generated_tokens')} |")
PY
