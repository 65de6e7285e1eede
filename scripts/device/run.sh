#!/usr/bin/env bash
# One job on the GPU machine, run from the checkout root with .gpu/ carried: unpacks the binaries, then runs the
# steps named, in order. Each step's output lands in $OUT.
#   test       the CUDA kernel tests (fused decode, flash attention, vision kernels, MoE grouped GEMMs, tensor-core
#              linear layers, the fused q/k/v projection; TESTS="..." names others: int8)
#   weights    a seeded random-weight checkpoint of the real config in /tmp/w/model (kept while the machine is warm)
#   parity     the full-size parity example against the transformers oracle (docs/parity.md)
#   bench      deepread bench, 1, 8 and 16 pages of 128 tokens
#   long       16 pages of 3,000 and 4,131 tokens in all (prompt + generated), for the memory figure
#   reference  deepread bench --reference-path
#   random     deepread bench on random weights drawn in the engine (no checkpoint)
#   oracle     the transformers oracle's bench, with its memory peaks
#   profile    per-kernel times of a decode (ncu; PROFILE_PAGES pages, default 1; PROFILE_ARGS more bench arguments,
#              e.g. --fastest or --weights int8)
#   kernels    ncu's full report of one launch of each decode kernel that takes the most time at PROFILE_PAGES
#              pages (default 1): speed of light, occupancy, where its warps stall (KERNELS="name:skip ..." picks
#              others; the skips pass the prompt's launches; linear_tiles_few runs only up to 8 pages, past them
#              name linear_tiles_bf16). Not route_experts: the prompt's chunks launch it first, so a skip lands on
#              a decode launch only by counting them
#   book       deepread bench --document on the book mix, random weights drawn in the engine (grouped on its first
#              GROUPED_PAGES pages, default 184), and where its decode stalls while pages join come from (stalls.py)
#   captured   the same on the captured mix, with a reading capped at 16 slots
#   oracle16   the oracle's static batch of 16, extrapolated to the mixes the book and captured steps read (earlier
#              in this job or in another while the machine stayed warm)
#   prepare    deepread bench --prepare on two real PDFs, on 4 of the host's cores and on 2 (taskset)
#   ab         a mix's first pages with .gpu/deepread_b.xz beside .gpu/deepread.xz, an A/B of a change (AB_MIX, default
#              captured; AB_PAGES, default 200; a reading capped at 16 slots beside the continuous one)
#   together   continuous batching against reading alone, 64 pages at full size (continuous_parity), on the
#              batch-invariant path in bf16 and in int8, and on the fastest one in bf16
#   steps      the decode step at STEP_PAGES pages (default 1, 16, 32 and 64; random weights): .gpu/deepread.xz on
#              the default (batch-invariant) path and with --fastest, then .gpu/deepread_b.xz on both
#   launches   the decode step at STEP_PAGES pages (as in steps) with dependent launches, then without
#              (DEEPREAD_DEPENDENT_LAUNCH=0), one binary
#   remote     32 pages read in process, then through `deepread serve` by `convert --engine remote`, 32 in flight:
#              the Markdown compared, the reading times side by side (needs the weights step)
#   remote1    the same for 8 pages read one at a time, where no page has another beside it in the batch
#   int8       int8 weights on random weights drawn in the engine: the decode step at 1, 16 and 64 pages beside bf16's
#              (batch-invariant, then int8 with --fastest), then the logits' agreement with bf16 over 256
#              teacher-forced positions of real output text
set -uo pipefail
export PYTHONUNBUFFERED=1 RUST_BACKTRACE=1
NV=$(python3 -c 'import nvidia;print(list(nvidia.__path__)[0])')
export LD_LIBRARY_PATH=$NV/cu13/lib:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
# The test binaries find their fixtures under the build machine's checkout path.
build_root=${DEEPREAD_BUILD_ROOT:-/work/main}
[ -e "$build_root" ] || { mkdir -p "$(dirname "$build_root")" && ln -s "$PWD" "$build_root"; }
cd .gpu
for b in *.xz; do xz -dc "$b" > "/tmp/${b%.xz}" && chmod +x "/tmp/${b%.xz}"; done
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
bench() { /tmp/deepread bench --model /tmp/w/model "$@"; }
# remote_step PAGES FLIGHT: pages 1..PAGES read FLIGHT at a time, twice in process and twice through `deepread serve`.
remote_step() {
  local pages=$1 flight=$2 tag=$1x$2
  cp --update=none remote/*.json /tmp/w/model/
  export DEEPREAD_PDFIUM=$PWD/libpdfium.so
  local doc=(remote/pages42.pdf --pages "1-$pages" --no-cache)
  # Twice in process: the first run of a fresh machine also pays the driver's compile of the kernels' PTX.
  for run in 1 2; do
    /tmp/deepread convert "${doc[@]}" --model /tmp/w/model --in-flight "$flight" -o "/tmp/read_$tag/local$run" \
      --cache "/tmp/local_$tag.db"
  done
  /tmp/deepread serve --model /tmp/w/model --slots "$flight" --port 8011 2>"/tmp/serve_$tag.log" &
  local server=$!
  for _ in $(seq 120); do
    python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8011/health")' 2>/dev/null && break; sleep 1
  done
  for run in 1 2; do
    /tmp/deepread convert "${doc[@]}" --engine remote --endpoint http://127.0.0.1:8011/v1 \
      --model deepseek-ai/DeepSeek-OCR-2 --concurrency "$flight" -o "/tmp/read_$tag/remote$run" --cache "/tmp/remote_$tag.db"
  done
  kill $server; wait $server; tail -3 "/tmp/serve_$tag.log"
  # In process against itself, through the server against itself, then the two against each other.
  for pair in local1:local2 remote1:remote2 local2:remote2; do
    echo "--- $tag: ${pair/:/ against }"
    python3 compare_pages.py "/tmp/read_$tag/${pair%:*}/pages42.md" "/tmp/read_$tag/${pair#*:}/pages42.md" "$pages"
  done
  echo "--- $tag: raw output, in process against through the server (the second runs)"
  python3 compare_raw.py "/tmp/local_$tag.db" "/tmp/remote_$tag.db"
  for run in local1 local2 remote1 remote2; do cp "/tmp/read_$tag/$run/pages42.md" "$OUT/${tag}_$run.md"; done
}
for step in "$@"; do
  echo "=== $step $(date +%T)"
  # The weights step's checkpoint where there is one, else random weights drawn in the engine.
  model=$([ -d /tmp/w/model ] && echo "--model /tmp/w/model")
  case $step in
    test) for t in ${TESTS:-fused_decode flash_attention vision_kernels moe_kernels linear_tiles qkv_rope}; do /tmp/$t --test-threads=1; done 2>&1 | tee "$OUT/test.txt" ;;
    weights) [ -d /tmp/w/model ] || python3 write_weights.py /tmp/w/model 2>&1 | tail -2 ;;
    parity) python3 full_size_parity.py /tmp/w 2>&1 | tail -5 | tee "$OUT/oracle.txt"
            /tmp/full_size_parity /tmp/w 2>&1 | tee "$OUT/parity.txt" ;;
    bench) bench --pages 1,8,16 --tokens 128 2>&1 | tee "$OUT/bench.txt" ;;
    long) for t in 1869 3000; do bench --pages 16 --tokens $t 2>&1 | tee "$OUT/bench_long_$t.txt"; done ;;
    reference) bench --pages 1,16 --tokens 64 --reference-path 2>&1 | tee "$OUT/bench_reference.txt" ;;
    random) /tmp/deepread bench --pages 1,16 --tokens 128 2>&1 | tee "$OUT/bench_random.txt" ;;
    oracle) python3 oracle_mem.py 6 1,8,16 129 grouped_mm 2>&1 | tee "$OUT/oracle_bench.txt" ;;
    book|captured) extra=(); [ "$step" = captured ] && extra=(--slots 16)
             RUST_LOG=deepread_engine::scheduler=debug /tmp/deepread bench --document --mix "$step" \
               --grouped-pages "${GROUPED_PAGES:-184}" "${extra[@]}" 2>"/tmp/stalls_$step.log" | tee "$OUT/document_$step.txt" "/tmp/document_$step.txt"
             grep -v DEBUG "/tmp/stalls_$step.log"; python3 stalls.py "/tmp/stalls_$step.log" | tee "$OUT/stalls_$step.txt" ;;
    oracle16) python3 oracle_mem.py 6 16 129 grouped_mm 2>&1 | tee "$OUT/oracle16.txt"
              cat /tmp/document_*.txt > /tmp/document.txt
              python3 oracle_document.py /tmp/document.txt "$OUT/oracle16.txt" | tee "$OUT/oracle_document.txt" ;;
    prepare) for pdf in *.pdf; do for cores in 0-3 0-1; do
               DEEPREAD_PDFIUM=$PWD/libpdfium.so taskset -c $cores /tmp/deepread bench --prepare "$pdf" \
                 --prepare-threads "$([ $cores = 0-3 ] && echo 1,2,3,4 || echo 1,2)" 2>&1
             done; done | tee "$OUT/prepare.txt" ;;
    ab) for bin in deepread deepread_b; do echo "--- $bin"
          RUST_LOG=deepread_engine::scheduler=debug /tmp/$bin bench --document --mix "${AB_MIX:-captured}" \
            --document-pages "${AB_PAGES:-200}" --grouped-pages 16 --slots 16 2>"/tmp/ab_$bin.log" | tee "$OUT/ab_$bin.txt"
          python3 stalls.py "/tmp/ab_$bin.log" | head -9 | tee "$OUT/ab_stalls_$bin.txt"; done ;;
    together) for path in "" --int8 --fastest; do /tmp/continuous_parity 64 $path; done 2>&1 |
                tee "$OUT/continuous_parity.txt" ;;
    steps) for run in "deepread" "deepread --fastest" "deepread_b" "deepread_b --fastest"; do set -- $run
             [ -x "/tmp/$1" ] || continue; echo "--- $run"
             /tmp/$1 bench --pages ${STEP_PAGES:-1,16,32,64} --tokens 128 "${@:2}" 2>&1; done | tee "$OUT/steps.txt" ;;
    launches) for v in 1 0; do echo "--- DEEPREAD_DEPENDENT_LAUNCH=$v"
                DEEPREAD_DEPENDENT_LAUNCH=$v /tmp/deepread bench --pages ${STEP_PAGES:-1,16,32,64} --tokens 128 2>&1
              done | tee "$OUT/launches.txt" ;;
    remote) remote_step 32 32 2>&1 | tee "$OUT/remote.txt" ;;
    remote1) remote_step 8 1 2>&1 | tee "$OUT/remote1.txt" ;;
    int8) for run in bf16 int8 "int8 --fastest"; do set -- $run; echo "--- $run"
            /tmp/deepread bench --pages 1,16,64 --tokens 64 --weights "$@" 2>&1; done | tee "$OUT/int8_bench.txt"
          /tmp/int8_agreement remote/tokenizer.json int8/*.md 2>&1 | tee "$OUT/int8_agreement.txt" ;;
    profile) DEEPREAD_CUDA_GRAPHS=0 /usr/local/cuda/bin/ncu --cache-control none --clock-control none \
               --metrics gpu__time_duration.sum --csv --log-file "$OUT/ncu.csv" \
               /tmp/deepread bench $model --pages "${PROFILE_PAGES:-1}" --tokens 4 ${PROFILE_ARGS:-} 2>&1 | tail -5
             python3 ncu_summary.py "$OUT/ncu.csv" | tee "$OUT/ncu_summary.txt" ;;
    kernels) for ks in ${KERNELS:-attention_decode:30 moe_gate_up_narrow:30 moe_down_narrow:30 linear_tiles_few:60}; do
               DEEPREAD_CUDA_GRAPHS=0 /usr/local/cuda/bin/ncu --set full --import-source yes --launch-count 1 \
                 --kernel-name "regex:^${ks%:*}" --launch-skip "${ks#*:}" -o "$OUT/${ks%:*}" -f \
                 /tmp/deepread bench $model --pages ${PROFILE_PAGES:-1} --tokens 4 >/dev/null 2>&1
               /usr/local/cuda/bin/ncu --import "$OUT/${ks%:*}.ncu-rep" --page details > "$OUT/${ks%:*}.txt" 2>&1
               grep -E "^  [a-z_]+|Duration|DRAM Throughput|Achieved Occupancy|Registers Per Thread" "$OUT/${ks%:*}.txt"
             done ;;
    *) echo "unknown step: $step" >&2; exit 2 ;;
  esac
done
echo "=== done $(date +%T)"
