#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tables, CSVs, figures and build/bench/summary.json from the raw CSVs
that the benchmark programs wrote (benchmarks/bench.sh runs them).

Usage: python3 benchmarks/report.py DIR SECTION...

Sections it knows (the others are still joined by bench.sh and plotted by
plot.py):

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

  core  from the tables bench.sh's other sections wrote (rpc.csv,
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

  breakdown
        from DIR/trace-MODE.txt (ftrace events of lite-rpc's 8-byte calls,
        bench.sh rpc_breakdown) and DIR/bd-MODE-rpc.csv: rpc_breakdown.txt
        and rpc_breakdown.csv, one row per mode: the traced round trip,
        system calls, sleeps and wake-up latency, rxe's tasklet time (the
        emulated wire), lite's CQ handling in softirq, and the rest.

DIR/summary.json maps each headline figure's key to {"lite", "native",
"ratio", "unit"} (lite's figure, the baseline's from the same run, lite
over baseline) or {"value", "unit"}; this script replaces the keys of the
sections it ran and keeps the others. A figure that was not measured is
left out of summary.json (and shows as "-" in the tables).

Exit status: 0 if every section had all its inputs, 1 otherwise, 2 on bad
usage. Figures need matplotlib (Debian's python3-matplotlib, Agg backend).
"""

import csv
import glob
import json
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after selecting the backend)

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
    """A summary entry, or None if either figure is missing."""
    if lite is None or native is None or native == 0:
        return None
    return {"lite": round(lite, 4), "native": round(native, 4), "ratio": round(lite / native, 3), "unit": unit}


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


def section_dsm(d, summary):
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
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "dsm.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    plot_dsm(d, faults, raw, apps)
    return ok


def finish(fig, ax, labels, ylabel, what, path, rotation=0):
    """Labels, title and legend of a bar chart; saves it to PATH."""
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=rotation)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{what} ({WHERE})", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(path)


def plot_dsm(d, faults, raw, apps):
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


def num(row, key):
    return None if row is None or row.get(key) in (None, "", "-") else float(row[key])


def section_mapreduce(d, summary):
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
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "mapreduce.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    plot_mapreduce(d, keys, lite, mpi, serial)
    return ok


def plot_mapreduce(d, keys, lite, mpi, serial):
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


def section_core(d, summary):
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
        if calls is not None:
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
        if cpu is not None:
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


def section_breakdown(d, summary):
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
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "rpc_breakdown.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    return bool(rows)


# ---- sendfile ---------------------------------------------------------------

SF_WAYS = [("native_reg", "native, reg/req"), ("native_cache", "native, cached"), ("copy", "read+write"),
           ("sendfile", "LITE_sendfile"), ("nfs", "NFS/RDMA")]


def human(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def section_sendfile(d, summary):
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
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "sendfile.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    plot_sendfile(d, sorted(by), mbs)
    return all(summary[k] is not None for k in ("sendfile_64k", "sendfile_64m", "sendfile_vs_copy_64k",
                                                 "sendfile_vs_nfsrdma"))


def plot_sendfile(d, sizes, mbs):
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


def section_isolation(d, summary):
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
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "isolation.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    return all(summary[k] is not None for k in ISO_KEYS)


SECTIONS = {"dsm": section_dsm, "mapreduce": section_mapreduce, "core": section_core,
            "breakdown": section_breakdown, "sendfile": section_sendfile, "isolation": section_isolation}


def main(argv):
    if len(argv) < 3 or any(s not in SECTIONS for s in argv[2:]):
        print(f"usage: report.py DIR SECTION... (sections: {', '.join(SECTIONS)})", file=sys.stderr)
        return 2
    d = argv[1]
    path = os.path.join(d, "summary.json")
    summary = {}
    if os.path.exists(path):
        with open(path) as f:
            summary = json.load(f)
    ok = True
    for s in argv[2:]:
        fresh = {}
        ok = SECTIONS[s](d, fresh) and ok
        for k, v in fresh.items():
            summary.pop(k, None)
            if v is not None:
                summary[k] = v
    with open(path + ".part", "w") as f:
        json.dump(summary, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(path + ".part", path)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
