#!/usr/bin/env python3
"""Table of loom_bw --transports runs: per size, the UCX path's median time over the PML
path's (loom auto on both, the median over the repetitions), for each PML and collective.
The PML path is the "[pml]" communicator where the runs have one, else the base one (runs
from before coll_loom_transport auto chose per call).  With --auto: the base
communicator's time (coll_loom_transport auto) over the faster of the two paths.
With --puts: alltoall's `direct` with direct writes (loom_bw --put-max) over the same on
UCX tag messages and over the PML, for each PML.

usage: transport_table.py --data DIR --shape NAME [--puts]
DIR holds NAME-PML-COLL-REP.csv (PML ob1 or ucx, COLL allreduce, bcast or alltoall).
"""
import argparse
import csv
import glob
import os
import statistics

COLLS = ("allreduce", "bcast", "alltoall")
PMLS = ("ob1", "ucx")


def size_name(b):
    return "%d KiB" % (b >> 10) if 1024 <= b < 1 << 20 else "%d MiB" % (b >> 20) if b >= 1 << 20 else "%d B" % b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--shape", required=True)
    ap.add_argument("--puts", action="store_true")
    ap.add_argument("--auto", action="store_true")
    a = ap.parse_args()
    times = {}  # (pml, coll, bytes, variant) -> medians of the jobs
    for f in glob.glob(os.path.join(a.data, "%s-*-*-*.csv" % a.shape)):
        _, pml, coll, _ = os.path.basename(f)[:-4].split("-")
        for r in csv.DictReader(open(f)):
            times.setdefault((pml, coll, int(r["bytes"]), r["variant"]), []).append(float(r["median_us"]))
    sizes = sorted({k[2] for k in times})
    if a.puts:
        print("| bytes | " + " | ".join("%s: over tag messages | %s: over the PML" % (p, p) for p in PMLS) + " |")
        print("| --- " * (1 + 2 * len(PMLS)) + "|")
        for b in sizes:
            cells = []
            for p in PMLS:
                put = times.get((p, "alltoall", b, "loom direct [ucx put]"))
                for other in ("loom direct [ucx]", "loom direct"):
                    o = times.get((p, "alltoall", b, other))
                    cells.append("%.2f" % (statistics.median(put) / statistics.median(o)) if put and o else "")
            print("| %s | %s |" % (size_name(b), " | ".join(cells)))
        return
    print("| bytes | " + " | ".join("%s %s" % (p, c) for p in PMLS for c in COLLS) + " |")
    print("| --- " * (1 + len(PMLS) * len(COLLS)) + "|")
    for b in sizes:
        cells = []
        for p in PMLS:
            for c in COLLS:
                auto = times.get((p, c, b, "loom auto"))
                pml = times.get((p, c, b, "loom auto [pml]"), auto)
                ucx = times.get((p, c, b, "loom auto [ucx]"))
                if a.auto:
                    best = min(statistics.median(pml), statistics.median(ucx)) if pml and ucx else 0
                    cells.append("%.2f" % (statistics.median(auto) / best) if auto and best else "")
                else:
                    cells.append("%.2f" % (statistics.median(ucx) / statistics.median(pml)) if pml and ucx else "")
        print("| %s | %s |" % (size_name(b), " | ".join(cells)))


if __name__ == "__main__":
    main()
