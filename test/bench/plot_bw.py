#!/usr/bin/env python3
"""Plots and tables from loom_bw --csv files (docs/user/performance.md, "Large messages").

usage: plot_bw.py [--model tools/loom-model] [--model-args "FLAGS"] [--png docs/bandwidth-np8.png] [--title T]
                  [--table BYTES] FILE.csv [FILE.csv ...]

--png: time vs size (log-log), one panel per collective, every variant of the CSV
(loom solid, tuned dashed), the bandwidth bound of the CSV (black dotted) and, for
every loom algorithm, the prediction of `loom-model --csv` for the same P and sizes
(grey dash-dot, segs chosen by the model as loom does with its knob at auto).
--table BYTES: Markdown tables at that size: loom auto, the best loom variant, tuned's
default, the best tuned variant and the bound; then per loom algorithm the model's
prediction next to the measured variant with the knob at auto, and the best knob.  Without --png or --table
both are made (PNG docs/bandwidth-npP.png, table at 16 MiB).
All CSV files given must have the same np.
"""
import argparse
import collections
import csv
import subprocess
import sys

ORDER = ["allreduce", "bcast", "reduce", "allgather", "reduce_scatter_block", "reduce_scatter"]


def load(paths):
    data = collections.OrderedDict()  # coll -> variant -> {bytes: row}
    nps = set()
    for p in paths:
        for r in csv.DictReader(open(p)):
            nps.add(int(r["np"]))
            data.setdefault(r["collective"], collections.OrderedDict()).setdefault(r["variant"], {})[int(r["bytes"])] = r
    if len(nps) != 1:
        sys.exit("plot_bw.py: the CSV files mix np values %s" % sorted(nps))
    return data, nps.pop()


def model(exe, coll, p, lo, hi, extra=()):
    """{alg: {bytes: time_us}} from loom-model --csv (extra: its parameter flags)."""
    out = subprocess.run([exe, "--csv", "--coll", coll, "--P", str(p), "--sweep-bytes", "%d..%d" % (lo, hi)]
                         + list(extra), check=True, capture_output=True, text=True).stdout
    res = collections.defaultdict(dict)
    for r in csv.DictReader(out.splitlines()):
        try:
            res[r["alg"]][int(r["bytes"])] = float(r["time_us"])
        except (ValueError, KeyError):
            pass  # a refusal: no time
    return res


def algs_of(variant):
    """loom algorithm of a variant label ("loom ring seg=64K" -> "ring")."""
    parts = variant.split()
    return parts[1] if len(parts) > 1 and parts[0] == "loom" else None


def auto_alg(row):
    s = row["served_by"]
    return None if "fallback" in s else s.split("(")[0].split("+")[0].strip()


