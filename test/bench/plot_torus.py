#!/usr/bin/env python3
"""Table and plot of loom_bw runs on the emulated torus, with the model's predictions
(docs/user/performance.md, "Torus").

usage: plot_torus.py --cases FILE --data DIR [--model tools/loom-model] [--rate BYTES_PER_S]
                     [--png docs/torus-4x4.png] [--bytes 4194304,16777216]

FILE has one line per case: NAME DIMS GROUPS NODES, NODES the torus node indices of the
hosts in rank order (loomnodeI is node I, row-major), e.g.
    rand8 4x4 1 1,15,14,5,2,10,4,9
and DIR holds NAME-bcast.csv, NAME-reduce.csv and NAME-allreduce.csv from
    test/cluster/mpirun.sh --hosts ... -- test/bench/loom_bw -c COLL ... --groups GROUPS --csv ...
The single-link bound is the bytes over the link's nominal rate (--nominal, 12.5e6 B/s:
100 Mbit/s); the model gets the rate TCP delivers on it (--rate, 1448 of every 1514
bytes on the wire: 11.955e6 B/s) and L = 30 us, o = 5 us.  Prints a Markdown table;
--png also draws time / bound per case at the largest size (bars: measured; marks:
the model).
"""
import argparse
import csv
import os
import subprocess


def rows(path):
    out = {}
    if not os.path.exists(path):
        return out
    for r in csv.DictReader(open(path)):
        out[(int(r["bytes"]), r["variant"])] = float(r["median_us"])
        if r["variant"] == "loom auto" and r["served_by"] == "torus":
            out[(int(r["bytes"]), "loom auto (torus)")] = float(r["median_us"])
    return out


def pick(data, b, names):
    for n in names:
        if (b, n) in data:
            return data[(b, n)]
    return None


def model(tool, coll, dims, groups, nodes, b, rate, alg):
    cmd = [tool, "--coll", coll, "--torus", dims, "--subset", "nodes:" + nodes, "--groups", str(groups),
           "--link-rate", "%gB" % rate, "--L", "30", "--o", "5", "--bytes", str(b), "--alg", alg, "--csv"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    for r in csv.DictReader(res.stdout.splitlines()):
        if r["time_us"]:
            return float(r["time_us"]), r.get("load", "")
    return None, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--model", default="tools/loom-model")
    ap.add_argument("--rate", type=float, default=12.5e6 * 1448 / 1514)
    ap.add_argument("--nominal", type=float, default=12.5e6)
    ap.add_argument("--bytes", default="4194304,16777216")
    ap.add_argument("--png")
    a = ap.parse_args()
    sizes = [int(x) for x in a.bytes.split(",")]
    cases = [l.split() for l in open(a.cases) if l.strip() and not l.startswith("#")]
    plot = {}
    print("| case | nodes | collective | size | tuned | torus | torus / tuned | model (torus) | measured / model "
          "| twotree 32-64 KiB / tuned |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for coll in ("bcast", "reduce", "allreduce"):
        for name, dims, groups, nodes in cases:
            data = rows(os.path.join(a.data, "%s-%s.csv" % (name, coll)))
            if not data:
                continue
            n = len(nodes.split(","))
            for b in sizes:
                bound = b / a.nominal * 1e6
                tuned = pick(data, b, ["tuned"])
                torus = pick(data, b, ["loom torus", "loom torus seg=auto", "loom auto (torus)"])
                tt = pick(data, b, ["loom twotree seg=64K", "loom twotree seg=60K", "loom twotree seg=32K"])
                if tuned is None or torus is None:
                    continue
                pred, load = model(a.model, coll, dims, groups, nodes, b, a.rate, "torus")
                label = "%d MiB" % (b >> 20)
                who = "%d" % n if groups == "1" else "%d x %d" % (int(groups), n // int(groups))
                print("| %s | %s | %s | %s | %.0f ms (%.1fx) | %.0f ms (%.2fx) | %.2f | %s | %s | %s |" % (
                    name, who, coll, label, tuned / 1e3, tuned / bound, torus / 1e3, torus / bound, torus / tuned,
                    "%.0f ms (load %s)" % (pred / 1e3, load) if pred else "n/a",
                    "%.2f" % (torus / pred) if pred else "", "%.2f" % (tt / tuned) if tt else ""))
                if b == sizes[-1]:
                    plot.setdefault(coll, []).append((name, tuned / bound, (tt or 0) / bound, torus / bound,
                                                      (pred or 0) / bound))
    if a.png and plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(plot), figsize=(6 * len(plot), 4.2), squeeze=False)
        for ax, (coll, pts) in zip(axes[0], plot.items()):
            x = range(len(pts))
            w = 0.27
            ax.bar([i - w for i in x], [p[1] for p in pts], w, label="tuned", color="#bbbbbb")
            ax.bar([i for i in x], [p[2] for p in pts], w, label="loom twotree (32-64 KiB chunks)", color="#88aadd")
            ax.bar([i + w for i in x], [p[3] for p in pts], w, label="loom torus", color="#2255aa")
            ax.plot([i + w for i in x], [p[4] for p in pts], "k_", markersize=14, mew=2, label="model (torus)")
            ax.axhline(1.0, color="k", ls=":", lw=1)
            ax.set_xticks(list(x))
            ax.set_xticklabels([p[0] for p in pts], rotation=30, ha="right")
            ax.set_ylabel("time / single-link bound")
            ax.set_title("%s, %d MiB, 100 Mbit/s links" % (coll, sizes[-1] >> 20))
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(a.png, dpi=110)


if __name__ == "__main__":
    main()
