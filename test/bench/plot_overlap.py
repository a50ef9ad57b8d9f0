#!/usr/bin/env python3
"""Plot loom_overlap output: pure latency and exposed time per size, one panel pair per run.

    plot_overlap.py --png OUT.png LABEL=FILE [LABEL=FILE ...]

Each FILE is the text loom_overlap prints (one table); LABEL names the run (np 2, 4 x 2, ...);
a LABEL starting with "pure:" gets no overlap panel (with more ranks than cores the overlap the
benchmark computes means nothing). Left column: pure latency (log-log) of every variant; right
column: the exposed time, overall - compute (log-log): what the program waits for beyond its own
computation, with MPI_Test called during it.
"""
import argparse
import sys


def parse(path):
    rows = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6 or not parts[0].isdigit():
                continue
            size, variant = int(parts[0]), parts[1]
            pure, exposed = float(parts[2]), float(parts[3]) - float(parts[4])
            rows.setdefault(variant, []).append((size, pure, exposed))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--png", required=True)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r.split("=", 1) for r in a.runs]
    fig, axes = plt.subplots(len(runs), 2, figsize=(10, 3.2 * len(runs)), squeeze=False)
    for i, (label, path) in enumerate(runs):
        rows = parse(path)
        pure_only = label.startswith("pure:")
        label = label[5:] if pure_only else label
        for variant, pts in sorted(rows.items()):
            pts.sort()
            xs = [p[0] for p in pts]
            style = "-o" if variant.startswith("loom") else "--s"
            axes[i][0].loglog(xs, [p[1] for p in pts], style, label=variant, markersize=4)
            if not pure_only:
                axes[i][1].loglog(xs, [max(p[2], 0.01) for p in pts], style, label=variant, markersize=4)
        axes[i][0].set_title(label + ": pure latency (us)")
        axes[i][1].set_title(label + ": exposed time (us)")
        if pure_only:
            axes[i][1].text(0.5, 0.5, "more ranks than cores:\nno overlap measurement", ha="center",
                            va="center", transform=axes[i][1].transAxes)
        for ax in axes[i]:
            ax.set_xlabel("bytes")
            ax.grid(True, which="both", alpha=0.3)
        axes[i][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.png, dpi=90)
    return 0


if __name__ == "__main__":
    sys.exit(main())
