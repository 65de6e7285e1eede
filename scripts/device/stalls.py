# Where the decode stalls while pages join come from: reads `deepread bench --document`'s debug log
# (RUST_LOG=deepread_engine::scheduler=debug) and prints each join piece's time by kind (and the vision
# thread's time a page, which runs beside the decode steps) and the longest stalls with the piece run just
# before them.
#   python3 stalls.py LOG
import re
import signal
import sys

# Quietly stop when piped into head.
signal.signal(signal.SIGPIPE, signal.SIG_DFL)

ansi = re.compile(r"\x1b\[[0-9;]*m")
field = re.compile(r"(\w+)=([\w.]+)")
pieces, stalls, last = {}, [], None
for line in open(sys.argv[1], errors="replace"):
    line = ansi.sub("", line)
    fields = dict(field.findall(line))
    if "page seen" in line:
        kind = "page seen (beside decode)"
    elif "page joined after its last prefill piece" in line:
        kind = "last prefill piece"
    elif "prefill piece" in line:
        kind = f"prefill {fields.get('positions')} positions"
    elif "decode step after a join piece" in line:
        stalls.append((float(fields["stall_ms"]), int(fields["rows"]), last))
        continue
    else:
        continue
    pieces.setdefault(kind, []).append(float(fields["ms"]))
    if "page seen" not in line:
        last = kind


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


print("piece                      count   p50 ms   p99 ms   max ms")
for kind, ms in sorted(pieces.items()):
    print(f"{kind:<25} {len(ms):>6} {pct(ms, .5):>8.1f} {pct(ms, .99):>8.1f} {max(ms):>8.1f}")
if stalls:
    ms = [s for s, _, _ in stalls]
    print(f"stalls: {len(ms)}, p50 {pct(ms, .5):.1f} ms, p99 {pct(ms, .99):.1f} ms, max {max(ms):.1f} ms")
    for stall, rows, kind in sorted(stalls, reverse=True)[:10]:
        print(f"  {stall:6.1f} ms at {rows} rows, after a {kind}")
