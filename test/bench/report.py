#!/usr/bin/env python3
"""Turns loom_bench --csv files into the Markdown tables of docs/user/performance.md.

usage: report.py FILE.csv [FILE.csv ...]

For every file: one row per message size with tuned's median time, loom auto's
ratio to it (and which algorithm auto ran), and the ratio of each forced loom
variant.  Ratios below 1 mean loom is faster.
"""
import collections
import csv
import sys


def table(path):
    rows = list(csv.DictReader(open(path)))
    if not rows:
        return ""
    first = rows[0]
    by_size = collections.OrderedDict()
    variants = []
    for r in rows:
        by_size.setdefault(int(r["bytes"]), {})[r["variant"]] = r
        if r["variant"] not in variants:
            variants.append(r["variant"])
    forced = [v for v in variants if v.startswith("loom") and v != "loom auto"]
    out = [f"{first['collective']} {first['op']} {first['type']}, np {first['np']}:\n"]
    head = ["bytes", "tuned us", "auto/tuned", "auto ran"] + [v.replace("loom ", "") for v in forced]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + " --- |" * len(head))
    for size, d in by_size.items():
        tuned = float(d["tuned"]["median_us"])
        auto = d.get("loom auto")
        cells = [str(size), f"{tuned:.2f}"]
        if auto:
            cells += [f"{float(auto['median_us']) / tuned:.2f}", auto["served_by"].split("(")[0].strip()]
        else:
            cells += ["", ""]
        for v in forced:
            cells.append(f"{float(d[v]['median_us']) / tuned:.2f}" if v in d else "")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("\n".join(table(p) for p in sys.argv[1:]))


if __name__ == "__main__":
    main()
