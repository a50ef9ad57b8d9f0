#!/usr/bin/env python3
"""Summary table of loom-tune --report files: per kind of call and machine shape, auto's
time against tuned's (geometric mean over the sizes) and the sizes where auto took more
than 1.1x the fastest of loom's own algorithms while running another one.

usage: auto_summary.py LABEL=REPORT.md[+REPORT.md...] ...

Several reports under one label are merged by kind (a later report's kind replaces an
earlier one's, with its confirmations), e.g. a full run and a re-measure of one
collective.  A report written with loom-tune --confirm also says, per kind, which of those
sizes held when measured again (auto against that variant alone): "held: 16K 1.12x", or
"none held".
"""
import re
import sys

KIND = re.compile(r"#### (.*?), P=")
CONF = re.compile(r"\| ([a-z ]+) \| (\S+) \| [^|]* \| [^|]* \| [\d.]+ \| [^|]* \| ([\d.]+) \| [^|]* \| (holds|within)")
MISS = re.compile(r"\| (\S+) \|.*\| ([\d.]+) \*\*!\*\* \|")
LINE = re.compile(r"auto / tuned, geometric mean over (\d+) sizes: ([\d.]+); auto more than [\d.]+x loom.s best "
                  r"at (\d+) size\(s\) running another variant(?: \((.*?)\))?, and at (\d+)")


def read(path, into, label, held):
    """A later report's kind replaces an earlier one's, its confirmations included."""
    kind, worst, seen, mine = None, 1.0, set(), {}
    for line in open(path):
        m = CONF.match(line)
        if m:
            d = mine.setdefault(m.group(1), [])
            if m.group(4) == "holds":
                d.append("%s %.2fx" % (m.group(2), float(m.group(3))))
            continue
        m = KIND.match(line)
        if m:
            kind, worst = m.group(1), 1.0
            seen.add(kind)
            continue
        m = MISS.match(line)
        if m:
            worst = max(worst, float(m.group(2)))
            continue
        m = LINE.match(line)
        if m and kind:
            into.setdefault(kind, {})[label] = (float(m.group(2)), int(m.group(1)), int(m.group(3)),
                                                m.group(4) or "", worst)
    for k in seen | set(mine):
        held.setdefault(k, {}).pop(label, None)
        if k in mine:
            held[k][label] = mine[k]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows, labels, held = {}, [], {}
    for arg in sys.argv[1:]:
        label, _, files = arg.partition("=")
        labels.append(label)
        for f in files.split("+"):
            read(f, rows, label, held)
    print("| kind | " + " | ".join(labels) + " |")
    print("| --- |" + " --- |" * len(labels))
    for kind, d in rows.items():
        cells = []
        for label in labels:
            if label not in d:
                cells.append("")
                continue
            gm, _, n, sizes, worst = d[label]
            cell = "%.2f" % gm
            if n:
                cell += "; %d miss%s (%s; up to %.2fx)" % (n, "es" if n > 1 else "", sizes, worst)
                h = held.get(kind, {}).get(label)
                if h is not None:
                    cell += ", held: " + (", ".join(h) if h else "none")
            cells.append(cell)
        print("| %s | %s |" % (kind, " | ".join(cells)))


if __name__ == "__main__":
    main()
