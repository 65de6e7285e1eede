# Sums an ncu CSV of gpu__time_duration by kernel name: the kernels that take the most time overall, then the
# last decode step's kernels (from its embedding lookup on) in launch order, with their grids.
import collections
import csv
import sys

US_PER = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}

rows = csv.DictReader(line for line in open(sys.argv[1]) if not line.startswith("=="))
launches = [
    (row["Kernel Name"].split("(")[0][:70], row["Grid Size"],
     float(row["Metric Value"].replace(",", "")) * US_PER[row["Metric Unit"]])
    for row in rows if row["Metric Name"] == "gpu__time_duration.sum"
]
total, count = collections.Counter(), collections.Counter()
for name, _, us in launches:
    total[name] += us
    count[name] += 1
print(f"{len(launches)} kernels, {sum(total.values()) / 1000:.2f} ms total")
for name, us in total.most_common(30):
    print(f"{us / 1000:9.3f} ms {count[name]:6d}x {us / count[name]:9.1f} us  {name}")

starts = [i for i, (name, _, _) in enumerate(launches) if name.startswith("embed_rows")]
if starts:
    step = launches[starts[-1]:]
    print(f"\nlast decode step: {len(step)} kernels, {sum(us for _, _, us in step):.1f} us")
    by_name = collections.defaultdict(list)
    for name, _, us in step:
        by_name[name].append(us)
    for name, times in sorted(by_name.items(), key=lambda kv: -sum(kv[1])):
        print(f"{sum(times):8.1f} us {len(times):3d}x {sum(times) / len(times):7.2f} us  {name}")
    print("\nits first layers, in order:")
    for name, grid, us in step[:20]:
        print(f"{us:8.2f} us  {name} {grid}")
