# Sums an ncu CSV by kernel.
#   python3 ncu_summary.py CSV           gpu__time_duration of every launch: the kernels that take the most time
#                                        overall, then the last decode step's kernels (from its embedding lookup
#                                        on) in launch order, with their grids.
#   python3 ncu_summary.py --shapes CSV  a CSV taken with `--filter-mode per-launch-config` (each grid and block
#                                        shape sampled a few times, which skips past the prompt's thousands of
#                                        launches to a decode step's): each kernel and launch shape's mean time
#                                        and DRAM bytes (dram__bytes_read.sum, if taken) a launch, slowest first.
import collections
import csv
import sys

TIME = "gpu__time_duration.sum"
BYTES = "dram__bytes_read.sum"
# Times to µs, bytes to MB.
SCALE = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}


def read(path):
    """Each row of the CSV as (kernel, grid, block, metric, value in µs or MB), in launch order."""
    rows = csv.DictReader(line for line in open(path) if not line.startswith("=="))
    return [(row["Kernel Name"].split("(")[0], row["Grid Size"], row["Block Size"], row["Metric Name"],
             float(row["Metric Value"].replace(",", "")) * SCALE[row["Metric Unit"]]) for row in rows]


def by_kernel(records):
    launches = [(name[:70], grid, us) for name, grid, _, metric, us in records if metric == TIME]
    total, count = collections.Counter(), collections.Counter()
    for name, _, us in launches:
        total[name] += us
        count[name] += 1
    print(f"{len(launches)} kernels, {sum(total.values()) / 1000:.2f} ms total")
    for name, us in total.most_common(30):
        print(f"{us / 1000:9.3f} ms {count[name]:6d}x {us / count[name]:9.1f} us  {name}")

    starts = [i for i, (name, _, _) in enumerate(launches) if name.startswith("embed_rows")]
    if not starts:
        return
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


def mean(values):
    return sum(values) / len(values) if values else 0.0


def by_shape(records):
    samples = collections.defaultdict(lambda: collections.defaultdict(list))
    for name, grid, block, metric, value in records:
        samples[(name[:40], grid, block)][metric].append(value)
    for (name, grid, block), metrics in sorted(samples.items(), key=lambda kv: -mean(kv[1][TIME])):
        times = metrics[TIME]
        print(f"{mean(times):9.2f} us {mean(metrics[BYTES]):9.2f} MB  n={len(times)}  {name} {grid} {block}")


if sys.argv[1] == "--shapes":
    by_shape(read(sys.argv[2]))
else:
    by_kernel(read(sys.argv[1]))
