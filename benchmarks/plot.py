#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots the CSVs that benchmarks/bench.sh (make bench) writes.

Usage: python3 benchmarks/plot.py DIR

Reads DIR/latency.csv, rpc.csv, rpc_tput.csv, cq_modes.csv and, when they
are there, ops.csv, first_op.csv, reg.csv, async.csv, and writes a PNG of
the same name next to each; from mr_scale.csv two, mr_scale_memory.png and
mr_scale_regions.png (one per sweep). Columns are found by their header
name. A "-" (or empty) cell
is a number that was not measured and is left out of the figure. A figure
whose CSV is missing or has no numbers is skipped with a note on stderr.

Exit status: 0 if at least one figure was made and no CSV was malformed,
1 otherwise, 2 on bad usage. Needs only matplotlib (Debian's
python3-matplotlib), drawn with the Agg backend.
"""

import csv
import math
import os
import sys

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after selecting the backend)

WHERE = "QEMU/TCG Soft-RoCE, same guest run"

# Series colours, the same in every figure.
LITE = ("lite", "tab:blue")
BUSY = ("native busy", "tab:orange")
EVENT = ("native event", "tab:green")


class Malformed(Exception):
    """A CSV that cannot be read as the table bench.sh writes."""


class Skip(Exception):
    """No figure from this CSV (missing, empty, nothing measured)."""


def prog():
    return os.path.basename(sys.argv[0]) or "plot.py"


def note(msg):
    print(f"{prog()}: {msg}", file=sys.stderr)


def read_csv(path, required):
    """The rows of PATH as dicts; raises Skip if it is missing or has no
    rows, Malformed if a REQUIRED column is missing or a row's length differs
    from the header's."""
    if not os.path.exists(path):
        raise Skip(f"{os.path.basename(path)} missing")
    with open(path, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
    if not rows:
        raise Skip(f"{os.path.basename(path)} empty")
    header = [c.strip() for c in rows[0]]
    missing = [c for c in required if c not in header]
    if missing:
        raise Malformed(f"{path}: no column {', '.join(missing)} in header {','.join(header)}")
    out = []
    for n, r in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise Malformed(f"{path}:{n}: {len(r)} fields, header has {len(header)}")
        row = dict(zip(header, (c.strip() for c in r)))
        row["_line"] = n
        row["_path"] = path
        out.append(row)
    if not out:
        raise Skip(f"{os.path.basename(path)} has no rows")
    return out


def num(row, col):
    """ROW[COL] as a float; NaN for "-" or empty (not measured), and for
    inf, which perftest prints when its clock calibration fails (r^2 < 0.9
    on a loaded emulated CPU): that point is left out, with a note."""
    s = row[col]
    if s in ("", "-"):
        return math.nan
    try:
        x = float(s)
    except ValueError:
        raise Malformed(f"{row['_path']}:{row['_line']}: {col} is not a number: {s!r}") from None
    if math.isinf(x):
        note(f"{row['_path']}:{row['_line']}: {col} is {s!r}: not plotted")
        return math.nan
    return x


def key_num(row, col):
    """ROW[COL], a key column (size, threads), which must be a number."""
    x = num(row, col)
    if math.isnan(x):
        raise Malformed(f"{row['_path']}:{row['_line']}: {col} is missing")
    return x


def ok(x, log=True):
    return not math.isnan(x) and (x > 0 or not log)


def kernel_of(rows):
    ks = sorted({r.get("kernel", "") for r in rows} - {"", "-"})
    return f", guest kernel {ks[0]}" if len(ks) == 1 else ""


def title(ax_or_fig, what, rows=()):
    text = f"{what}\n{WHERE}{kernel_of(rows)}"
    if hasattr(ax_or_fig, "suptitle"):
        ax_or_fig.suptitle(text)
    else:
        ax_or_fig.set_title(text)


def size_label(n):
    n = int(n)
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def line(ax, xs, ys, label, color, style="-", marker="o"):
    """Plots the points of (XS, YS) that can go on a log scale; returns how
    many did."""
    pts = [(x, y) for x, y in zip(xs, ys) if ok(x) and ok(y)]
    if not pts:
        return 0
    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker=marker, color=color, label=label)
    return len(pts)


def size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = sorted(set(sizes))
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(s) for s in ticks], rotation=30, ha="right")
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.grid(True, which="both", alpha=0.3)


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# The three-way comparisons (latency.csv, rpc.csv).
TRIO = (
    ("lite_median_us", LITE),
    ("native_busy_median_us", BUSY),
    ("native_event_median_us", EVENT),
)


