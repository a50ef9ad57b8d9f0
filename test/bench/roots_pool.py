#!/usr/bin/env python3
"""Pool loom_roots CSVs of several jobs to separate what depends on the root from noise.

usage: roots_pool.py FILE.csv [FILE.csv ...]

One job's per-root medians scatter by 1.3-2.6x (max/min) on a machine where 8 ranks share
2 cores, for every component alike, and the slow roots differ from job to job.  What an
algorithm does differently for different roots shows up in every job.  So, per job and
(size, communicator), each root's median is divided by that job's median over the roots;
per root, the median of those ratios over the jobs is its cost relative to the others.
The spread printed is max/min of those pooled values, and odd/even the mean over the odd
roots over the mean over the even ones (the cluster's by-slot map puts ranks 2k and
2k+1 on one node, so a tree rooted at an odd rank starts with a network hop).
"""
import collections
import csv
import statistics
import sys


def main(files):
    if not files:
        sys.exit(__doc__.strip().splitlines()[2])
    pooled = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in files:
        job = collections.defaultdict(dict)
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                job[(row["collective"], int(row["bytes"]), row["comm"])][int(row["root"])] = \
                    float(row["median_us"])
        for key, per_root in job.items():
            mid = statistics.median(per_root.values())
            for root, us in per_root.items():
                pooled[key][root].append(us / mid)
    print("| collective | bytes | comm | jobs | root cost, pooled (root 0, 1, ...) | max/min | odd/even |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for key in sorted(pooled, key=lambda k: (k[0], k[1], k[2])):
        cost = {r: statistics.median(v) for r, v in pooled[key].items()}
        roots = sorted(cost)
        odd = [cost[r] for r in roots if r % 2]
        even = [cost[r] for r in roots if r % 2 == 0]
        oe = statistics.mean(odd) / statistics.mean(even) if odd and even else float("nan")
        print("| %s | %d | %s | %d | %s | %.2f | %.2f |" % (
            key[0], key[1], key[2], min(len(v) for v in pooled[key].values()),
            " ".join("%.2f" % cost[r] for r in roots), max(cost.values()) / min(cost.values()), oe))


if __name__ == "__main__":
    main(sys.argv[1:])
