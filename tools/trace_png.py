#!/usr/bin/env python3
"""Draws one dispatch of a vgpu timing trace (HK_VGPU_TIMING_TRACE, `hk run ... --model P --trace FILE`) as a PNG:
per SIMD its matrix core's busy band, then a row per wave of that SIMD with its instruction classes and waits, over
the replayed round (or --window START:END cycles).

  trace_png.py TRACE.json OUT.png [--process N] [--window START:END] [--title TEXT]

--process picks the dispatch (1 = the file's first; default: the one with the longest round). Rows with more slices
than pixels are drawn by the cause that fills most of each pixel column.
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

# Slice name -> colour: issued instruction classes, then the waits (vgpu::StallCause names).
COLOURS = {
    "MFMA": "#2ca02c", "VALU": "#1f77b4", "SALU": "#bcbd22", "SMEM": "#17becf", "VMEM": "#9467bd",
    "LDS": "#ff7f0e", "branch": "#7f7f7f", "s_waitcnt": "#7f7f7f", "s_barrier": "#7f7f7f", "s_nop": "#7f7f7f",
    "s_sleep": "#7f7f7f", "s_setprio": "#7f7f7f", "s_endpgm": "#7f7f7f", "other": "#7f7f7f",
    "vmcnt wait": "#d62728", "lgkmcnt wait": "#e377c2", "barrier": "#8c564b", "matrix core busy": "#98df8a",
    "VALU busy": "#aec7e8", "memory queue full": "#c5b0d5", "lost arbitration": "#ffbb78",
    "s_nop/s_sleep": "#c7c7c7", "idle (ended)": "#f4f4f4",
}
ISSUED = {"MFMA", "VALU", "SALU", "SMEM", "VMEM", "LDS", "branch", "s_waitcnt", "s_barrier", "s_nop", "s_sleep",
          "s_setprio", "s_endpgm", "other"}
BINS = 2400  # pixel columns of a row drawn binned


def load(path):
    with open(path) as f:
        events = json.load(f)
    return events["traceEvents"] if isinstance(events, dict) else events


def spans(slices, lo, hi):
    """(start, width, name) rectangles of one row in [lo, hi): exact, or binned by dominant name."""
    inside = [(max(s, lo), min(e, hi), n) for s, e, n in slices if e > lo and s < hi]
    if len(inside) <= BINS:
        return [(s, e - s, n) for s, e, n in inside]
    width = (hi - lo) / BINS
    fill = [dict() for _ in range(BINS)]
    for s, e, n in inside:
        b0, b1 = int((s - lo) / width), min(BINS - 1, int((e - lo) / width))
        for b in range(b0, b1 + 1):
            part = min(e, lo + (b + 1) * width) - max(s, lo + b * width)
            if part > 0:
                fill[b][n] = fill[b].get(n, 0) + part
    out = []
    for b, f in enumerate(fill):
        if not f:
            continue
        n = max(f, key=f.get)
        if out and out[-1][2] == n and abs(out[-1][0] + out[-1][1] - (lo + b * width)) < 1e-9:
            out[-1] = (out[-1][0], out[-1][1] + width, n)
        else:
            out.append((lo + b * width, width, n))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--process", type=int, default=0)
    ap.add_argument("--window", default="")
    ap.add_argument("--title", default="")
    a = ap.parse_args()

    events = load(a.trace)
    names, threads, ends = {}, {}, {}
    for e in events:
        pid = e.get("pid")
        if e.get("ph") == "M" and e["name"] == "process_name":
            names[pid] = e["args"]["name"]
        elif e.get("ph") == "M" and e["name"] == "thread_name":
            threads.setdefault(pid, {})[e["tid"]] = e["args"]["name"]
        elif e.get("ph") == "X":
            ends[pid] = max(ends.get(pid, 0), e["ts"] + e["dur"])
    if not ends:
        sys.exit("trace_png: no slices in " + a.trace)
    pid = a.process or max(ends, key=ends.get)
    if pid not in ends:
        sys.exit("trace_png: no dispatch %d in %s (it has %s)" % (pid, a.trace, sorted(ends)))
    lo, hi = 0, ends[pid]
    if a.window:
        lo, hi = (float(x) for x in a.window.split(":"))

    rows = {}      # tid -> [(start, end, name)]
    busy = {}      # "SIMDn" -> [(start, end)]
    opened = {}
    for e in events:
        if e.get("pid") != pid:
            continue
        if e["ph"] == "X":
            rows.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif e["ph"] == "C" and e["name"].endswith("matrix core"):
            simd = e["name"].split()[0]
            if e["args"]["busy"]:
                opened[simd] = e["ts"]
            elif simd in opened:
                busy.setdefault(simd, []).append((opened.pop(simd), e["ts"], "MFMA"))

    # Rows: per SIMD its matrix core band, then its waves (thread names "SIMDs wave w (...)").
    def simd_of(tid):
        return threads.get(pid, {}).get(tid, "SIMD0").split()[0]

    order = []
    for simd in sorted({simd_of(t) for t in rows} | set(busy)):
        order.append(("band", simd, simd + " matrix core"))
        for tid in sorted(t for t in rows if simd_of(t) == simd):
            label = threads.get(pid, {}).get(tid, "wave %d" % tid).split(" (")[0]
            order.append(("wave", tid, label))

    fig, ax = plt.subplots(figsize=(14, 1.6 + 0.28 * len(order)), dpi=100)
    used = set()
    for y, (kind, key, label) in enumerate(order):
        data = busy.get(key, []) if kind == "band" else rows.get(key, [])
        by_name = {}
        for s, w, n in spans(data, lo, hi):
            by_name.setdefault(n, []).append((s, w))
        if kind == "band":
            ax.broken_barh([(lo, hi - lo)], (y - 0.4, 0.8), facecolors="#eeeeee")
        for n, bars in by_name.items():
            colour = "#145214" if kind == "band" else COLOURS.get(n, "#000000")
            ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=colour, linewidth=0)
            if kind == "wave":
                used.add(n)
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels([label for _, _, label in order], fontsize=7)
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("cycle of the replayed round")
    ax.set_title(a.title or names.get(pid, "dispatch %d" % pid), fontsize=9)
    legend, labels = [Patch(color="#145214", label="matrix core busy (band)")], set()
    for n in sorted(used, key=lambda n: (n not in ISSUED, COLOURS.get(n, "") == "#7f7f7f", n)):
        label = ("control: branch, s_waitcnt, s_barrier, ..." if COLOURS.get(n) == "#7f7f7f" else n) + \
            (" (issued)" if n in ISSUED else "")
        if label not in labels:
            labels.add(label)
            legend.append(Patch(color=COLOURS.get(n, "#000000"), label=label))
    fig.legend(handles=legend, fontsize=7, ncol=min(7, len(legend)), loc="lower center", frameon=False)
    fig.tight_layout(rect=(0, 0.09 if len(legend) <= 7 else 0.13, 1, 1))
    fig.savefig(a.png)
    print("trace_png: wrote %s (dispatch %d, cycles %g-%g)" % (a.png, pid, lo, hi))


if __name__ == "__main__":
    main()
