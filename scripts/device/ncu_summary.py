# Sums an ncu CSV of gpu__time_duration by kernel name and prints the kernels that take the most time.
import collections
import csv
import sys

US_PER = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}

rows = csv.DictReader(line for line in open(sys.argv[1]) if not line.startswith("=="))
total, count = collections.Counter(), collections.Counter()
for row in rows:
    if row["Metric Name"] != "gpu__time_duration.sum":
        continue
    name = row["Kernel Name"][:90]
    total[name] += float(row["Metric Value"].replace(",", "")) * US_PER[row["Metric Unit"]]
    count[name] += 1
print(f"{sum(count.values())} kernels, {sum(total.values()) / 1000:.2f} ms total")
for name, us in total.most_common(45):
    print(f"{us / 1000:9.3f} ms {count[name]:6d}x {us / count[name]:9.1f} us  {name}")
