#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every table, joined CSV, figure of dsm, mapreduce and sendfile, and
build/bench/summary.json, from the raw CSVs that the benchmark programs
wrote (benchmarks/bench.sh runs them and calls this script after each
section; benchmarks/plot.py draws the other figures from the CSVs made
here).

Usage: python3 benchmarks/report.py DIR SECTION... [NAME=VALUE...]
       python3 benchmarks/report.py perftest-row OP SIZE <OUTPUT
       python3 benchmarks/report.py compare RUN1.json RUN2.json

NAME=VALUE are the run's settings that a section's tables name (kver: the
guest's kernel, dev: the device, iters, warmup, ... as bench.sh has them);
each section needs the ones listed with it below, and no others may be
given. perftest-row turns the output of one of perftest's latency tools
(ib_write_lat, ib_read_lat, ib_atomic_lat) into its row of perftest.csv
(op,size,iters,median_us,p99_us,mean_us; the median is perftest's
t_typical) on stdout; it fails unless there was exactly one result line.
compare prints two runs' summary.json side by side: each key's lite figure
and ratio in both, how far the second run's lite figure and ratio moved
from the first's (the issues ask a second run to confirm within 20%), and
for the keys an issue sets a target on (TARGETS), whether each run meets
it.

Sections, in bench.sh's order. The joins (latency ... async) keep the raw
CSVs' fields as the programs wrote them, "-" for a figure not measured;
each native figure comes from both poll modes, busy and event, and the
ratio is lite's over the better of the two, named in the "native" column:

  latency
        (kver dev iters warmup) DIR/native.csv, native-event.csv
        (native-lat) and lite.csv (lite-lat; its atomics go to ops):
        latency.txt and latency.csv by op and size; then, if lite-lat ran
        them, copy.csv against zcopy.csv (lite-lat --path copy, zcopy)
        in latency.txt and zcopy-threshold.csv.

  rpc   (kver dev iters warmup) DIR/native-rpc.csv, native-rpc-event.csv,
        lite-rpc.csv: rpc.txt, rpc.csv (round trips by size, median and
        p99 ratios).

  rpc_tput
        (kver dev size secs depth) DIR/native-rpc-tput.csv,
        native-rpc-tput-event.csv, lite-rpc-tput.csv,
        lite-rpc-tput-ring.csv: rpc_tput.txt, rpc_tput.csv (calls/s by
        client threads).

  cq_modes
        (kver dev iters warmup modes) DIR/cq-native-{rpc,lat}{,-event}.csv
        and cq-MODE-{rpc,lat}.csv for each of the completion modes in
        "modes": cq-all.csv (mode,op,size,median,p99 of every run),
        cq_modes.txt, cq_modes.csv (each mode against native).

  breakdown
        from DIR/trace-MODE.txt (ftrace events of lite-rpc's 8-byte calls,
        bench.sh rpc_breakdown) and DIR/bd-MODE-rpc.csv: rpc_breakdown.txt
        and rpc_breakdown.csv, one row per mode: the traced round trip,
        system calls, sleeps and wake-up latency, rxe's tasklet time (the
        emulated wire), lite's CQ handling in softirq, and the rest.

  ops   (kver dev iters warmup lite) DIR/native-ops.csv,
        native-ops-event.csv, perftest.csv and lite-lat's CSV, DIR/LITE
        (lite=LITE; lite= for none): ops.txt, ops.csv (native-ops' rows as
        they are, lite's, perftest's and lite's CPU atomics) by operation
        and size.

  first_op
        (kver dev runs) DIR/first-op-native.csv, first-op-lite.csv:
        first_op.txt, first_op.csv.

  reg   (kver dev node) DIR/reg-cost.csv: reg.txt, reg.csv (with the
        ratios of lite's alloc + free over native reg + dereg).

  mr_scale
        (kver dev secs node) DIR/mr-{memory,regions}-{native,native-event,
        lite}.csv (mr-scale): mr_scale.txt, mr_scale.csv.

  async (kver dev len secs) DIR/async-MODE-OP.csv (async-tput; modes
        native, native-event, lite-ring, lite-ring-poll, lite-sync; ops
        write, read): async-all.csv (their rows), async.txt, async.csv.

  sendfile
        from DIR/sendfile-raw.csv (sendfile-bench): sendfile.txt,
        sendfile.csv (MB/s and CPU per MiB by size: native registration
        per request and cached, pread + LITE_write, LITE_sendfile, NFS over
        RDMA), sendfile.png; summary keys sendfile_64k, sendfile_64m,
        sendfile_vs_copy_64k, sendfile_vs_nfsrdma.

  isolation
        from DIR/iso-MODE-rN-{lat,rpc,tput-write,tput-read,reg,reg-nolease,dsm}.csv
        (lite-lat, lite-rpc, async-tput, reg-cost, dsm-lat with the nodes in
        isolation MODE, global and lmr, in round N; the modes take turns):
        isolation.txt and isolation.csv (each figure in both modes, the
        median over the rounds, lmr over global); summary keys iso_write_lat_8,
        iso_read_lat_8, iso_write_lat_4096, iso_read_lat_4096 (median us),
        iso_write_tput_qd32, iso_read_tput_qd32 (4 KiB ops/s on a lite
        ring), iso_rpc_lat_8, iso_rpc_lat_4096 (median round trip),
        iso_alloc_4096, iso_alloc_1m (LITE_alloc + LITE_free back to back
        with leases off: each a request to the memory node),
        iso_alloc_4096_lease, iso_alloc_16m (back to back with leases on;
        16 MiB is above them), iso_alloc_4096_paced (paced, from the lease),
        iso_dsm_read_fault, iso_dsm_write_fault (the kernel DSM's read fault
        of a SHARED page and write fault of a page the home holds, median us):
        "lite" is lmr mode, "native" global mode (native_mode says so).

  dsm   from DIR/dsm-lat.csv (dsm-lat) and DIR/dsm-apps-{kernel,user,local,
        ga}.csv (dsm-apps, dsm-apps-ga): dsm.txt (the three tables), dsm.csv
        (fault latencies), dsm_apps.csv (program run times),
        dsm_seed000.csv (kernel against user-level DSM: fault latency,
        protection change for 64 pages, run times), dsm.png, dsm_apps.png;
        summary keys dsm_read_fault, dsm_write_fault_2, dsm_kernel_vs_user,
        dsm_protect_64, dsm_stencil, dsm_matmul, dsm_irregular.

  mapreduce
        from DIR/mr-lite.csv (lite-mr run --stats), DIR/mr-mpi.csv (mr-mpi,
        no header) and DIR/mr-serial.csv (lite-mr serial --stats):
        mapreduce.txt (job times against MR-MPI and the serial baseline,
        lite's phases, MR-MPI's steps, and the two-guest point from
        DIR/mr-2guest.csv if it is there), mapreduce.csv, mapreduce.png;
        summary keys mr_wordcount_256m, mr_histogram, mr_invindex (lite
        over MR-MPI, three processes each), mr_wordcount_serial (lite on
        three nodes over the single-process baseline), all on 256 MiB
        except the inverted index (64 files, 32 MiB).

  core  from the tables of the sections above (rpc.csv,
        rpc_tput.csv, latency.csv, ops.csv, async.csv, first_op.csv,
        reg.csv), whichever are there: summary keys rpc_lat_8,
        rpc_lat_64, rpc_lat_4096, rpc_lat_65536 (median round trip against
        the better native median), rpc_tput_1, rpc_tput_2, rpc_tput_4
        (64-byte calls/s against the higher native), write_lat_8,
        read_lat_8, write_lat_4096, read_lat_4096, fetch_add_lat and
        cmp_swap_lat (NIC atomics, against native-ops busy),
        fetch_add_lat_ib_atomic_lat (against perftest's ib_atomic_lat),
        fetch_add_cpu_lat (value: the memory node's CPU), async_write_qd1, async_write_qd32, async_read_qd32 (lite's
        io_uring ops/s against the higher native), async_write_qd1_polled,
        async_write_qd32_polled, async_read_qd32_polled (the same on a
        polled ring), first_op, alloc_4096,
        alloc_1g (LMR allocation against native registration),
        alloc_free_4096, alloc_free_1m (LITE_alloc + LITE_free against
        ibv_reg_mr + ibv_dereg_mr, paced 10 ms apart), alloc_free_4096_b2b,
        alloc_free_1m_b2b (the same back to back). Each names
        its native baseline in "native_mode". rpc_tput_ring_1, _2, _4:
        calls/s pipelined on io_uring (value only; "in_flight" per thread).

  failed
        (note tables) bench.sh's note of the runs that failed, appended to
        each of the tables (DIR/NAME.txt for NAME in "tables").

DIR/summary.json maps each headline figure's key to {"lite", "native",
"ratio", "unit"} (lite's figure, the baseline's from the same run, lite
over baseline) or {"value", "unit"}; this script replaces the keys of the
sections it ran and keeps the others. A figure that was not measured is
left out of summary.json (and shows as "-" in the tables).

summary.json is rewritten when a section with summary keys ran (sendfile,
isolation, dsm, mapreduce, core).

Exit status: 0 if every section had all its inputs, 1 otherwise, 2 on bad
usage; the joins (latency ... async) make their tables whatever is missing
(bench.sh counts the programs that failed). Figures need matplotlib
(Debian's python3-matplotlib, Agg backend); the tables do not.
"""

import csv
import glob
import json
import math
import os
import re
import statistics
import sys

WHERE = "QEMU/TCG Soft-RoCE, same guest run"


class Missing(Exception):
    """An input the section needs is not there (its program failed)."""


def note(msg):
    print(f"report.py: {msg}", file=sys.stderr)


def rows_of(path):
    """The rows of a CSV as dicts; Missing if absent or empty."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        raise Missing(f"{os.path.basename(path)} missing or empty")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise Missing(f"{os.path.basename(path)} has no rows")
    return rows


def fmt(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def pair(lite, native, unit):
    """A summary entry, or None if either figure is missing or not a finite
    number (perftest prints inf when its clock calibration fails: no ratio
    can be made of that)."""
    if lite is None or native is None or native == 0 or not math.isfinite(lite) or not math.isfinite(native):
        return None
    return {"lite": round(lite, 4), "native": round(native, 4), "ratio": round(lite / native, 3), "unit": unit}


def num(row, key):
    """A dict row's number in column KEY, None if it was not measured."""
    return None if row is None or row.get(key) in (None, "", "-") else float(row[key])


def save_text(d, name, lines):
    """A table's lines into DIR/NAME.txt, and onto stdout."""
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, name), "w") as f:
        f.write(text)
    print(text, end="")


def pyplot():
    """matplotlib.pyplot on the Agg backend, imported when a figure is made
    (the tables need no matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def finish(fig, ax, labels, ylabel, what, path, rotation=0):
    """Labels, title and legend of a bar chart; saves it to PATH."""
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=rotation)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{what} ({WHERE})", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    print(path)


# ---- the raw CSVs of native and lite runs, joined into tables ---------------
#
# latency ... async join the raw CSVs of the native and lite programs. The
# fields stay text: the tables and joined CSVs show them as the programs
# wrote them, "-" where a program did not measure or failed (its CSV left
# empty by bench.sh). These tables were made by awk (mawk) until issue 17,
# and their numbers are read and compared as there, so that they stay the
# same: a field used as a number is the number it starts with as C's
# strtod reads it (none: 0; hex, inf and nan too); two fields compared are
# compared as numbers if both are numbers (see is_number), else as text; a
# NaN compares equal to anything. Ratios have two places.

NUMBER = re.compile(r"[ \t\n\v\f\r]*([-+]?(?:0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[-+]?[0-9]+)?"
                    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?|inf(?:inity)?|nan(?:\([0-9a-z_]*\))?))",
                    re.IGNORECASE)
BLANKS = re.compile(r"[ \t\n\v\f\r]*")
INT_MAX = 2147483647
FIELDS = 16  # a raw row's fields, at least (the missing ones empty)


def number(text):
    """The number a field starts with; 0.0 if it starts with none."""
    m = NUMBER.match(text)
    if not m:
        return 0.0
    t = m.group(1)
    if "x" in t.lower():
        return float.fromhex(t)
    if "n" in t.lower() and "i" not in t.lower():  # nan, nan(...), with its sign
        return math.copysign(math.nan, -1.0 if t.startswith("-") else 1.0)
    return float(t)


def is_number(text):
    """Whether a field is a number: one that number() reads from all of it
    but blanks, not inf or nan, and not out of a double's range."""
    m = NUMBER.match(text)
    if m is None or BLANKS.fullmatch(text, m.end()) is None:
        return False
    t = m.group(1).lstrip("+-").lower()
    if t[0] in "in":
        return False
    x = abs(number(t))
    digits = t[2:].partition("p")[0] if t.startswith("0x") else t.partition("e")[0]
    return math.isfinite(x) and not (x < sys.float_info.min and re.search("[1-9a-f]", digits))


def whole(text):
    """A field as a C int (a count in a table's heading)."""
    x = number(text)
    if x >= INT_MAX:
        return INT_MAX
    return int(x) if x > -INT_MAX else -INT_MAX


def less(a, b):
    """a < b for two fields: as numbers if both are numbers, else as text."""
    if is_number(a) and is_number(b):
        return number(a) < number(b)
    return a < b


def num_text(x):
    """A computed number as text: an integer if it is whole, else 6
    significant digits."""
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return str(int(x)) if math.isfinite(x) and x == int(x) else f"{x:.6g}"


def fixed2(x):
    """A ratio to 2 places, as C's printf "%.2f" writes it."""
    return num_text(x) if math.isnan(x) else f"{x:.2f}"


def human(n):
    """A byte count (an int, or a field) as 4K, 16M, 1G where it divides
    evenly; otherwise as it is."""
    x = number(n) if isinstance(n, str) else n
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        rest = math.fmod(x, div) if math.isfinite(x) else math.nan
        if not (rest < 0 or rest > 0):  # 0, or NaN
            return num_text(x / div) + unit
    return str(n)


def text_lines(path):
    """The lines of a file, without their newlines; none if it is missing."""
    if not os.path.exists(path):
        note(f"{os.path.basename(path)} missing")
        return []
    with open(path, newline="", errors="surrogateescape") as f:
        lines = f.read().split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def fields(line):
    """A CSV line's fields (no quoting), FIELDS of them at least."""
    f = line.split(",")
    return f + [""] * (FIELDS - len(f))


def raw_rows(d, name):
    """The rows of a program's raw CSV DIR/NAME, header skipped, as lists of
    text fields; none if it is missing or empty."""
    return [fields(line) for line in text_lines(os.path.join(d, name))[1:]]


def write_lines(d, name, lines):
    """Lines into DIR/NAME (a joined CSV)."""
    with open(os.path.join(d, name), "w", errors="surrogateescape") as f:
        f.write("".join(line + "\n" for line in lines))


def less_event(op):
    """An operation's name without native programs' -event suffix."""
    return op[: -len("-event")] if op.endswith("-event") else op


def cell(rows, k, col):
    """rows[k]'s field COL, "-" if there is no row K."""
    return rows[k][col] if k in rows else "-"


def better(busy, event, k, col, lower):
    """The native mode with the better figure in field COL at K, "busy" or
    "event": the lower if LOWER, else the higher; busy on a tie; "-" unless
    both were measured."""
    if k not in busy or k not in event:
        return "-"
    e, b = number(event[k][col]), number(busy[k][col])
    return "event" if (e < b if lower else e > b) else "busy"


def ratio_cell(lite, lk, busy, event, nk, col, mode):
    """lite[lk]'s field COL over native's at NK in MODE, to 2 places; "-" if
    a figure is missing or the divisor is not above 0."""
    if mode == "-" or lk not in lite:
        return "-"
    row = (busy if mode == "busy" else event).get(nk)
    den = number(row[col]) if row else 0.0
    return fixed2(number(lite[lk][col]) / den) if den > 0 else "-"


def quotient(a, b):
    """Two fields' quotient to 2 places, "-" if the divisor is not above 0."""
    return fixed2(number(a) / number(b)) if number(b) > 0 else "-"


def join_native(d, sources, key):
    """{source: {key: row}} of raw CSVs (source, file name) and the keys in
    the order they first appear; KEY(source, row) is a row's key (op without
    -event, size...), None to leave the row out. A later row of the same key
    replaces the earlier."""
    runs, order = {}, {}
    for src, name in sources:
        rows = runs.setdefault(src, {})
        for r in raw_rows(d, name):
            k = key(src, r)
            if k is not None:
                order.setdefault(k)
                rows[k] = r
    return runs, list(order)


MED, P99, MEAN = 3, 4, 5  # the latency programs' median_us, p99_us, mean_us


def section_latency(d, summary, p):
    """native-lat (busy, event) and lite-lat by op and size; then copy
    against zero copy if lite-lat ran both (copy.csv is there)."""
    def key(src, r):
        if src == "lite" and re.fullmatch(r"(cpu-)?(fetch-add|cmp-swap)|floor-.*", r[0]):
            return None  # in the ops table; the floor below the table
        return f"{less_event(r[0])},{r[1]}"

    runs, order = join_native(d, (("busy", "native.csv"), ("event", "native-event.csv"), ("lite", "lite.csv")), key)
    b, e, lt = runs["busy"], runs["event"], runs["lite"]
    row = "%-6s %6s %9s %9s %9s %9s %9s %9s %6s %6s"
    lines = ["lite latency, guest kernel %s, %s on QEMU/TCG: %d iterations per point (after %d warm-up)"
             % (p["kver"], p["dev"], whole(p["iters"]), whole(p["warmup"])),
             "times in us; native busy: busy-polled CQ, native event: completion channel",
             row % ("op", "size", "busy med", "busy p99", "event med", "event p99", "lite med", "lite p99", "ratio",
                    "native")]
    out = ["op,size,native_busy_median_us,native_busy_p99_us,native_event_median_us,native_event_p99_us,"
           "lite_median_us,lite_p99_us,ratio,native_mode,iters,kernel"]
    for k in order:
        m = better(b, e, k, MED, True)
        r = ratio_cell(lt, k, b, e, k, MED, m)
        cells = [cell(rows, k, c) for rows in (b, e, lt) for c in (MED, P99)]
        lines.append(row % (*k.split(","), *cells, r, m))
        out.append(",".join([k, *cells, r, m, p["iters"], p["kver"]]))
    lines.append("ratio = lite median / the lower native median, from the native mode named;")
    lines.append("absolute times under TCG emulation mean little")
    floor = {r[0]: r for r in raw_rows(d, "lite.csv") if r[0].startswith("floor-")}
    if floor:
        lines.append("lite's floor (median us): the system call alone (an ioctl /dev/lite does not know) %s,"
                     % cell(floor, "floor-ioctl", MED))
        lines.append("LITE_write of 0 bytes (system call, argument copy-in, handle and bounds checks, no RDMA) %s"
                     % cell(floor, "floor-write", MED))
    write_lines(d, "latency.csv", out)
    if os.path.exists(os.path.join(d, "copy.csv")):
        lines += zcopy_table(d)
    save_text(d, "latency.txt", lines)
    return True


def zcopy_table(d):
    """Where zero copy starts to pay: lite-lat --path copy against --path
    zcopy with pin_cache_kb 0 (median us) by op and size, and beside them
    the default path with the buffer's pages kept pinned (kept.csv);
    zcopy-threshold.csv."""
    runs = {"copy.csv": {}, "zcopy.csv": {}, "kept.csv": {}}
    order = []
    for name, med in runs.items():
        for r in raw_rows(d, name):
            if r[0] in ("fetch-add", "cmp-swap", "cpu-fetch-add", "cpu-cmp-swap") or r[0].startswith("floor-"):
                continue  # no copy in atomics, nor in the floor
            k = f"{r[0]},{r[1]}"
            if name == "copy.csv":
                order.append(k)
            med[k] = r[MED]
    copy, zcopy, kept = runs["copy.csv"], runs["zcopy.csv"], runs["kept.csv"]
    row = "%-6s %8s %10s %10s %10s %8s"
    lines = ["", "copy path vs zero copy, pinned per call (pin_cache_kb 0) or kept pinned (lite, median us)",
             row % ("op", "size", "copy", "zcopy", "kept", "faster")]
    out = ["op,size,copy_median_us,zcopy_median_us,kept_median_us"]
    for k in order:
        z, kp = zcopy.get(k, "-"), kept.get(k, "-")
        faster = ("zcopy" if less(zcopy[k], copy[k]) else "copy") if k in zcopy else "-"
        lines.append(row % (*k.split(","), copy[k], z, kp, faster))
        out.append(f"{k},{copy[k]},{z},{kp}")
    lines.append("faster: of copy and zcopy, the two paths zcopy_min_kb chooses between for buffers not kept")
    write_lines(d, "zcopy-threshold.csv", out)
    return lines


def section_rpc(d, summary, p):
    """native-rpc (busy, event) and lite-rpc round trips by size."""
    runs, order = join_native(d, (("busy", "native-rpc.csv"), ("event", "native-rpc-event.csv"),
                                  ("lite", "lite-rpc.csv")), lambda _, r: r[1])
    b, e, lt = runs["busy"], runs["event"], runs["lite"]
    row = "%8s %9s %9s %9s %9s %9s %9s %6s %9s %6s"
    lines = ["", "RPC latency (request of SIZE bytes, the same echoed back), guest kernel %s, %s on QEMU/TCG:"
             % (p["kver"], p["dev"]),
             "%d calls per size (after %d warm-up); times in us, native busy and event as above"
             % (whole(p["iters"]), whole(p["warmup"])),
             row % ("size", "busy med", "busy p99", "event med", "event p99", "lite med", "lite p99", "ratio",
                    "p99 ratio", "native")]
    out = ["size,native_busy_median_us,native_busy_p99_us,native_busy_mean_us,native_event_median_us,"
           "native_event_p99_us,native_event_mean_us,lite_median_us,lite_p99_us,lite_mean_us,ratio,p99_ratio,"
           "native_mode,iters,kernel"]
    for k in order:
        m = better(b, e, k, MED, True)
        r, r99 = (ratio_cell(lt, k, b, e, k, c, m) for c in (MED, P99))
        lines.append(row % (k, cell(b, k, MED), cell(b, k, P99), cell(e, k, MED), cell(e, k, P99),
                            cell(lt, k, MED), cell(lt, k, P99), r, r99, m))
        out.append(",".join([k] + [cell(rows, k, c) for rows in (b, e, lt) for c in (MED, P99, MEAN)] +
                            [r, r99, m, p["iters"], p["kver"]]))
    lines.append("ratio = lite median / the lower native median, p99 ratio = lite p99 / native p99,")
    lines.append("both against the native mode named (the one with the lower median)")
    write_lines(d, "rpc.csv", out)
    save_text(d, "rpc.txt", lines)
    return True


def section_rpc_tput(d, summary, p):
    """native-rpc --mode tput (busy, event), lite-rpc and lite-rpc-ring
    calls per second by client threads."""
    calls, secs, rate = 2, 3, 4  # threads,size,calls,seconds,calls_per_s
    runs, order = join_native(d, (("busy", "native-rpc-tput.csv"), ("event", "native-rpc-tput-event.csv"),
                                  ("lite", "lite-rpc-tput.csv"), ("ring", "lite-rpc-tput-ring.csv")),
                              lambda _, r: r[0])
    b, e, lt, ring = runs["busy"], runs["event"], runs["lite"], runs["ring"]
    depth = whole(p["depth"])
    row = "%8s %15s %15s %15s %6s %6s %15s"
    lines = ["", "RPC throughput (%d-byte calls echoed, about %d s per point), guest kernel %s, %s on QEMU/TCG;"
             % (whole(p["size"]), whole(p["secs"]), p["kver"], p["dev"]),
             "native: one connection and one server thread per client thread, every thread busy-polling",
             "(busy) or sleeping on a completion channel (event); lite: as many server threads",
             "(LITE_rpc_reply_recv) as the most client threads, one call in flight per thread; lite ring:",
             "%d calls in flight per client thread on io_uring, server with %d receives on io_uring" % (depth, depth),
             row % ("threads", "busy calls/s", "event calls/s", "lite calls/s", "ratio", "native", "lite ring")]
    out = ["threads,size,native_busy_calls,native_busy_seconds,native_busy_calls_per_s,native_event_calls,"
           "native_event_seconds,native_event_calls_per_s,lite_calls,lite_seconds,lite_calls_per_s,ratio,"
           "native_mode,kernel,lite_ring_calls_per_s,ring_depth"]
    for k in order:
        m = better(b, e, k, rate, False)
        r = ratio_cell(lt, k, b, e, k, rate, m)
        lines.append(row % (k, cell(b, k, rate), cell(e, k, rate), cell(lt, k, rate), r, m, cell(ring, k, rate)))
        out.append(",".join([k, p["size"]] + [cell(rows, k, c) for rows in (b, e, lt) for c in (calls, secs, rate)]
                            + [r, m, p["kver"], cell(ring, k, rate), p["depth"]]))
    lines.append("ratio = lite calls/s / the higher native calls/s, from the native mode named (lite ring: pipelined,")
    lines.append("not comparable with the one-in-flight native runs; no ratio)")
    write_lines(d, "rpc_tput.csv", out)
    save_text(d, "rpc_tput.txt", lines)
    return True


def section_cq_modes(d, summary, p):
    """lite-rpc and lite-lat in each completion mode (cq-MODE-{rpc,lat}.csv)
    against native-rpc and native-lat (cq-native-*.csv), all gathered in
    cq-all.csv (mode,op,size,median,p99)."""
    modes = p["modes"].split()
    runs = [("native-busy", ("cq-native-rpc.csv", "cq-native-lat.csv")),
            ("native-event", ("cq-native-rpc-event.csv", "cq-native-lat-event.csv"))]
    runs += [(mode, (f"cq-{mode}-rpc.csv", f"cq-{mode}-lat.csv")) for mode in modes]
    gathered = [",".join((mode, r[0], r[1], r[MED], r[P99])) for mode, names in runs for name in names
                for r in raw_rows(d, name)]
    write_lines(d, "cq-all.csv", gathered)
    b, e, lt, order = {}, {}, {}, {}
    med, p99 = 3, 4
    for r in map(fields, gathered):
        if r[0].startswith("native-"):
            k = f"{less_event(r[1])},{r[2]}"
            order.setdefault(k)
            (b if r[0] == "native-busy" else e)[k] = r
        else:
            lt[f"{r[0]},{r[1]},{r[2]}"] = r
    row = "%-10s %-6s %6s %9s %9s %9s %9s %9s %9s %6s %9s %6s"
    lines = ["", "lite by completion-delivery mode (litectl up --cq MODE), guest kernel %s, %s on QEMU/TCG:"
             % (p["kver"], p["dev"]),
             "%d calls per point (after %d warm-up); times in us; native measured once in each poll"
             % (whole(p["iters"]), whole(p["warmup"])),
             "mode (busy, event), the same for every lite mode",
             row % ("mode", "op", "size", "busy med", "busy p99", "event med", "event p99", "lite med", "lite p99",
                    "ratio", "p99 ratio", "native")]
    out = ["mode,op,size,native_busy_median_us,native_busy_p99_us,native_event_median_us,native_event_p99_us,"
           "lite_median_us,lite_p99_us,ratio,p99_ratio,native_mode,iters,kernel"]
    for mode in modes:
        for nk in order:
            lk = f"{mode},{nk}"
            m = better(b, e, nk, med, True)
            r, r99 = (ratio_cell(lt, lk, b, e, nk, c, m) for c in (med, p99))
            cells = [cell(rows, nk, c) for rows in (b, e) for c in (med, p99)] + \
                [cell(lt, lk, med), cell(lt, lk, p99)]
            lines.append(row % (mode, *nk.split(","), *cells, r, r99, m))
            out.append(",".join([lk, *cells, r, r99, m, p["iters"], p["kver"]]))
    lines.append("ratio = lite median / the lower native median, p99 ratio = lite p99 / native p99, both")
    lines.append("against the native mode named (rpc: native-rpc; write, read: native-lat)")
    write_lines(d, "cq_modes.csv", out)
    save_text(d, "cq_modes.txt", lines)
    return True


def section_ops(d, summary, p):
    """native-ops (busy, event) by operation and size, with perftest's
    (perftest.csv) and lite-lat's (p["lite"], the latency section's CSV;
    empty: none) beside them. ops.csv has native-ops' rows as they are
    (busy, then lite's, then event with their -event ops, then perftest's
    in perftest.csv's order, then lite's CPU atomics)."""
    runs, order = join_native(d, (("busy", "native-ops.csv"), ("event", "native-ops-event.csv")),
                              lambda _, r: f"{less_event(r[0])},{r[1]}")
    b, e = runs["busy"], runs["event"]
    measured = {less_event(r[0]) for rows in (b, e) for r in rows.values()}
    lt = {f"{r[0]},{r[1]}": r for r in raw_rows(d, p["lite"])} if p["lite"] else {}
    perf = {f"{r[0]},{r[1]}": r for r in raw_rows(d, "perftest.csv")}
    row = "%-10s %6s %9s %9s %9s %9s %9s %9s %9s %9s %6s %6s"
    lines = ["", "latency by operation: native verbs (the transport's ceiling) and lite where it has the",
             "operation (lite-lat: LITE_write, LITE_read, LITE_fetch_add, LITE_cmp_swap; send and",
             "write-imm have no one-sided lite counterpart, RPC is in the rpc table),",
             "guest kernel %s, %s on QEMU/TCG: %d iterations per point (after %d warm-up);"
             % (p["kver"], p["dev"], whole(p["iters"]), whole(p["warmup"])),
             "times in us at the sender's completion; busy: busy-polled CQ, event: completion channel;",
             "perftest: ib_write_lat, ib_read_lat, ib_atomic_lat (t_typical); lite's atomics on an LMR of",
             "LITE_LMR_NIC_ATOMIC (one-sided), lite cpu: on any other LMR (the memory node's CPU)",
             row % ("op", "size", "busy med", "busy p99", "busy mean", "event med", "event p99", "event mean",
                    "perftest", "lite med", "ratio", "native")]
    out = ["op,size,iters,median_us,p99_us,mean_us,kernel"]
    for k in order:
        m = better(b, e, k, MED, True)
        r = ratio_cell(lt, k, b, e, k, MED, m)
        lines.append(row % (*k.split(","), *(cell(rows, k, c) for rows in (b, e) for c in (MED, P99, MEAN)),
                            cell(perf, k, MED), cell(lt, k, MED), r, m if k in lt else "-"))
    its, kver = p["iters"], p["kver"]
    out += [f"{k},{its},{b[k][MED]},{b[k][P99]},{b[k][MEAN]},{kver}" for k in order if k in b]
    out += ["lite-{},{},,{},,,{}".format(*k.split(","), lt[k][MED], kver) for k in order if k in lt]
    out += ["{}-event,{},{},{},{},{},{}".format(*k.split(","), its, e[k][MED], e[k][P99], e[k][MEAN], kver)
            for k in order if k in e]
    out += ["perftest-{},{},{},{},{},{},{}".format(*k.split(","), its, r[MED], r[P99], r[MEAN], kver)
            for k, r in perf.items()]
    for op in ("fetch-add", "cmp-swap"):
        k = f"cpu-{op},8"
        if k in lt:
            out.append(f"lite-{k},,{lt[k][MED]},,,{kver}")
            lines.append(f"lite cpu {op} 8 B: {lt[k][MED]} us, "
                         f"{ratio_cell(lt, k, b, e, f'{op},8', MED, 'busy')} against native busy")
    lines += [f"{op}: not measured (failed or not supported; see the log)"
              for op in ("send", "write", "write-imm", "read", "fetch-add", "cmp-swap") if op not in measured]
    write_lines(d, "ops.csv", out)
    save_text(d, "ops.txt", lines)
    return True


def perftest_row(op, size):
    """One perftest latency tool's output (stdin) as perftest.csv's row
    (stdout): op,size,iters,median_us (t_typical),p99_us,mean_us. True if
    there was exactly one result line."""
    n = 0
    for line in sys.stdin.buffer.read().decode(errors="surrogateescape").split("\n"):
        f = re.split(r"[ \t]+", line.strip(" \t"))
        if len(f) >= 8 and not less(f[0], size) and not less(size, f[0]) and re.fullmatch(r"[0-9]+", f[1]):
            print(f"{op},{size},{f[1]},{f[4]},{f[7]},{f[5]}")
            n += 1
    return n == 1


def section_first_op(d, summary, p):
    """first-op's one-row CSVs (mode,runs,median_us,p99_us,min_us), native
    and lite; first_op.csv has both rows, the lite one with the ratio."""
    by = {r[0]: r for name in ("first-op-native.csv", "first-op-lite.csv") for r in raw_rows(d, name)}
    med, p99, low = 2, 3, 4

    def cells(mode):
        return [cell(by, mode, c) for c in (med, p99, low)]

    r = quotient(by["lite"][med], by["native"][med]) if "lite" in by and "native" in by else "-"
    row = "%-8s %10s %10s %10s"
    lines = ["", "time to first operation: fork + exec of a fresh process to its first completed 8-byte",
             "remote write, guest kernel %s, %s on QEMU/TCG, %d runs each; times in us"
             % (p["kver"], p["dev"], whole(p["runs"])),
             "native: rdma_cm id, resolve, PD, CQ, QP, 4 KiB MR, connect (to a listener thread), RDMA WRITE",
             "lite: LITE_open, LITE_alloc of 4 KiB on the other node, LITE_write",
             row % ("mode", "median", "p99", "min"), row % ("native", *cells("native")),
             row % ("lite", *cells("lite")), f"ratio (lite median / native median): {r}"]
    out = ["mode,runs,median_us,p99_us,min_us,ratio,kernel",
           ",".join(["native", p["runs"], *cells("native"), "-", p["kver"]]),
           ",".join(["lite", p["runs"], *cells("lite"), r, p["kver"]])]
    write_lines(d, "first_op.csv", out)
    save_text(d, "first_op.txt", lines)
    return True


def section_reg(d, summary, p):
    """reg-cost's CSV (size; reg, dereg, alloc, free back to back; the same
    paced; "-" for a side skipped on ENOMEM or not paced) with the ratios."""
    def cost_ratio(reg, dereg, alloc, free):
        if "-" in (reg, dereg, alloc, free) or not number(reg) + number(dereg) > 0:
            return "-"
        return fixed2((number(alloc) + number(free)) / (number(reg) + number(dereg)))

    row = "%6s %9s %9s %10s %10s %6s | %9s %9s %10s %10s %6s"
    lines = ["", "making memory usable, guest kernel %s, %s on QEMU/TCG; median us per call" % (p["kver"], p["dev"]),
             "native: ibv_reg_mr / ibv_dereg_mr of a touched buffer; lite: LITE_alloc / LITE_free on node "
             + p["node"],
             "back to back, and paced (10 ms of computing before each call; sizes up to 1M, which lite serves "
             "from its lease)",
             row % ("size", "reg", "dereg", "lite alloc", "lite free", "ratio", "reg", "dereg", "lite alloc",
                    "lite free", "ratio")]
    out = ["size,native_reg_us,native_dereg_us,lite_alloc_us,lite_free_us,ratio,native_reg_paced_us,"
           "native_dereg_paced_us,lite_alloc_paced_us,lite_free_paced_us,ratio_paced,kernel"]
    for f in raw_rows(d, "reg-cost.csv"):
        r, rp = cost_ratio(*f[1:5]), cost_ratio(*f[5:9])
        lines.append(row % (human(f[0]), *f[1:5], r, *f[5:9], rp))
        out.append(",".join([*f[0:5], r, *f[5:9], rp, p["kver"]]))
    lines.append('ratio = (lite alloc + free) / (native reg + dereg); "-": not measured (ENOMEM skips are')
    lines.append("in the log) or not paced; lite also allocates and zeroes the memory, native only registers it;")
    lines.append("back to back, the lease runs dry after its depth and lite asks the memory node")
    write_lines(d, "reg.csv", out)
    save_text(d, "reg.txt", lines)
    return True


def section_mr_scale(d, summary, p):
    """mr-scale's CSVs (sweep,mode,poll,qd,regions,region_bytes,total_bytes,
    len,ops,seconds,ops_per_s,setup_s,teardown_s), native busy and event and
    lite, both sweeps, joined on sweep, regions, region size and write size;
    a point not measured ("-") shows as "-"."""
    ops, secs, rate, setup, down = 8, 9, 10, 11, 12
    runs, order, first = {"busy": {}, "event": {}, "lite": {}}, {}, {}
    for sweep in ("memory", "regions"):
        for src, name in (("busy", "native"), ("event", "native-event"), ("lite", "lite")):
            for r in raw_rows(d, f"mr-{sweep}-{name}.csv"):
                k = ",".join((r[0], r[4], r[5], r[7]))
                order.setdefault(k)
                first.setdefault(k, r)  # total_bytes and qd from the first row of K
                if r[rate] != "-":
                    runs[src][k] = r
    b, e, lt = runs["busy"], runs["event"], runs["lite"]

    def lower_setup(k):
        """The lower of the native runs' setup times, or the one there is."""
        if k in b and k in e:
            return e[k][setup] if number(e[k][setup]) < number(b[k][setup]) else b[k][setup]
        return b[k][setup] if k in b else cell(e, k, setup)

    row = "%-7s %7s %6s %6s %5s %10s %10s %10s %6s %6s %9s %9s"
    lines = ["", "MR scalability, guest kernel %s, %s on QEMU/TCG: random remote writes, one at a time"
             % (p["kver"], p["dev"]),
             "(queue depth 1), about %d s per point, each to a random region at a random offset; native:"
             % whole(p["secs"]),
             "one MR per region (ibv_reg_mr), RDMA WRITE, busy-polled or event-driven; lite: one LMR per",
             "region on node %s, LITE_write. Setup in s: mmap + ibv_reg_mr of every region (native: the" % p["node"],
             "faster of the busy and event runs, which set up the same) or LITE_alloc of every region (lite)",
             row % ("sweep", "regions", "region", "total", "len", "busy w/s", "event w/s", "lite w/s", "ratio",
                    "native", "nat setup", "lite setup")]
    out = ["sweep,regions,region_bytes,total_bytes,len,qd,native_busy_ops_per_s,native_event_ops_per_s,"
           "lite_ops_per_s,ratio,native_mode,native_busy_ops,native_busy_seconds,native_event_ops,"
           "native_event_seconds,lite_ops,lite_seconds,native_busy_setup_s,native_event_setup_s,lite_setup_s,"
           "native_busy_teardown_s,native_event_teardown_s,lite_teardown_s,kernel"]
    for k in order:
        sweep, regions, region, length = k.split(",")
        total, qd = first[k][6], first[k][3]
        m = better(b, e, k, rate, False)
        r = ratio_cell(lt, k, b, e, k, rate, m)
        rates = [cell(rows, k, rate) for rows in (b, e, lt)]
        lines.append(row % (sweep, regions, human(region), human(total), length, *rates, r, m, lower_setup(k),
                            cell(lt, k, setup)))
        out.append(",".join([sweep, regions, region, total, length, qd, *rates, r, m] +
                            [cell(rows, k, c) for rows in (b, e, lt) for c in (ops, secs)] +
                            [cell(rows, k, c) for c in (setup, down) for rows in (b, e, lt)] + [p["kver"]]))
    lines.append("ratio = lite writes/s / the higher native writes/s, from the native mode named;")
    lines.append('"-": not measured (ENOMEM skips and failures are in the log)')
    write_lines(d, "mr_scale.csv", out)
    save_text(d, "mr_scale.txt", lines)
    return True


ASYNC_MODES = ("native", "native-event", "lite-ring", "lite-ring-poll", "lite-sync")


def section_async(d, summary, p):
    """async-tput's rows (mode,op,qd,len,ops,seconds,ops_per_s) of every
    mode and op (async-MODE-OP.csv), gathered in async-all.csv, joined on op
    and queue depth."""
    gathered = ""
    for op in ("write", "read"):
        for mode in ASYNC_MODES:
            path = os.path.join(d, f"async-{mode}-{op}.csv")
            if os.path.exists(path):
                with open(path, newline="", errors="surrogateescape") as f:
                    gathered += f.read().partition("\n")[2]
    with open(os.path.join(d, "async-all.csv"), "w", errors="surrogateescape") as f:
        f.write(gathered)
    runs, order = {}, {}
    rate = 6
    for r in map(fields, text_lines(os.path.join(d, "async-all.csv"))):
        k = f"{r[1]},{r[2]}"
        order.setdefault(k)
        runs.setdefault(r[0], {})[k] = r
    b, e, lt, sy, pl = (runs.get(m, {}) for m in ("native_busy", "native_event", "lite_ring", "lite_sync",
                                                  "lite_ring_poll"))
    row = "%-6s %4s %11s %11s %11s %11s %7s %6s %9s %11s %7s"
    lines = ["", "asynchronous throughput by queue depth (operations in flight), %d-byte operations,"
             % whole(p["len"]),
             "guest kernel %s, %s on QEMU/TCG, %d s per point; operations per second"
             % (p["kver"], p["dev"], whole(p["secs"])),
             "lite ring: lite::Ring (io_uring URING_CMD); polled: the same ring with IORING_SETUP_IOPOLL;",
             "lite sync: QD threads, one ioctl each;",
             "native: QD work requests outstanding on one RC QP (busy-polled or completion channel)",
             row % ("op", "qd", "busy", "event", "lite ring", "lite sync", "ratio", "native", "ring/sync", "polled",
                    "ratio")]
    out = ["op,qd,len,native_busy_ops_s,native_event_ops_s,lite_ring_ops_s,lite_sync_ops_s,ratio,native_mode,"
           "ring_over_sync,kernel,lite_ring_poll_ops_s,poll_ratio"]
    for k in order:
        m = better(b, e, k, rate, False)
        r = ratio_cell(lt, k, b, e, k, rate, m)
        rs = quotient(lt[k][rate], sy[k][rate]) if k in lt and k in sy else "-"
        rp = ratio_cell(pl, k, b, e, k, rate, m)
        cells = [cell(rows, k, rate) for rows in (b, e, lt, sy)]
        lines.append(row % (*k.split(","), *cells, r, m, rs, cell(pl, k, rate), rp))
        out.append(",".join([k, p["len"], *cells, r, m, rs, p["kver"], cell(pl, k, rate), rp]))
    lines.append("ratio = lite ring (polled) / the higher native throughput, from the native mode named")
    write_lines(d, "async.csv", out)
    save_text(d, "async.txt", lines)
    return True


# ---- dsm ------------------------------------------------------------------

FAULTS = [
    ("read_fault", "read fault (page SHARED elsewhere: one RDMA READ)"),
    ("read_fault_dirty", "read fault (page dirty at the home: downgrade first)"),
    ("write_fault_0", "write fault, no copy to invalidate (zero page)"),
    ("write_fault_1", "write fault, 1 copy to invalidate"),
    ("write_fault_2", "write fault, 2 copies to invalidate"),
]
PROGRAMS = [("stencil", "dsm_stencil"), ("matmul", "dsm_matmul"), ("pagerank", "dsm_irregular")]
BACKENDS = ["kernel", "user", "ga", "local"]


def dsm_faults(d):
    lat = {r["name"]: float(r["median_us"]) for r in rows_of(os.path.join(d, "dsm-lat.csv"))}
    raw = lat.get("raw_read")
    table = []
    for name, what in FAULTS:
        k, u = lat.get(name), lat.get("user_" + name)
        table.append((name, what, k, u, raw, ratio(k, raw), ratio(u, raw), ratio(k, u)))
    return raw, table, (lat.get("protect_64"), lat.get("user_protect_64"))


def seed000_table(d, faults, protect, apps, summary):
    """Seed 000's comparison: the kernel DSM against the user-level one."""
    by = {row[0]: row for row in faults}
    rows = []
    if "read_fault" in by:
        rows.append(("read fault latency (us)", by["read_fault"][2], by["read_fault"][3], 1))
    rows.append(("protection change, 64 pages (us)", protect[0], protect[1], 1))
    for p, _ in PROGRAMS:
        k, u = (apps[p].get(b) for b in ("kernel", "user"))
        rows.append((f"{p} run time (s)", k[0] if k else None, u[0] if u else None, 3))
    lines = ["", f"Seed 000's comparison, {WHERE}: lite's kernel DSM against the user-level baseline (udsm)",
             f"{'measure':<34} {'kernel':>10} {'user':>10} {'kern/user':>9}"]
    csv_rows = [["measure", "kernel", "user", "kernel_over_user"]]
    for what, k, u, digits in rows:
        lines.append(f"{what:<34} {fmt(k, digits):>10} {fmt(u, digits):>10} {fmt(ratio(k, u), 2):>9}")
        csv_rows.append([what, fmt(k, 4), fmt(u, 4), fmt(ratio(k, u), 3)])
    lines.append("protection change: the time the faulting node spent changing its page tables while the home")
    lines.append("took 64 of its read copies (kernel: unmap_mapping_range per page; udsm: madvise system calls)")
    with open(os.path.join(d, "dsm_seed000.csv"), "w", newline="") as f:
        csv.writer(f).writerows(csv_rows)
    summary["dsm_protect_64"] = pair(protect[0], protect[1], "us")
    return lines


def dsm_apps(d):
    """{program: {backend: (median seconds, runs, all results matched, shape)}}."""
    out = {p: {} for p, _ in PROGRAMS}
    missing = []
    for b in BACKENDS:
        try:
            rows = rows_of(os.path.join(d, f"dsm-apps-{b}.csv"))
        except Missing as e:
            missing.append(str(e))
            continue
        for p, _ in PROGRAMS:
            mine = [r for r in rows if r["app"] == p]
            if not mine:
                continue
            secs = statistics.median(float(r["seconds"]) for r in mine)
            match = all(r["match"] == "yes" for r in mine)
            shape = f"{mine[0]['nodes']}x{mine[0]['threads']}"
            out[p][b] = (secs if match else None, len(mine), match, shape)
    return out, missing


def section_dsm(d, summary, p):
    ok = True
    lines = []
    try:
        raw, faults, protect = dsm_faults(d)
    except Missing as e:
        note(f"dsm: {e}")
        raw, faults, protect, ok = None, [], (None, None), False
    lines.append(f"DSM page-fault latency, {WHERE}; median microseconds of one 8-byte access to a page")
    lines.append("the faulting node never touched (dsm-lat); raw read = one 4 KiB LITE_read between the same")
    lines.append("nodes; kernel = lite's DSM (faults served in the kernel), user = udsm (userfaultfd + liblite)")
    hdr = f"{'fault':<18} {'kernel':>8} {'user':>8} {'raw read':>9} {'kern/raw':>9} {'user/raw':>9} {'kern/user':>9}"
    lines.append(hdr)
    csv_rows = [["fault", "kernel_us", "user_us", "raw_read_us", "kernel_over_raw", "user_over_raw",
                 "kernel_over_user", "what"]]
    for name, what, k, u, r, kr, ur, ku in faults:
        lines.append(f"{name:<18} {fmt(k):>8} {fmt(u):>8} {fmt(r):>9} {fmt(kr, 2):>9} {fmt(ur, 2):>9} "
                     f"{fmt(ku, 2):>9}")
        csv_rows.append([name, fmt(k), fmt(u), fmt(r), fmt(kr, 3), fmt(ur, 3), fmt(ku, 3), what])
    for name, what in FAULTS:
        lines.append(f"  {name}: {what}")
    with open(os.path.join(d, "dsm.csv"), "w", newline="") as f:
        csv.writer(f).writerows(csv_rows)

    apps, missing = dsm_apps(d)
    for m in missing:
        note(f"dsm: {m}")
        ok = False
    lines.append("")
    lines.append(f"DSM programs, {WHERE}; median seconds of the computation (dsm-apps, dsm-apps-ga),")
    lines.append("each result checked bit for bit against a single-node run; NxT = nodes (or MPI ranks) x threads")
    lines.append(f"{'program':<9} {'kernel':>12} {'user':>12} {'GA (MPI tcp)':>14} {'local':>12} {'kern/GA':>8} "
                 f"{'user/GA':>8} {'kern/user':>9} {'results':>8}")
    app_rows = [["program", "kernel_s", "user_s", "ga_s", "local_s", "kernel_shape", "user_shape", "ga_shape",
                 "local_shape", "kernel_over_ga", "user_over_ga", "kernel_over_user", "results_match"]]

    def cell(p, b):
        v = apps[p].get(b)
        return (None, "-") if v is None else (v[0], v[3])

    for p, key in PROGRAMS:
        (k, ks), (u, us), (g, gs), (lo, ls) = (cell(p, b) for b in BACKENDS)
        matched = all(v[2] for v in apps[p].values()) if apps[p] else False
        if not matched:
            ok = False
        lines.append(f"{p:<9} {fmt(k, 3) + ' ' + ks:>12} {fmt(u, 3) + ' ' + us:>12} {fmt(g, 3) + ' ' + gs:>14} "
                     f"{fmt(lo, 3) + ' ' + ls:>12} {fmt(ratio(k, g), 2):>8} {fmt(ratio(u, g), 2):>8} "
                     f"{fmt(ratio(k, u), 2):>9} {'same' if matched else 'DIFFER':>8}")
        app_rows.append([p, fmt(k, 4), fmt(u, 4), fmt(g, 4), fmt(lo, 4), ks, us, gs, ls, fmt(ratio(k, g), 3),
                         fmt(ratio(u, g), 3), fmt(ratio(k, u), 3), "yes" if matched else "no"])
        summary[key] = pair(k, g, "s")
    lines.append("GA: Global Arrays over ARMCI-MPI and Open MPI, --mca btl tcp,self, one rank per node, in the")
    lines.append("same guest; local: the same program on one node's plain memory (context, not a peer)")
    with open(os.path.join(d, "dsm_apps.csv"), "w", newline="") as f:
        csv.writer(f).writerows(app_rows)
    lines += seed000_table(d, faults, protect, apps, summary)

    by = {row[0]: row for row in faults}
    if by:
        summary["dsm_read_fault"] = pair(by["read_fault"][2], raw, "us")
        summary["dsm_write_fault_2"] = pair(by["write_fault_2"][2], raw, "us")
        summary["dsm_kernel_vs_user"] = pair(by["read_fault"][2], by["read_fault"][3], "us")
    save_text(d, "dsm.txt", lines)
    plot_dsm(d, faults, raw, apps)
    return ok


def plot_dsm(d, faults, raw, apps):
    plt = pyplot()
    if faults:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        xs = range(len(faults))
        w = 0.38
        ks = [f[2] or 0 for f in faults]
        us = [f[3] or 0 for f in faults]
        ax.bar([x - w / 2 for x in xs], ks, w, label="kernel DSM (lite)", color="tab:blue")
        ax.bar([x + w / 2 for x in xs], us, w, label="user-level DSM (udsm)", color="tab:orange")
        if raw:
            ax.axhline(raw, color="tab:green", linestyle="--", label=f"raw 4 KiB LITE_read ({raw:.0f} us)")
            ax.axhline(1.3 * raw, color="tab:green", linestyle=":", label="1.3 x raw read")
        finish(fig, ax, [f[0] for f in faults], "median latency (us)", "DSM fault latency",
               os.path.join(d, "dsm.png"), rotation=15)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colors = {"kernel": "tab:blue", "user": "tab:orange", "ga": "tab:red", "local": "tab:gray"}
    w = 0.2
    for i, b in enumerate(BACKENDS):
        ys = [(apps[p].get(b) or (None,))[0] or 0 for p, _ in PROGRAMS]
        ax.bar([x + (i - 1.5) * w for x in range(len(PROGRAMS))], ys, w, label=b, color=colors[b])
    finish(fig, ax, [p for p, _ in PROGRAMS], "median run time (s)", "DSM programs against Global Arrays",
           os.path.join(d, "dsm_apps.png"))


# ---- mapreduce ------------------------------------------------------------

MPI_FIELDS = ["label", "app", "workers", "input_bytes", "total_s", "map_s", "compress_s", "collate_s", "reduce_s",
              "gather_sort_s", "output_pairs"]
MR_KEYS = [("mr_wordcount_256m", "wordcount", "256m"), ("mr_histogram", "histogram", "256m"),
           ("mr_invindex", "invindex", "docs-32m")]


def mr_rows(d):
    """(app, label, processes) -> row, for lite, MR-MPI and serial runs."""
    def index(rows):
        return {(r["app"], r["label"], int(r["workers"])): r for r in rows}

    lite = index(rows_of(os.path.join(d, "mr-lite.csv")))
    path = os.path.join(d, "mr-mpi.csv")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        raise Missing("mr-mpi.csv missing or empty")
    with open(path, newline="") as f:
        mpi = index(csv.DictReader(f, fieldnames=MPI_FIELDS))
    try:
        serial = {(r["app"], r["label"]): r for r in rows_of(os.path.join(d, "mr-serial.csv"))}
    except Missing as e:
        note(f"mapreduce: {e}")
        serial = {}
    return lite, mpi, serial


def section_mapreduce(d, summary, p):
    try:
        lite, mpi, serial = mr_rows(d)
    except Missing as e:
        note(f"mapreduce: {e}")
        return False
    ok = True
    keys = sorted(set(lite) | set(mpi), key=lambda k: (k[0] != "wordcount", k[0], k[1] != "16m", k[1] != "64m",
                                                       k[1], -k[2]))
    lines = [f"MapReduce job time, {WHERE}; seconds from the job's start to the merged output on the master",
             "(lite-mr: master on node 1, one worker process per node, threads = vCPUs / workers) or on rank 0",
             "(MR-MPI: map, compress, collate, reduce, gather, sort_keys; mpirun --mca btl tcp,self, one rank",
             "per process); serial = the single-process reference, timed (reading the input included)",
             f"{'application':<10} {'input':<9} {'procs':>5} {'lite':>8} {'MR-MPI':>8} {'serial':>8} "
             f"{'lite/MPI':>8} {'MPI/lite':>8} {'lite/ser':>8} {'pairs':>8}"]
    rows = [["app", "input", "processes", "input_bytes", "lite_s", "mrmpi_s", "serial_s", "lite_over_mrmpi",
             "lite_over_serial", "setup_s", "map_shuffle_s", "reduce_s", "merge_s", "cleanup_s", "shuffle_bytes",
             "push_s", "map_tasks", "partitions", "mpi_map_s", "mpi_compress_s", "mpi_collate_s", "mpi_reduce_s",
             "mpi_gather_sort_s", "output_pairs"]]
    for k in keys:
        app, label, procs = k
        l, m = lite.get(k), mpi.get(k)
        s_row = serial.get((app, label)) if procs == 3 else None
        lt, mt, st = num(l, "total_s"), num(m, "total_s"), num(s_row, "total_s")
        if l is None or m is None:
            ok = False
        pairs = (l or m or {}).get("output_pairs", "-")
        lines.append(f"{app:<10} {label:<9} {procs:>5} {fmt(lt, 2):>8} {fmt(mt, 2):>8} {fmt(st, 2):>8} "
                     f"{fmt(ratio(lt, mt), 2):>8} {fmt(ratio(mt, lt), 2):>8} {fmt(ratio(lt, st), 2):>8} {pairs:>8}")
        rows.append([app, label, procs, (l or m or {}).get("input_bytes", ""), fmt(lt, 3), fmt(mt, 3), fmt(st, 3),
                     fmt(ratio(lt, mt), 3), fmt(ratio(lt, st), 3)] +
                    [fmt(num(l, c), 3) for c in ("setup_s", "map_s", "reduce_s", "merge_s", "cleanup_s")] +
                    [(l or {}).get("shuffle_bytes", ""), fmt(num(l, "push_s"), 3), (l or {}).get("map_tasks", ""),
                     (l or {}).get("partitions", "")] +
                    [fmt(num(m, c), 3) for c in ("map_s", "compress_s", "collate_s", "reduce_s", "gather_sort_s")] +
                    [pairs])
    lines.append("")
    lines.append("lite-MapReduce phases (seconds; map includes the shuffle: partitions are pushed with one-sided")
    lines.append("writes as each map task ends; push = time the mapping threads spent pushing, summed)")
    lines.append(f"{'application':<10} {'input':<9} {'procs':>5} {'setup':>6} {'map':>7} {'reduce':>7} {'merge':>6} "
                 f"{'clean':>6} {'shuffle MB':>10} {'push s':>7} {'MB/s':>6}")
    for k in keys:
        l = lite.get(k)
        if l is None:
            continue
        mb = float(l["shuffle_bytes"]) / 1e6
        push = num(l, "push_s")
        lines.append(f"{k[0]:<10} {k[1]:<9} {k[2]:>5} {fmt(num(l, 'setup_s'), 2):>6} {fmt(num(l, 'map_s'), 2):>7} "
                     f"{fmt(num(l, 'reduce_s'), 2):>7} {fmt(num(l, 'merge_s'), 2):>6} "
                     f"{fmt(num(l, 'cleanup_s'), 2):>6} {mb:>10.1f} {fmt(push, 2):>7} "
                     f"{fmt(mb / push if push else None, 1):>6}")
    lines.append("")
    lines.append("MR-MPI steps (seconds)")
    lines.append(f"{'application':<10} {'input':<9} {'procs':>5} {'map':>7} {'compress':>8} {'collate':>7} "
                 f"{'reduce':>7} {'gather+sort':>11}")
    for k in keys:
        m = mpi.get(k)
        if m is None:
            continue
        lines.append(f"{k[0]:<10} {k[1]:<9} {k[2]:>5} " + " ".join(
            f"{fmt(num(m, c), 2):>{w}}" for c, w in (("map_s", 7), ("compress_s", 8), ("collate_s", 7),
                                                     ("reduce_s", 7), ("gather_sort_s", 11))))
    two = os.path.join(d, "mr-2guest.csv")
    if os.path.exists(two) and os.path.getsize(two) > 0:
        g = rows_of(two)[-1]
        k = ("wordcount", "64m", 2)
        one, m = num(lite.get(k), "total_s"), num(mpi.get(k), "total_s")
        t = num(g, "total_s")
        lines.append("")
        lines.append("Two guests (one lite node and one vCPU each, over the guests' virtual link) against two nodes")
        lines.append("in one guest (two vCPUs, rxe loopback); word count, 64 MiB, 2 workers (seconds)")
        lines.append(f"  2 guests {fmt(t, 2)}   1 guest {fmt(one, 2)}   MR-MPI 1 guest {fmt(m, 2)}   "
                     f"2 guests / 1 guest {fmt(ratio(t, one), 2)}   shuffle {float(g['shuffle_bytes']) / 1e6:.1f} MB "
                     f"in {fmt(num(g, 'push_s'), 2)} s of pushing")
        rows.append(["wordcount", "64m-2guests", 2, g.get("input_bytes", ""), fmt(t, 3), "", "", "", ""] +
                    [fmt(num(g, c), 3) for c in ("setup_s", "map_s", "reduce_s", "merge_s", "cleanup_s")] +
                    [g.get("shuffle_bytes", ""), fmt(num(g, "push_s"), 3), g.get("map_tasks", ""),
                     g.get("partitions", ""), "", "", "", "", "", g.get("output_pairs", "")])
    else:
        note("mapreduce: no mr-2guest.csv (the two-guest point did not run)")
    with open(os.path.join(d, "mapreduce.csv"), "w", newline="") as f:
        csv.writer(f).writerows(rows)
    for key, app, label in MR_KEYS:
        k = (app, label, 3)
        summary[key] = pair(num(lite.get(k), "total_s"), num(mpi.get(k), "total_s"), "s")
        if summary[key] is None:
            ok = False
    k = ("wordcount", "256m", 3)
    summary["mr_wordcount_serial"] = pair(num(lite.get(k), "total_s"),
                                          num(serial.get(("wordcount", "256m")), "total_s"), "s")
    save_text(d, "mapreduce.txt", lines)
    plot_mapreduce(d, keys, lite, mpi, serial)
    return ok


def plot_mapreduce(d, keys, lite, mpi, serial):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    w = 0.27
    xs = range(len(keys))
    for i, (name, runs, color) in enumerate((("lite-MapReduce", lite, "tab:blue"), ("MR-MPI", mpi, "tab:red"))):
        ax.bar([x + (i - 1) * w for x in xs], [num(runs.get(k), "total_s") or 0 for k in keys], w, label=name,
               color=color)
    ax.bar([x + w for x in xs], [num(serial.get((k[0], k[1])), "total_s") or 0 if k[2] == 3 else 0 for k in keys],
           w, label="serial", color="tab:gray")
    finish(fig, ax, [f"{k[0]}\n{k[1]} x{k[2]}" for k in keys], "job time (s)", "MapReduce against MapReduce-MPI",
           os.path.join(d, "mapreduce.png"), rotation=0)


# ---- core: RPC, one-sided, atomics, async, first op, allocation ------------


def named(entry, mode):
    """@entry (from pair()) with the native baseline it was measured against."""
    if entry is not None:
        entry["native_mode"] = mode
    return entry


def best_native(row, prefix, suffix, lower):
    """The better of a row's native busy and event figures, and its mode."""
    cands = [(num(row, f"{prefix}busy{suffix}"), "busy"), (num(row, f"{prefix}event{suffix}"), "event")]
    cands = [c for c in cands if c[0] is not None]
    if not cands:
        return None, None
    return (min if lower else max)(cands, key=lambda c: c[0])


def optional_rows(d, name):
    try:
        return rows_of(os.path.join(d, name))
    except Missing:
        return None


# Keys measured against the better native mode of the same row: key, CSV,
# the row (its key columns' values), lite's column, the native columns'
# suffix (native_busy..., native_event...), lower is better, unit.
AGAINST_NATIVE = (
    [(f"rpc_lat_{n}", "rpc.csv", {"size": n}, "lite_median_us", "_median_us", True, "us")
     for n in ("8", "64", "4096", "65536")]
    + [(f"rpc_tput_{t}", "rpc_tput.csv", {"threads": t}, "lite_calls_per_s", "_calls_per_s", False, "calls/s")
       for t in ("1", "2", "4")]
    + [(f"{op}_lat_{n}", "latency.csv", {"op": op, "size": n}, "lite_median_us", "_median_us", True, "us")
       for op, n in (("write", "8"), ("read", "8"), ("write", "4096"), ("read", "4096"))]
    + [(key, "async.csv", {"op": op, "qd": qd}, "lite_ring_ops_s", "_ops_s", False, "ops/s")
       for key, op, qd in (("async_write_qd1", "write", "1"), ("async_write_qd32", "write", "32"),
                           ("async_read_qd32", "read", "32"))]
    + [(key, "async.csv", {"op": op, "qd": qd}, "lite_ring_poll_ops_s", "_ops_s", False, "ops/s")
       for key, op, qd in (("async_write_qd1_polled", "write", "1"), ("async_write_qd32_polled", "write", "32"),
                           ("async_read_qd32_polled", "read", "32"))])


def section_core(d, summary, p):
    found = False
    tables = {}
    for key, name, want, lite_col, suffix, lower, unit in AGAINST_NATIVE:
        if name not in tables:
            tables[name] = optional_rows(d, name)
        if not tables[name]:
            continue
        found = True
        r = next((row for row in tables[name] if all(row.get(k) == v for k, v in want.items())), None)
        native, mode = best_native(r, "native_", suffix, lower) if r else (None, None)
        summary[key] = named(pair(num(r, lite_col), native, unit), mode)
    # Pipelined on io_uring: no one-in-flight native run compares.
    for r in tables.get("rpc_tput.csv") or []:
        calls = num(r, "lite_ring_calls_per_s")
        if calls is not None and math.isfinite(calls):
            summary[f"rpc_tput_ring_{r['threads']}"] = {"value": round(calls, 1), "unit": "calls/s",
                                                       "in_flight": int(r.get("ring_depth") or 0)}
    rows = optional_rows(d, "ops.csv")
    if rows:
        found = True
        by = {(r["op"], r["size"]): r for r in rows}
        # lite's rows are NIC atomics (an LMR of LITE_LMR_NIC_ATOMIC); the
        # CPU domain's are lite-cpu-*.
        for key, op in (("fetch_add_lat", "fetch-add"), ("cmp_swap_lat", "cmp-swap")):
            summary[key] = named(pair(num(by.get((f"lite-{op}", "8")), "median_us"),
                                      num(by.get((op, "8")), "median_us"), "us"), "busy")
        summary["fetch_add_lat_ib_atomic_lat"] = named(
            pair(num(by.get(("lite-fetch-add", "8")), "median_us"),
                 num(by.get(("perftest-fetch-add", "8")), "median_us"), "us"), "ib_atomic_lat")
        cpu = num(by.get(("lite-cpu-fetch-add", "8")), "median_us")
        if cpu is not None and math.isfinite(cpu):
            summary["fetch_add_cpu_lat"] = {"value": cpu, "unit": "us"}
    rows = optional_rows(d, "first_op.csv")
    if rows:
        found = True
        by = {r["mode"]: r for r in rows}
        summary["first_op"] = named(pair(num(by.get("lite"), "median_us"), num(by.get("native"), "median_us"), "us"),
                                    "native")
    rows = optional_rows(d, "reg.csv")
    if rows:
        found = True
        by = {r["size"]: r for r in rows}
        for key, size in (("alloc_4096", "4096"), ("alloc_1g", "1073741824")):
            r = by.get(size)
            summary[key] = named(pair(num(r, "lite_alloc_us"), num(r, "native_reg_us"), "us"), "native registration")
        # LITE_alloc + LITE_free against ibv_reg_mr + ibv_dereg_mr (issue 14),
        # paced (the lease refilled between calls) and back to back.
        for key, size, mode in (("alloc_free_4096", "4096", "paced"), ("alloc_free_1m", "1048576", "paced"),
                                ("alloc_free_4096_b2b", "4096", "b2b"), ("alloc_free_1m_b2b", "1048576", "b2b")):
            r = by.get(size)
            cols = ("native_reg_paced_us", "native_dereg_paced_us", "lite_alloc_paced_us", "lite_free_paced_us") \
                if mode == "paced" else ("native_reg_us", "native_dereg_us", "lite_alloc_us", "lite_free_us")
            v = [num(r, c) for c in cols]
            if None not in v:
                summary[key] = named(pair(v[2] + v[3], v[0] + v[1], "us"), f"native registration, {mode}")
    if not found:
        note("core: none of rpc.csv, rpc_tput.csv, latency.csv, ops.csv, async.csv, first_op.csv, reg.csv")
    return found


# ---- breakdown: one RPC round trip, from ftrace events ----------------------

TRACE_LINE = re.compile(r"^\s*(.+)-(\d+)\s+\[(\d+)\]\s+\S+\s+(\d+\.\d+): (.*)$")
IOC_RPC_CALL, IOC_RPC_RECV, IOC_RPC_REPLY, IOC_RPC_REPLY_RECV = 0x22, 0x23, 0x24, 0x29
SOFTIRQ_VEC = {"5": "irq_poll", "6": "tasklet"}


def parse_trace(path):
    """The events of a trace file as (ts_us, pid, cpu, kind, fields)."""
    events = []
    with open(path, errors="replace") as f:
        for line in f:
            m = TRACE_LINE.match(line)
            if not m:
                continue
            pid, cpu, ts, rest = int(m.group(2)), int(m.group(3)), float(m.group(4)) * 1e6, m.group(5)
            if rest.startswith("sys_ioctl("):
                cmd = re.search(r"cmd: ([0-9a-f]+)", rest)
                events.append((ts, pid, cpu, "ioctl_enter", int(cmd.group(1), 16) & 0xff if cmd else -1))
            elif rest.startswith("sys_ioctl ->"):
                events.append((ts, pid, cpu, "ioctl_exit", None))
            elif rest.startswith("sched_waking:"):
                w = re.search(r" pid=(\d+)", rest)
                events.append((ts, pid, cpu, "waking", int(w.group(1)) if w else -1))
            elif rest.startswith("sched_switch:"):
                a = re.search(r"prev_pid=(\d+) .*next_pid=(\d+)", rest)
                if a:
                    events.append((ts, pid, cpu, "switch", (int(a.group(1)), int(a.group(2)))))
            elif rest.startswith("softirq_entry:") or rest.startswith("softirq_exit:"):
                v = re.search(r"vec=(\d+)", rest)
                kind = "sirq_in" if rest.startswith("softirq_entry") else "sirq_out"
                events.append((ts, pid, cpu, kind, SOFTIRQ_VEC.get(v.group(1)) if v else None))
    events.sort(key=lambda e: e[0])
    return events


def breakdown(events):
    """Per-call figures of the traced calls: a dict of lists."""
    callers = {e[1] for e in events if e[3] == "ioctl_enter" and e[4] == IOC_RPC_CALL}
    servers = {e[1] for e in events if e[3] == "ioctl_enter" and e[4] in (IOC_RPC_RECV, IOC_RPC_REPLY_RECV)}
    # Softirq intervals by vector, from the entry/exit pairs per CPU.
    sirq = {"tasklet": [], "irq_poll": []}
    open_at = {}
    for ts, _pid, cpu, kind, vec in events:
        if kind == "sirq_in":
            open_at[cpu] = (ts, vec)
        elif kind == "sirq_out" and cpu in open_at:
            t0, v = open_at.pop(cpu)
            if v in sirq:
                sirq[v].append((t0, ts))
    calls = []
    for pid in callers:
        start = None
        for ts, p, _cpu, kind, arg in events:
            if p != pid:
                continue
            if kind == "ioctl_enter" and arg == IOC_RPC_CALL:
                start = ts
            elif kind == "ioctl_exit" and start is not None:
                calls.append((start, ts))
                start = None
    calls.sort()
    # Everything a window contains: binary search would do; windows are few.
    out = {k: [] for k in ("rt", "syscalls", "sleeps", "wake", "tasklet", "irq_poll")}
    waking = [e for e in events if e[3] == "waking" and e[4] in callers | servers]
    switch_in = [e for e in events if e[3] == "switch" and e[4][1] in callers | servers]
    ioctls = [e for e in events if e[3] == "ioctl_enter" and e[1] in callers | servers]

    def inside(items, t0, t1):
        return [x for x in items if t0 <= x[0] <= t1]

    def overlap(intervals, t0, t1):
        return sum(max(0.0, min(b, t1) - max(a, t0)) for a, b in intervals if b >= t0 and a <= t1)

    for t0, t1 in calls:
        wakes = inside(waking, t0, t1)
        lat = 0.0
        for ts, _p, _c, _k, target in wakes:
            nxt = next((s for s in switch_in if s[0] >= ts and s[4][1] == target), None)
            if nxt is not None and nxt[0] <= t1:
                lat += nxt[0] - ts
        out["rt"].append(t1 - t0)
        # The server's ioctl that carried the reply started before the call
        # ended; count the ioctls that started within the call.
        out["syscalls"].append(len(inside(ioctls, t0, t1)))
        out["sleeps"].append(len(wakes))
        out["wake"].append(lat)
        out["tasklet"].append(overlap(sirq["tasklet"], t0, t1))
        out["irq_poll"].append(overlap(sirq["irq_poll"], t0, t1))
    return out


def section_breakdown(d, summary, p):
    modes = []
    for name in sorted(os.listdir(d)):
        m = re.fullmatch(r"trace-(\w+)\.txt", name)
        if m and os.path.getsize(os.path.join(d, name)) > 0:
            modes.append(m.group(1))
    if not modes:
        note("breakdown: no trace-MODE.txt")
        return False
    order = {"softirq": 0, "poll": 1}
    modes.sort(key=lambda m: order.get(m, 9))
    rows = []
    for mode in modes:
        b = breakdown(parse_trace(os.path.join(d, f"trace-{mode}.txt")))
        if not b["rt"]:
            note(f"breakdown: no RPC_CALL in trace-{mode}.txt")
            continue
        # The typical call: the middle half of the calls by round trip
        # (means over them add up; the tails are the p99's business).
        order = sorted(range(len(b["rt"])), key=lambda i: b["rt"][i])
        mid = order[len(order) // 4: len(order) - len(order) // 4] or order
        mean = {k: statistics.fmean(v[i] for i in mid) for k, v in b.items()}
        untraced = None
        try:
            r = rows_of(os.path.join(d, f"bd-{mode}-rpc.csv"))
            untraced = float(r[0]["median_us"]) if "median_us" in r[0] else None
        except (Missing, KeyError, ValueError):
            pass
        rest = mean["rt"] - mean["wake"] - mean["tasklet"] - mean["irq_poll"]
        rows.append((mode, len(b["rt"]), statistics.median(b["rt"]), mean["rt"], mean["syscalls"], mean["sleeps"],
                     mean["wake"], mean["tasklet"], mean["irq_poll"], rest, untraced))
    cols = ["mode", "calls", "rt_median_us", "rt_mean_us", "syscalls", "sleeps", "wake_us", "rxe_tasklet_us",
            "cq_softirq_us", "rest_us", "lite_rpc_median_us"]
    with open(os.path.join(d, "rpc_breakdown.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([r[0], r[1]] + [fmt(x, 2) if isinstance(x, float) or x is None else x for x in r[2:]])
    lines = [f"One 8-byte lite RPC round trip taken apart, {WHERE}, from ftrace events (lite-rpc under",
             "sched_waking/sched_switch, ioctl entry/exit and softirq entry/exit; tracing itself slows the call).",
             "Per typical call (means over the middle half of the calls by round trip): system calls and",
             "sleeps of caller and server thread; wake: sched_waking to running; rxe: its tasklets (the",
             "emulated wire: requester, responder, completer); cq: lite's CQ handlers in softirq; rest: the",
             "round trip less those (lite's own work, system calls, copies; in poll mode the CQ handlers too).",
             f"{'mode':9} {'calls':>5} {'rt med':>8} {'rt mid':>8} {'syscalls':>8} {'sleeps':>6} {'wake':>8} "
             f"{'rxe':>8} {'cq':>8} {'rest':>8} {'own med':>9}"]
    for r in rows:
        lines.append(f"{r[0]:9} {r[1]:5d} {fmt(r[2]):>8} {fmt(r[3]):>8} {fmt(r[4], 2):>8} {fmt(r[5], 2):>6} "
                     f"{fmt(r[6]):>8} {fmt(r[7]):>8} {fmt(r[8]):>8} {fmt(r[9]):>8} {fmt(r[10]):>9}")
    lines.append("times in us; own med: lite-rpc's own median round trip in the traced run (tracing included).")
    save_text(d, "rpc_breakdown.txt", lines)
    return bool(rows)


# ---- sendfile ---------------------------------------------------------------

SF_WAYS = [("native_reg", "native, reg/req"), ("native_cache", "native, cached"), ("copy", "read+write"),
           ("sendfile", "LITE_sendfile"), ("nfs", "NFS/RDMA")]


def section_sendfile(d, summary, p):
    try:
        rows = rows_of(os.path.join(d, "sendfile-raw.csv"))
    except Missing as e:
        note(f"sendfile: {e}")
        return False
    by = {int(r["size"]): r for r in rows}
    mbs = {s: {w: num(r, f"{w}_mbs") for w, _ in SF_WAYS} for s, r in by.items()}
    cpu = {s: {w: num(r, f"{w}_cpu") for w, _ in SF_WAYS} for s, r in by.items()}
    lines = [f"files into remote memory (seed 002), {WHERE}; MB/s of one request (median), files in the page",
             "cache (tmpfs); native: the file mmap'ed and registered per request (reg/req) or once (cached),",
             "the better of busy-polled and event-driven (b/e after the figure); read+write = pread +",
             "LITE_write; NFS/RDMA = O_DIRECT reads of the same file over an NFSv3 proto=rdma mount of it in",
             "the same guest (knfsd, svcrdma, same rxe device)",
             f"{'size':>6} " + " ".join(f"{label:>15}" for _, label in SF_WAYS) +
             f" {'sf/reg':>7} {'sf/copy':>7} {'sf/nfs':>7}"]
    out = [["size"] + [f"{w}_mbs" for w, _ in SF_WAYS] + [f"{w}_cpu_us_per_mib" for w, _ in SF_WAYS] +
           ["sendfile_over_native_reg", "sendfile_over_copy", "sendfile_over_nfs", "native_reg_mode",
            "native_cache_mode"]]
    for s in sorted(by):
        m = mbs[s]
        r_reg, r_copy, r_nfs = (ratio(m["sendfile"], m[w]) for w in ("native_reg", "copy", "nfs"))
        tag = {w: " " + by[s].get(f"{w}_mode", "-")[:1] if w.startswith("native") else "" for w, _ in SF_WAYS}
        lines.append(f"{human(s):>6} " + " ".join(f"{fmt(m[w]) + tag[w]:>15}" for w, _ in SF_WAYS) +
                     f" {fmt(r_reg, 2):>7} {fmt(r_copy, 2):>7} {fmt(r_nfs, 2):>7}")
        out.append([s] + [fmt(m[w]) for w, _ in SF_WAYS] + [fmt(cpu[s][w]) for w, _ in SF_WAYS] +
                   [fmt(r_reg, 3), fmt(r_copy, 3), fmt(r_nfs, 3), by[s].get("native_reg_mode", "-"),
                    by[s].get("native_cache_mode", "-")])
    lines.append("")
    lines.append("CPU of the sending process per MiB (us; user + system, softirq work it took included; NFS: the")
    lines.append("reading client's, the server's knfsd threads not counted)")
    lines.append(f"{'size':>6} " + " ".join(f"{label:>15}" for _, label in SF_WAYS))
    for s in sorted(by):
        lines.append(f"{human(s):>6} " + " ".join(f"{fmt(cpu[s][w]):>15}" for w, _ in SF_WAYS))
    lines.append("sf/reg, sf/copy, sf/nfs: LITE_sendfile's MB/s over native with registration per request, over")
    lines.append("pread + LITE_write, over NFS/RDMA (above 1 = lite faster)")
    with open(os.path.join(d, "sendfile.csv"), "w", newline="") as f:
        csv.writer(f).writerows(out)
    k64, k64m = 64 << 10, 64 << 20
    summary["sendfile_64k"] = pair(mbs.get(k64, {}).get("sendfile"), mbs.get(k64, {}).get("native_reg"), "MB/s")
    summary["sendfile_64m"] = pair(mbs.get(k64m, {}).get("sendfile"), mbs.get(k64m, {}).get("native_reg"), "MB/s")
    summary["sendfile_vs_copy_64k"] = pair(mbs.get(k64, {}).get("sendfile"), mbs.get(k64, {}).get("copy"), "MB/s")
    summary["sendfile_vs_nfsrdma"] = pair(mbs.get(k64m, {}).get("sendfile"), mbs.get(k64m, {}).get("nfs"), "MB/s")
    for k in ("sendfile_64k", "sendfile_64m", "sendfile_vs_copy_64k", "sendfile_vs_nfsrdma"):
        if summary[k] is not None:
            size = k64m if k == "sendfile_64m" else k64
            summary[k]["native_mode"] = {"sendfile_vs_copy_64k": "pread + LITE_write",
                                         "sendfile_vs_nfsrdma": "NFS/RDMA sequential read, 64 MiB"}.get(
                                             k, "native verbs, registration per request, " +
                                             by.get(size, {}).get("native_reg_mode", "-"))
    save_text(d, "sendfile.txt", lines)
    plot_sendfile(d, sorted(by), mbs)
    return all(summary[k] is not None for k in ("sendfile_64k", "sendfile_64m", "sendfile_vs_copy_64k",
                                                 "sendfile_vs_nfsrdma"))


def plot_sendfile(d, sizes, mbs):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for w, label in SF_WAYS:
        ys = [mbs[s][w] for s in sizes]
        if any(y is not None for y in ys):
            ax.plot(range(len(sizes)), [float("nan") if y is None else y for y in ys], marker="o", label=label)
    ax.set_yscale("log")
    finish(fig, ax, [human(s) for s in sizes], "MB/s (log)", "file into remote memory, by size",
           os.path.join(d, "sendfile.png"))


# ---- isolation -------------------------------------------------------------

ISO_MODES = ("global", "lmr")


def iso_rounds(d, mode):
    """{round: {(metric, size): value}} of one mode (iso-MODE-rN-*.csv)."""
    rounds = {os.path.basename(p).split("-")[2] for p in glob.glob(os.path.join(d, f"iso-{mode}-r*-*.csv"))}
    return {r: iso_round(d, f"iso-{mode}-{r}") for r in sorted(rounds)}


def iso_median(per_round, k):
    vals = [f[k] for f in per_round.values() if k in f]
    return statistics.median(vals) if vals else None


def iso_paired_ratio(lmr, glob_, k):
    """The median over rounds of lmr over global in the same round.

    The modes take turns; this host switches between a fast and a slow
    state (about 1.6x) for tens of seconds, so a round compares neighbours
    in time, and the median of the rounds' ratios drops a round the switch
    fell into.
    """
    rs = [lmr[r][k] / glob_[r][k] for r in lmr if r in glob_ and k in lmr[r] and glob_[r].get(k)]
    return statistics.median(rs) if rs else None


def iso_round(d, prefix):
    """{(metric, size): value} of one round; metrics whose file is missing are left out."""
    figs = {}
    for name, pick in (
            ("lat", lambda r: [((r["op"] + "_lat", int(r["size"])), num(r, "median_us"))]
             if r["op"] in ("write", "read") else []),
            ("rpc", lambda r: [(("rpc_lat", int(r["size"])), num(r, "median_us"))]),
            ("tput-write", lambda r: [(("write_tput_qd", int(r["qd"])), num(r, "ops_per_s"))]),
            ("tput-read", lambda r: [(("read_tput_qd", int(r["qd"])), num(r, "ops_per_s"))]),
            ("reg-nolease", lambda r: [(("alloc", int(r["size"])), sum_or_none(num(r, "lite_alloc_us"),
                                                                              num(r, "lite_free_us")))]),
            ("reg", lambda r: [(("alloc_lease", int(r["size"])), sum_or_none(num(r, "lite_alloc_us"),
                                                                            num(r, "lite_free_us"))),
                               (("alloc_paced", int(r["size"])), sum_or_none(num(r, "lite_alloc_paced_us"),
                                                                             num(r, "lite_free_paced_us")))]),
            ("dsm", lambda r: [((DSM_ISO_ROWS[r["name"]], 4096), num(r, "median_us"))]
             if r["name"] in DSM_ISO_ROWS else [])):
        try:
            rows = rows_of(os.path.join(d, f"{prefix}-{name}.csv"))
        except Missing as e:
            note(f"isolation: {e}")
            continue
        for r in rows:
            for k, v in pick(r):
                if v is not None:
                    figs[k] = v
    return figs


# dsm-lat's rows in the isolation table: one RDMA read of a frame, and a
# write fault that invalidates the home's copy and reads it.
DSM_ISO_ROWS = {"read_fault": "dsm_read_fault", "write_fault_1": "dsm_write_fault"}


def sum_or_none(a, b):
    return None if a is None or b is None else a + b


ISO_UNITS = {"write_lat": "us", "read_lat": "us", "rpc_lat": "us", "write_tput_qd": "ops/s",
             "read_tput_qd": "ops/s", "alloc": "us", "alloc_lease": "us", "alloc_paced": "us",
             "dsm_read_fault": "us", "dsm_write_fault": "us"}
ISO_KEYS = {"iso_write_lat_8": ("write_lat", 8), "iso_read_lat_8": ("read_lat", 8),
            "iso_write_lat_4096": ("write_lat", 4096), "iso_read_lat_4096": ("read_lat", 4096),
            "iso_write_tput_qd32": ("write_tput_qd", 32), "iso_read_tput_qd32": ("read_tput_qd", 32),
            "iso_rpc_lat_8": ("rpc_lat", 8), "iso_rpc_lat_4096": ("rpc_lat", 4096),
            "iso_alloc_4096": ("alloc", 4096), "iso_alloc_1m": ("alloc", 1 << 20),
            "iso_alloc_16m": ("alloc_lease", 16 << 20), "iso_alloc_4096_lease": ("alloc_lease", 4096),
            "iso_alloc_4096_paced": ("alloc_paced", 4096),
            "iso_dsm_read_fault": ("dsm_read_fault", 4096), "iso_dsm_write_fault": ("dsm_write_fault", 4096)}


def section_isolation(d, summary, p):
    rounds = {m: iso_rounds(d, m) for m in ISO_MODES}
    for m in ISO_MODES:
        if not rounds[m]:
            note(f"isolation: no iso-{m}-rN-*.csv in {d}")
    figs = {m: {k: iso_median(rounds[m], k) for k in set().union(*rounds[m].values())} for m in ISO_MODES}
    keys = sorted(set(figs["global"]) | set(figs["lmr"]), key=lambda k: (list(ISO_UNITS).index(k[0]), k[1]))
    lines = [f"the cost of isolation, {WHERE}: lite with both nodes in global mode (one key for all",
             "memory) and in lmr mode (a key per chunk, fast registration); latencies are medians (us),",
             "throughput 4 KiB operations per second on a lite ring; alloc = LITE_alloc + LITE_free back",
             "to back with leases off (each a request to the memory node, which registers in lmr mode),",
             "alloc_lease the same with leases on (16M is above the lease sizes), alloc_paced 10 ms apart",
             "(from the lease), dsm_* the kernel DSM's read fault (one RDMA read of a frame) and write",
             "fault (the home's copy invalidated, then read), median us. The modes take turns for",
             f"{max(len(rounds['global']), len(rounds['lmr']))} rounds: global and lmr are medians over the rounds, lmr/global the median",
             "over the rounds of the ratio within a round (this host drifts between a fast and a slow state)",
             f"{'figure':<16} {'size/qd':>8} {'global':>11} {'lmr':>11} {'lmr/global':>10}"]
    out = [["metric", "size_or_qd", "global", "lmr", "lmr_over_global", "unit"]]
    for k in keys:
        g, lm = figs["global"].get(k), figs["lmr"].get(k)
        r = iso_paired_ratio(rounds["lmr"], rounds["global"], k)
        label = human(k[1]) if not k[0].endswith("_qd") else str(k[1])
        lines.append(f"{k[0]:<16} {label:>8} {fmt(g):>11} {fmt(lm):>11} {fmt(r, 2):>10}")
        out.append([k[0], k[1], fmt(g, 3), fmt(lm, 3), fmt(r, 3), ISO_UNITS[k[0]]])
    lines.append("lmr/global above 1 is slower in lmr mode for times, faster for throughput")
    with open(os.path.join(d, "isolation.csv"), "w", newline="") as f:
        csv.writer(f).writerows(out)
    for key, k in ISO_KEYS.items():
        entry = named(pair(figs["lmr"].get(k), figs["global"].get(k), ISO_UNITS[k[0]]), "lite, global isolation")
        r = iso_paired_ratio(rounds["lmr"], rounds["global"], k)
        if entry is not None and r is not None:
            entry["ratio"] = round(r, 3)  # paired by round, as the table
        summary[key] = entry
    save_text(d, "isolation.txt", lines)
    return all(summary[k] is not None for k in ISO_KEYS)


# ---- the end of a run --------------------------------------------------------


def section_failed(d, summary, p):
    """bench.sh's note of the runs that failed, appended to the tables
    (DIR/NAME.txt for each NAME in p["tables"])."""
    for name in p["tables"].split():
        with open(os.path.join(d, f"{name}.txt"), "a") as f:
            f.write(p["note"] + "\n")
    return True


# Each section: its function, the parameters it needs (NAME=VALUE on the
# command line: the run's settings, as bench.sh has them) and whether it
# has summary.json keys.
RUN = ("kver", "dev")
SECTIONS = {
    "latency": (section_latency, RUN + ("iters", "warmup"), False),
    "rpc": (section_rpc, RUN + ("iters", "warmup"), False),
    "rpc_tput": (section_rpc_tput, RUN + ("size", "secs", "depth"), False),
    "cq_modes": (section_cq_modes, RUN + ("iters", "warmup", "modes"), False),
    "breakdown": (section_breakdown, (), False),
    "ops": (section_ops, RUN + ("iters", "warmup", "lite"), False),
    "first_op": (section_first_op, RUN + ("runs",), False),
    "reg": (section_reg, RUN + ("node",), False),
    "mr_scale": (section_mr_scale, RUN + ("secs", "node"), False),
    "async": (section_async, RUN + ("len", "secs"), False),
    "sendfile": (section_sendfile, (), True),
    "isolation": (section_isolation, (), True),
    "dsm": (section_dsm, (), True),
    "mapreduce": (section_mapreduce, (), True),
    "core": (section_core, (), True),
    "failed": (section_failed, ("note", "tables"), False),
}
USAGE = f"""usage: report.py DIR SECTION... [NAME=VALUE...]
       report.py perftest-row OP SIZE <perftest-output
       report.py compare RUN1.json RUN2.json
sections: {", ".join(SECTIONS)}"""

# The issues' targets on summary.json ratios: key -> (issue, comparison,
# bound). A ratio is lite's figure over the baseline's, so a time's target
# is an upper bound and a rate's (calls/s, ops/s, MB/s) a lower one.
TARGETS = {
    "rpc_lat_8": (13, "<=", 2.0), "rpc_lat_64": (13, "<=", 2.0),
    "rpc_lat_4096": (13, "<=", 1.3), "rpc_lat_65536": (13, "<=", 1.1),
    "rpc_tput_1": (13, ">=", 0.5), "rpc_tput_2": (13, ">=", 1.0),
    "rpc_tput_4": (13, ">=", 1.0),
    "write_lat_8": (14, "<=", 1.05), "write_lat_4096": (14, "<=", 1.05),
    "read_lat_8": (14, "<=", 1.05), "read_lat_4096": (14, "<=", 1.05),
    "fetch_add_lat": (14, "<=", 1.2), "cmp_swap_lat": (14, "<=", 1.2),
    "fetch_add_lat_ib_atomic_lat": (14, "<=", 1.2),
    "async_write_qd1": (14, ">=", 0.95), "async_write_qd32": (14, ">=", 0.95),
    "async_read_qd32": (14, ">=", 0.95),
    "alloc_free_4096": (14, "<=", 1.0), "alloc_free_4096_b2b": (14, "<=", 1.0),
    "alloc_free_1m": (14, "<=", 1.0), "alloc_free_1m_b2b": (14, "<=", 1.0),
    "dsm_read_fault": (11, "<=", 1.3), "dsm_kernel_vs_user": (11, "<", 1.0),
    "sendfile_64k": (15, ">=", 2.0), "sendfile_vs_copy_64k": (15, ">=", 1.0),
}


def meets(ratio, op, bound):
    return {"<=": ratio <= bound, "<": ratio < bound, ">=": ratio >= bound}[op]


def compare(path1, path2):
    """Print two runs' summaries side by side (see the module's doc)."""
    runs = []
    for path in (path1, path2):
        with open(path) as f:
            runs.append(json.load(f))
    a, b = runs

    def moved(x, y):
        return f"{100 * (y / x - 1):+.0f}%" if x else "-"

    def num(x):
        return "-" if x is None else f"{x:.5g}"

    print(f"{'key':28} {'lite 1':>11} {'lite 2':>11} {'moved':>6} {'ratio 1':>8} {'ratio 2':>8} "
          f"{'moved':>6}  target")
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key, {}), b.get(key, {})
        fx = x.get("lite", x.get("value"))
        fy = y.get("lite", y.get("value"))
        row = (f"{key:28} {num(fx):>11} {num(fy):>11} "
               f"{moved(fx, fy) if fx is not None and fy is not None else '-':>6} ")
        rx, ry = x.get("ratio"), y.get("ratio")
        row += (f"{fmt(rx, 3):>8} {fmt(ry, 3):>8} "
                f"{moved(rx, ry) if rx is not None and ry is not None else '-':>6}")
        if key in TARGETS:
            issue, op, bound = TARGETS[key]
            met = ["-" if r is None else ("met" if meets(r, op, bound) else "MISSED") for r in (rx, ry)]
            row += f"  {op} {bound:g} (issue {issue}): {met[0]}, {met[1]}"
        print(row)
    print("lite 1/2, ratio 1/2: the first and second run; moved: the second against the first")
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "perftest-row":
        return 0 if perftest_row(argv[2], argv[3]) else 1
    if len(argv) == 4 and argv[1] == "compare":
        return compare(argv[2], argv[3])
    names = [a for a in argv[2:] if "=" not in a]
    params = dict(a.split("=", 1) for a in argv[2:] if "=" in a)
    needed = {n for s in names if s in SECTIONS for n in SECTIONS[s][1]}
    if len(argv) < 3 or not names or any(s not in SECTIONS for s in names) or set(params) != needed:
        print(USAGE, file=sys.stderr)
        if set(params) != needed:
            print(f"report.py: {', '.join(names)} take {' '.join(sorted(needed)) or 'no NAME=VALUE'}",
                  file=sys.stderr)
        return 2
    d = argv[1]
    path = os.path.join(d, "summary.json")
    summary = {}
    if os.path.exists(path):
        with open(path) as f:
            summary = json.load(f)
    ok = True
    for s in names:
        fresh = {}
        ok = SECTIONS[s][0](d, fresh, params) and ok
        for k, v in fresh.items():
            summary.pop(k, None)
            if v is not None:
                summary[k] = v
    # An entry with inf or nan (a summary.json of an older report.py) is
    # no figure: left out, and the file stays strict JSON.
    summary = {k: v for k, v in summary.items()
               if all(not isinstance(x, float) or math.isfinite(x) for x in v.values())}
    if any(SECTIONS[s][2] for s in names):
        with open(path + ".part", "w") as f:
            json.dump(summary, f, indent=2, sort_keys=True, allow_nan=False)  # strict JSON
            f.write("\n")
        os.replace(path + ".part", path)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