def plot_latency(d):
    rows = read_csv(os.path.join(d, "latency.csv"), ["op", "size"] + [c for c, _ in TRIO])
    ops = []
    for r in rows:
        if r["op"] not in ops:
            ops.append(r["op"])
    fig, axes = plt.subplots(1, len(ops), figsize=(6 * len(ops), 4.8), squeeze=False)
    drawn = 0
    for ax, op in zip(axes[0], ops):
        rs = [r for r in rows if r["op"] == op]
        xs = [key_num(r, "size") for r in rs]
        for col, (label, color) in TRIO:
            drawn += line(ax, xs, [num(r, col) for r in rs], label, color)
        size_axis(ax, xs)
        ax.set_xlabel("transfer size (bytes)")
        ax.set_ylabel("median latency (µs)")
        ax.set_title(f"LMR {op}" if op in ("write", "read") else op)
        ax.legend()
    if not drawn:
        plt.close(fig)
        raise Skip("latency.csv has no measured medians")
    title(fig, "LITE_write/LITE_read vs RDMA WRITE/READ, median latency", rows)
    return fig


def plot_rpc(d):
    rows = read_csv(os.path.join(d, "rpc.csv"), ["size"] + [c for c, _ in TRIO])
    fig, ax = plt.subplots(figsize=(7, 4.8))
    xs = [key_num(r, "size") for r in rows]
    drawn = sum(line(ax, xs, [num(r, col) for r in rows], label, color) for col, (label, color) in TRIO)
    if not drawn:
        plt.close(fig)
        raise Skip("rpc.csv has no measured medians")
    size_axis(ax, xs)
    ax.set_xlabel("request size = reply size (bytes)")
    ax.set_ylabel("median round trip (µs)")
    ax.legend()
    title(ax, "RPC round trip, median latency", rows)
    return fig