def plot(data, p, models, png, title=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colls = [c for c in ORDER if c in data]
    cols = 3 if len(colls) > 4 else 2
    rows = (len(colls) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.6 * rows), squeeze=False)
    for ax, c in zip(axes.flat, colls):
        variants = data[c]
        cmap = plt.get_cmap("tab20")
        fixed = {"tuned": "tab:blue", "loom auto": "tab:green"}  # the same in every panel
        others = [cmap(k) for k in range(20) if k not in (0, 1, 4, 5)]
        for i, (v, pts) in enumerate([vp for vp in variants.items() if vp[0] not in fixed] +
                                     [vp for vp in variants.items() if vp[0] in fixed]):
            xs = sorted(pts)
            ys = [float(pts[x]["median_us"]) for x in xs]
            style = "-" if v.startswith("loom") else "--"
            lw = 2.6 if v in fixed else 1.2
            ax.plot(xs, ys, style, marker="o", ms=2.5, lw=lw, color=fixed.get(v, others[i % len(others)]), label=v)
        first = next(iter(variants.values()))
        xs = sorted(first)
        ax.plot(xs, [float(first[x]["bound_us"]) for x in xs], ":", color="black", lw=2,
                label="bound (B=%s GB/s)" % first[xs[0]]["B_GBps"])
        for alg, pts in models.get(c, {}).items():
            if any(algs_of(v) == alg for v in variants):
                mx = sorted(pts)
                ax.plot(mx, [pts[x] for x in mx], "-.", color="grey", lw=1.5)
                ax.annotate("model " + alg, (mx[-1], pts[mx[-1]]), fontsize=7, color="grey", ha="right", va="bottom")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title("%s, np %d" % (c, p))
        ax.set_xlabel("bytes (vector; allgather: result; reduce_scatter: input)")
        ax.set_ylabel("median time per call (us)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, ncol=2, loc="upper left")
    for ax in list(axes.flat)[len(colls):]:
        ax.axis("off")
    fig.suptitle(title or "loom vs tuned, large messages, np %d (%s); grey dash-dot: loom-model" %
                 (p, "%d ranks on 2 cores" % p), fontsize=11)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print("wrote", png, file=sys.stderr)


def table(data, p, models, size):
    head = ["collective", "loom auto us (ran)", "best loom variant us", "tuned default us", "best tuned variant us",
            "bound us", "auto/tuned", "best loom/best tuned", "bound/auto"]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for c in [c for c in ORDER if c in data]:
        rows = {v: pts[size] for v, pts in data[c].items() if size in pts}
        if "tuned" not in rows or "loom auto" not in rows:
            continue
        t = lambda v: float(rows[v]["median_us"])
        auto = rows["loom auto"]
        ran = auto_alg(auto)
        loom = min((v for v in rows if v.startswith("loom") and v != "loom auto"), key=t, default=None)
        tuned_forced = [v for v in rows if v.startswith("tuned ")]
        best_t = min(tuned_forced + ["tuned"], key=t)
        bound = float(auto["bound_us"])
        out.append("| " + " | ".join([
            c, "%.0f (%s)" % (t("loom auto"), ran or "tuned"),
            "%s %.0f" % (loom.replace("loom ", ""), t(loom)) if loom else "",
            "%.0f" % t("tuned"), "%s %.0f" % (best_t, t(best_t)), "%.0f" % bound,
            "%.2f" % (t("loom auto") / t("tuned")), "%.2f" % (t(loom) / t(best_t)) if loom else "",
            "%.3f" % (bound / t("loom auto"))]) + " |")
    return "\n".join(out)


def model_table(data, p, models, size):
    """Per loom algorithm: the model (segs chosen as with the knob at auto) next to the
    measured seg=auto variant, and the best of the measured segment/chunk sizes."""
    head = ["collective", "algorithm", "model us", "measured us (knob auto)", "measured/model", "best knob here"]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for c in [c for c in ORDER if c in data]:
        rows = {v: pts[size] for v, pts in data[c].items() if size in pts}
        algs = []
        for v in rows:
            a = algs_of(v)
            if a and a != "auto" and a not in algs:
                algs.append(a)
        for a in algs:
            vs = [v for v in rows if algs_of(v) == a]
            auto = next((v for v in vs if v.endswith("seg=auto") or v == "loom " + a), None)
            best = min(vs, key=lambda v: float(rows[v]["median_us"]))
            m = models.get(c, {}).get(a, {}).get(size)
            meas = float(rows[auto]["median_us"]) if auto else None
            out.append("| " + " | ".join([
                c, a, "%.0f" % m if m else "", "%.0f" % meas if meas else "",
                "%.1f" % (meas / m) if m and meas else "",
                "%s (%.0f us)" % (best.split()[-1] if "seg=" in best else "-", float(rows[best]["median_us"]))]) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tools/loom-model")
    ap.add_argument("--model-args", default="",
                    help="loom-model parameter flags, e.g. \"--G 0.141 --ranks-per-core 4 --single-copy\"")
    ap.add_argument("--png")
    ap.add_argument("--title", help="the figure's title (default: large messages, np P)")
    ap.add_argument("--table", type=int)
    ap.add_argument("csv", nargs="+")
    a = ap.parse_args()
    data, p = load(a.csv)
    models = {}
    for c, variants in data.items():
        sizes = sorted({b for pts in variants.values() for b in pts})
        try:
            models[c] = model(a.model, c, p, sizes[0], sizes[-1], a.model_args.split())
        except (OSError, subprocess.CalledProcessError) as e:
            print("plot_bw.py: no model for %s: %s" % (c, e), file=sys.stderr)
    if not a.png and not a.table:
        a.png, a.table = "docs/bandwidth-np%d.png" % p, 16 << 20
    if a.png:
        plot(data, p, models, a.png, a.title)
    if a.table:
        print(table(data, p, models, a.table))
        print()
        print(model_table(data, p, models, a.table))


if __name__ == "__main__":
    main()
