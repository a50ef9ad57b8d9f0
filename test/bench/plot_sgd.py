#!/usr/bin/env python3
"""Summarise and plot loom_sgd runs: error against wall-clock time per slack.

    plot_sgd.py CSV [--png OUT.png] [--targets 0.2,0.15,0.12]

CSV lines: rep,slack,rank,iter,seconds,rmse (loom_sgd --csv, prefixed with the repetition).
Prints, per slack, medians over the repetitions of: the time of the last iteration (the
slowest rank's), and for each target RMSE the time at which the median rank first reached
it.  The plot shows, for the first repetition, the RMSE averaged over the ranks against
the time averaged over the ranks, iteration by iteration.
"""
import argparse
import statistics
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--png")
    ap.add_argument("--targets", default="0.2,0.15,0.12")
    a = ap.parse_args()
    targets = [float(t) for t in a.targets.split(",")]
    runs = defaultdict(lambda: defaultdict(list))  # (rep, slack) -> rank -> [(iter, t, e)]
    order = []
    with open(a.csv) as f:
        for line in f:
            rep, slack, rank, it, t, e = line.strip().split(",")
            if slack not in order:
                order.append(slack)
            runs[(rep, slack)][int(rank)].append((int(it), float(t), float(e)))
    reps = sorted({r for r, _ in runs})
    print("slack  total_s  " + "  ".join("t(rmse<=%g)_s" % t for t in targets) + "  final_rmse  (medians of %d runs)" % len(reps))
    for slack in order:
        tot, final, reach = [], [], {t: [] for t in targets}
        for rep in reps:
            ranks = runs.get((rep, slack))
            if not ranks:
                continue
            tot.append(max(v[-1][1] for v in ranks.values()))
            final.append(statistics.median(v[-1][2] for v in ranks.values()))
            for t in targets:
                firsts = [next((x[1] for x in v if x[2] <= t), float("inf")) for v in ranks.values()]
                reach[t].append(statistics.median(firsts))
        cells = ["%12s" % ("%.3f" % statistics.median(reach[t]) if statistics.median(reach[t]) != float("inf") else "not reached") for t in targets]
        print("%5s  %7.3f  %s  %10.4f" % (slack, statistics.median(tot), "  ".join(cells), statistics.median(final)))
    if a.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for slack in order:
            ranks = runs[(reps[0], slack)]
            n = min(len(v) for v in ranks.values())
            ts = [statistics.mean(v[i][1] for v in ranks.values()) for i in range(n)]
            es = [statistics.mean(v[i][2] for v in ranks.values()) for i in range(n)]
            ax.plot(ts, es, label="slack " + slack if slack != "off" else "ordinary allreduce")
        ax.set_xlabel("wall-clock time (s), mean over ranks")
        ax.set_ylabel("test RMSE, mean over ranks")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        ax.set_title("loom_sgd, 4 x 2 emulated cluster, a rotating straggler")
        fig.tight_layout()
        fig.savefig(a.png, dpi=90)


if __name__ == "__main__":
    main()