def plot_rpc_tput(d):
    series = (
        ("lite_calls_per_s", LITE),
        ("native_busy_calls_per_s", BUSY),
        ("native_event_calls_per_s", EVENT),
    )
    rows = read_csv(os.path.join(d, "rpc_tput.csv"), ["threads"] + [c for c, _ in series])
    threads = [key_num(r, "threads") for r in rows]
    vals = [[num(r, col) for r in rows] for col, _ in series]
    if not any(ok(v, log=False) for vs in vals for v in vs):
        raise Skip("rpc_tput.csv has no measured throughput")
    fig, ax = plt.subplots(figsize=(7, 4.8))
    w = 0.8 / len(series)
    for i, ((_, (label, color)), vs) in enumerate(zip(series, vals)):
        pts = [(j + (i - 1) * w, v) for j, v in enumerate(vs) if ok(v, log=False)]
        if pts:
            ax.bar([p[0] for p in pts], [p[1] for p in pts], w, label=label, color=color)
    ax.set_xticks(range(len(threads)))
    ax.set_xticklabels([f"{int(t)}" for t in threads])
    ax.set_xlabel("client threads")
    ax.set_ylabel("throughput (calls/s)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    sizes = sorted({r.get("size", "") for r in rows} - {"", "-"})
    what = f"{sizes[0]}-byte " if len(sizes) == 1 else ""
    title(ax, f"RPC throughput, {what}calls echoed", rows)
    return fig


def plot_cq_modes(d):
    need = ["mode", "op", "size", "lite_median_us", "native_busy_median_us", "native_event_median_us"]
    rows = read_csv(os.path.join(d, "cq_modes.csv"), need)
    modes, groups = [], []
    lite, native = {}, {}
    for r in rows:
        g = (r["op"], int(key_num(r, "size")))
        if r["mode"] not in modes:
            modes.append(r["mode"])
        if g not in groups:
            groups.append(g)
        lite[(r["mode"], g)] = num(r, "lite_median_us")
        best = [x for x in (num(r, "native_busy_median_us"), num(r, "native_event_median_us")) if ok(x)]
        if best:
            native[g] = min(best)
    if not any(ok(v) for v in lite.values()) and not native:
        raise Skip("cq_modes.csv has no measured medians")
    fig, ax = plt.subplots(figsize=(max(7, 1.6 * len(groups) + 3), 5))
    colors = plt.get_cmap("tab10").colors
    w = 0.8 / max(len(modes), 1)
    for i, m in enumerate(modes):
        pts = [(j - 0.4 + (i + 0.5) * w, lite.get((m, g), math.nan)) for j, g in enumerate(groups)]
        pts = [p for p in pts if ok(p[1])]
        if pts:
            ax.bar([p[0] for p in pts], [p[1] for p in pts], w, label=f"lite, --cq {m}", color=colors[i % 10])
    first = True
    for j, g in enumerate(groups):
        if g in native:
            ax.hlines(native[g], j - 0.45, j + 0.45, colors="black", linestyles="--",
                      label="native, better poll mode" if first else None)
            first = False
    ax.set_yscale("log")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{op} {size_label(s)}" for op, s in groups])
    ax.set_xlabel("operation and size")
    ax.set_ylabel("median latency (µs)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize="small")
    title(ax, "lite by completion-delivery mode (litectl up --cq), median latency", rows)
    return fig


def plot_ops(d):
    rows = read_csv(os.path.join(d, "ops.csv"), ["op", "size", "median_us"])
    ops = []
    for r in rows:
        if r["op"] not in ops:
            ops.append(r["op"])
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    colors = plt.get_cmap("tab10").colors
    # One colour per operation: native busy solid, native event dotted,
    # lite (rows "lite-OP") dashed.
    bases = []
    for op in ops:
        base = op.removeprefix("lite-").removesuffix("-event")
        if base not in bases:
            bases.append(base)
    drawn, sizes = 0, []
    for op in ops:
        base = op.removeprefix("lite-").removesuffix("-event")
        style = "--" if op.startswith("lite-") else ":" if op.endswith("-event") else "-"
        rs = [r for r in rows if r["op"] == op]
        xs = [key_num(r, "size") for r in rs]
        sizes += xs
        drawn += line(ax, xs, [num(r, "median_us") for r in rs], op, colors[bases.index(base) % 10], style)
    if not drawn:
        plt.close(fig)
        raise Skip("ops.csv has no measured medians")
    size_axis(ax, sizes)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("median latency (µs)")
    ax.legend(fontsize="small")
    ax.legend(fontsize="x-small", ncol=2)
    title(ax, "median latency per operation: native verbs and lite (dashed)", rows)
    return fig


def plot_first_op(d):
    rows = read_csv(os.path.join(d, "first_op.csv"), ["mode", "median_us"])
    p99 = "p99_us" in rows[0]
    modes = [r["mode"] for r in rows]
    med = [num(r, "median_us") for r in rows]
    tail = [num(r, "p99_us") for r in rows] if p99 else []
    if not any(ok(v, log=False) for v in med + tail):
        raise Skip("first_op.csv has no measured times")
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(modes) + 2), 4.8))
    w = 0.4 if p99 else 0.6
    off = -w / 2 if p99 else 0
    pts = [(j + off, v) for j, v in enumerate(med) if ok(v, log=False)]
    if pts:
        ax.bar([p[0] for p in pts], [p[1] for p in pts], w, label="median", color="tab:blue")
    pts = [(j + w / 2, v) for j, v in enumerate(tail) if ok(v, log=False)]
    if pts:
        ax.bar([p[0] for p in pts], [p[1] for p in pts], w, label="p99", color="tab:gray")
    runs = [r.get("runs", "") for r in rows]
    ax.set_xticks(range(len(modes)))
    ax.set_xticklabels([f"{m}\n({n} runs)" if n not in ("", "-") else m for m, n in zip(modes, runs)])
    ax.set_xlabel("mode")
    ax.set_ylabel("time of the first operation (µs)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    title(ax, "first operation", rows)
    return fig


def plot_reg(d):
    cols = ["size", "native_reg_us", "native_dereg_us", "lite_alloc_us", "lite_free_us"]
    rows = read_csv(os.path.join(d, "reg.csv"), cols)
    xs = [key_num(r, "size") for r in rows]
    native = [num(r, "native_reg_us") + num(r, "native_dereg_us") for r in rows]
    lite = [num(r, "lite_alloc_us") + num(r, "lite_free_us") for r in rows]
    paced = "lite_alloc_paced_us" in rows[0] if rows else False
    fig, ax = plt.subplots(figsize=(7, 4.8))
    drawn = line(ax, xs, lite, "lite: alloc + free, back to back", LITE[1])
    drawn += line(ax, xs, native, "native: ibv_reg_mr + ibv_dereg_mr, back to back", BUSY[1])
    if paced:
        lite_p = [num(r, "lite_alloc_paced_us") + num(r, "lite_free_paced_us") for r in rows]
        native_p = [num(r, "native_reg_paced_us") + num(r, "native_dereg_paced_us") for r in rows]
        drawn += line(ax, xs, lite_p, "lite: alloc + free, 10 ms apart (lease)", LITE[1], "--", "s")
        drawn += line(ax, xs, native_p, "native: reg + dereg, 10 ms apart", BUSY[1], "--", "s")
    if not drawn:
        plt.close(fig)
        raise Skip("reg.csv has no measured times")
    size_axis(ax, xs)
    ax.set_xlabel("region size (bytes)")
    ax.set_ylabel("time (µs)")
    ax.legend()
    title(ax, "memory registration: native reg + dereg vs lite alloc + free", rows)
    return fig


def plot_async(d):
    rows = read_csv(os.path.join(d, "async.csv"), ["op", "qd", "lite_ring_ops_s"])
    ops = []
    for r in rows:
        if r["op"] not in ops:
            ops.append(r["op"])
    fig, axes = plt.subplots(1, len(ops), figsize=(6 * len(ops), 4.8), squeeze=False)
    drawn = 0
    series = (
        ("lite_ring_ops_s", "lite ring (io_uring)", "tab:blue", "-"),
        ("lite_sync_ops_s", "lite sync (ioctl per thread)", "tab:purple", "--"),
        ("native_busy_ops_s", BUSY[0], BUSY[1], "-"),
        ("native_event_ops_s", EVENT[0], EVENT[1], "-"),
    )
    for ax, op in zip(axes[0], ops):
        rs = [r for r in rows if r["op"] == op]
        qds = [key_num(r, "qd") for r in rs]
        for col, label, color, style in series:
            if col in rs[0]:
                drawn += line(ax, qds, [num(r, col) for r in rs], label, color, style)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(set(qds)))
        ax.set_xticklabels([str(int(q)) for q in sorted(set(qds))])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("queue depth (operations in flight)")
        ax.set_ylabel(f"{op}s per second")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        ax.set_title(f"{op}, {rs[0].get('len', '?')} B", fontsize="medium")
    if not drawn:
        plt.close(fig)
        raise Skip("async.csv has no measured throughput")
    title(fig, "throughput by queue depth", rows)
    return fig


