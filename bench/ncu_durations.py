#!/usr/bin/env python3
"""Kernel durations from an Nsight Compute CSV, one line per kernel, longest total first.

  ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base CMD... > RAW.csv
  bench/ncu_durations.py RAW.csv

Prints `NAME launches=N median_us=M mean_us=A max_us=X` per kernel (the name up to its argument list,
cut to 40 characters). What the device steps of bench/results/ompl_resident/ (calls 24-25) printed with
the same lines inline.
"""
import collections
import csv
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench/ncu_durations.py RAW.csv")
    with open(sys.argv[1], newline="") as f:
        rows = [r for r in csv.reader(f) if len(r) > 5]
    if not rows:
        print("no rows")
        return
    ix = {k: i for i, k in enumerate(rows[0])}
    per = collections.defaultdict(list)
    for r in rows[1:]:
        if r[ix["Metric Name"]] == "gpu__time_duration.sum":
            per[r[ix["Kernel Name"]].split("(")[0]].append(float(r[ix["Metric Value"]].replace(",", "")) / 1000.0)
    for name, v in sorted(per.items(), key=lambda kv: -sum(kv[1])):
        v.sort()
        print(f"{name[:40]:40s} launches={len(v):5d} median_us={v[len(v) // 2]:8.2f} "
              f"mean_us={sum(v) / len(v):8.2f} max_us={v[-1]:8.2f}")


if __name__ == "__main__":
    main()
