# The transformers oracle on a document, extrapolated: hf_reference.py times a static batch of 16 pages (vision +
# prefill of the batch, then a decode step), and `deepread bench --document` says how many batches of 16 its mix
# makes and how many decode steps they take (a static batch runs until its longest page ends, as generate() does
# with no per-page stop). Oracle time = batches x (vision + prefill) + steps x (decode step at 129 tokens); the
# step is timed early in the context, so the figure flatters the oracle.
#   python3 oracle_document.py BENCH_DOCUMENT_OUTPUT ORACLE_OUTPUT
import re
import sys

bench, oracle = (open(p).read() for p in sys.argv[1:3])
m = re.search(r"B=16 .*vision\+prefill ([\d.]+) ms, decode ([\d.]+) ms/step", oracle)
if not m:
    sys.exit("no B=16 line in the oracle's output")
prefill_s, step_s = float(m[1]) / 1e3, float(m[2]) / 1e3
for mix, pages, tokens, batches, steps in re.findall(
    r"(\w+) mix: (\d+) pages, (\d+) tokens .*static batches of 16: (\d+), taking (\d+) decode steps", bench
):
    seconds = int(batches) * prefill_s + int(steps) * step_s
    print(
        f"oracle, {mix} mix, static batch of 16 (extrapolated): {int(pages) / seconds:.3f} pages/s, "
        f"{int(tokens) / seconds:.1f} tokens/s ({seconds:.0f} s: {batches} x {prefill_s * 1e3:.1f} ms + "
        f"{steps} x {step_s * 1e3:.2f} ms)"
    )