def plot_mr_scale(d, sweep):
    """Writes/s against total registered memory (memory sweep) or the number
    of regions (regions sweep): a line per mode and write size."""
    series = (
        ("lite_ops_per_s", LITE),
        ("native_busy_ops_per_s", BUSY),
        ("native_event_ops_per_s", EVENT),
    )
    xcol = "total_bytes" if sweep == "memory" else "regions"
    rows = read_csv(os.path.join(d, "mr_scale.csv"), ["sweep", "len", xcol] + [c for c, _ in series])
    rows = [r for r in rows if r["sweep"] == sweep]
    if not rows:
        raise Skip(f"mr_scale.csv has no {sweep} sweep")
    lens = []
    for r in rows:
        n = int(key_num(r, "len"))
        if n not in lens:
            lens.append(n)
    styles = ("-", "--", ":", "-.")
    markers = ("o", "s", "^", "D")
    fig, ax = plt.subplots(figsize=(7.5, 5))
    drawn, xs_all = 0, []
    for i, n in enumerate(lens):
        rs = [r for r in rows if int(key_num(r, "len")) == n]
        xs = [key_num(r, xcol) for r in rs]
        xs_all += xs
        for col, (label, color) in series:
            drawn += line(ax, xs, [num(r, col) for r in rs], f"{label}, {size_label(n)}", color,
                          styles[i % len(styles)], markers[i % len(markers)])
    if not drawn:
        plt.close(fig)
        raise Skip(f"mr_scale.csv has no measured {sweep} throughput")
    ticks = sorted(set(xs_all))
    if sweep == "memory":
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks)
        ax.set_xticklabels([size_label(t) for t in ticks])
        ax.set_xlabel("registered memory, one region (bytes)")
    else:
        ax.set_xscale("log")
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{int(t):,}" for t in ticks])
        sizes = sorted({r.get("region_bytes", "") for r in rows} - {"", "-"})
        each = f" of {size_label(sizes[0])}" if len(sizes) == 1 else ""
        ax.set_xlabel(f"regions{each} (one MR or LMR each)")
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_yscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:,.0f}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.set_ylabel("random writes per second (queue depth 1)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", ncol=2)
    what = "registered memory" if sweep == "memory" else "number of regions"
    title(ax, f"MR scalability: random remote writes as the {what} grows", rows)
    return fig


FIGURES = (
    ("latency", plot_latency),
    ("rpc", plot_rpc),
    ("rpc_tput", plot_rpc_tput),
    ("cq_modes", plot_cq_modes),
    ("ops", plot_ops),
    ("first_op", plot_first_op),
    ("reg", plot_reg),
    ("mr_scale_memory", lambda d: plot_mr_scale(d, "memory")),
    ("mr_scale_regions", lambda d: plot_mr_scale(d, "regions")),
    ("async", plot_async),
)


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print(f"usage: {prog()} DIR", file=sys.stderr)
        return 2
    d = argv[1]
    if not os.path.isdir(d):
        note(f"{d}: not a directory")
        return 1
    made, bad = [], False
    for name, fn in FIGURES:
        path = os.path.join(d, name + ".png")
        try:
            fig = fn(d)
        except (Skip, Malformed) as e:
            if isinstance(e, Skip):
                note(f"skipping {name}.png: {e}")
            else:
                note(f"{e} (no {name}.png)")
                bad = True
            plt.close("all")
            # No figure from an earlier run left to pass for this one's.
            if os.path.exists(path):
                os.remove(path)
            continue
        save(fig, path)
        made.append(path)
        print(path)
    if not made:
        note(f"no figure made from the CSVs in {d}")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
