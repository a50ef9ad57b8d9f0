#!/usr/bin/env python3
"""Heat maps of auto's predicted time over the LogGP bound (docs/dev/model.md, "Heat maps").

usage: plot_heat.py CSV... [--png-dir docs] [--table]

Each CSV is the output of
    tools/loom-model --auto --coll COLL --sweep-P 2..65536 --sweep-bytes 8..1G --csv
(one line per (P, bytes): auto's algorithm, its time, the bound, the ratio, loom's best
algorithm by the model).  --png-dir draws one map per collective (P down, bytes across,
colour: auto's ratio; cells auto hands to the previous component, which the model does not
cost, are grey); --table prints a Markdown table per collective at a few sizes.
"""
import argparse
import csv
import math
import os


def load(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    coll = rows[0]["coll"] if rows else os.path.basename(path)
    cells = {(int(r["P"]), int(r["bytes"])): r for r in rows}
    return coll, cells


def fmt_bytes(n):
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= unit:
            return "%d %s" % (n // unit, name)
    return "%d B" % n


def summary(coll, cells):
    ratios = [float(r["auto_ratio"]) for r in cells.values() if float(r["auto_ratio"]) > 0]
    big = [float(r["auto_ratio"]) for (p, n), r in cells.items() if n >= 1 << 20 and float(r["auto_ratio"]) > 0]
    prev = sum(1 for r in cells.values() if r["auto"] == "previous")
    within2 = sum(1 for x in ratios if x <= 2.0)
    within125 = sum(1 for x in big if x <= 1.25)
    return ("%s: %d cells; costed %d, within 2x %d; from 1 MiB within 1.25x %d of %d; "
            "worst %.2fx; handed to the previous component %d"
            % (coll, len(cells), len(ratios), within2, within125, len(big), max(ratios) if ratios else 0, prev))


def table(coll, cells, sizes):
    Ps = sorted({p for p, _ in cells})
    print("\n%s (auto's algorithm and its time over the bound; loom's best where auto is not it):\n" % coll)
    print("| P | " + " | ".join(fmt_bytes(n) for n in sizes) + " |")
    print("| --- " * (len(sizes) + 1) + "|")
    for p in Ps:
        if p & (p - 1) or (p > 16 and int(math.log2(p)) % 4):
            continue
        out = []
        for n in sizes:
            r = cells.get((p, n))
            if r is None:
                out.append("-")
                continue
            a, ra, b, rb = r["auto"], float(r["auto_ratio"]), r["best"], float(r["best_ratio"])
            s = "previous" if a == "previous" else "%s %.2f" % (a, ra) if ra > 0 else "%s (not costed)" % a
            if b != a:
                s += " (%s %.2f)" % (b, rb)
            out.append(s)
        print("| %d | %s |" % (p, " | ".join(out)))


def plot(coll, cells, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    Ps = sorted({p for p, _ in cells})
    Ns = sorted({n for _, n in cells})
    grid = [[float("nan")] * len(Ns) for _ in Ps]
    for i, p in enumerate(Ps):
        for j, n in enumerate(Ns):
            r = cells.get((p, n))
            if r is not None and float(r["auto_ratio"]) > 0:
                grid[i][j] = float(r["auto_ratio"])
    fig, ax = plt.subplots(figsize=(9, 5.5))
    cmap = plt.get_cmap("RdYlGn_r").copy()
    cmap.set_bad("#bbbbbb")
    im = ax.imshow(grid, aspect="auto", origin="lower", cmap=cmap, norm=LogNorm(vmin=1.0, vmax=16.0))
    ax.set_xticks(range(0, len(Ns), 3))
    ax.set_xticklabels([fmt_bytes(Ns[j]).replace(" ", "") for j in range(0, len(Ns), 3)], rotation=45)
    ax.set_yticks(range(0, len(Ps), 2))
    ax.set_yticklabels([str(Ps[i]) for i in range(0, len(Ps), 2)])
    ax.set_xlabel("bytes")
    ax.set_ylabel("ranks (one per node, flat network)")
    ax.set_title("%s: auto's predicted time / LogGP bound (grey: previous or not costed)" % coll)
    for i in range(len(Ps)):
        for j in range(len(Ns)):
            v = grid[i][j]
            if v == v and v >= 1.995:
                ax.text(j, i, "%.0f" % v if v >= 10 else "%.1f" % v, ha="center", va="center", fontsize=5)
    fig.colorbar(im, ax=ax, ticks=[1, 1.25, 2, 4, 8, 16], format="%.2g")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--png-dir")
    ap.add_argument("--table", action="store_true")
    a = ap.parse_args()
    for path in a.csv:
        coll, cells = load(path)
        print(summary(coll, cells))
        if a.table:
            table(coll, cells, [8, 1024, 65536, 1 << 20, 16 << 20, 1 << 30])
        if a.png_dir:
            plot(coll, cells, os.path.join(a.png_dir, "heat-%s.png" % coll))


if __name__ == "__main__":
    main()
