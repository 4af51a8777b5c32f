#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside a lite-vm guest (make bench): lite against native verbs on the
# same Soft-RoCE device in the same guest run.
#
# Brings up two lite nodes on rxe0 (the first instance is node 1, the
# manager; the second joins as node 2) and runs the programs of each
# section, which write their raw CSVs to $LITE_OUT. This script only runs
# them: after each section benchmarks/report.py makes its tables (printed
# and written to $LITE_OUT as NAME.txt and NAME.csv, with any joined CSVs
# and figures) from the raw CSVs, and at the end the summary.json keys;
# benchmarks/plot.py draws the other sections' figures from the CSVs.
# The sections:
#
#   latency      LITE_write/LITE_read (lite-lat, node 1 to an LMR on node 2)
#                against RDMA WRITE/READ (native-lat, an RC connection from
#                rxe0 to itself through librdmacm); then the copy path
#                against the zero-copy path (appended to latency.txt)
#   rpc          RPC round trips, request and echoed reply of each size:
#                lite-rpc (node 1 calls an echo server on node 2) against
#                native-rpc (RDMA WRITE WITH IMMEDIATE both ways)
#   rpc_tput     calls per second from 1, 2, 4 client threads, same two
#   cq_modes     for each completion-delivery mode (litectl up --cq MODE):
#                lite-rpc and lite-lat latency against native; the nodes are
#                brought up again in each mode, and in the default mode at
#                the end
#   rpc_breakdown
#                one 8-byte call taken apart: lite-rpc under ftrace events
#                in softirq and poll mode; report.py breakdown makes the
#                table (wake-up, rxe, CQ handling, the rest per call)
#   ops          the transport's own latency by operation (send, write,
#                write-imm, read, fetch-add, cmp-swap) and size (native-ops,
#                both poll modes), and perftest's ib_write_lat, ib_read_lat
#                and ib_atomic_lat: the ceiling, beside lite-lat's rows
#   first_op     time from a fresh process's start to its first completed
#                8-byte remote write (first-op): lite (LITE_open, LITE_alloc,
#                LITE_write) against native (rdma_cm, PD, CQ, QP, MR,
#                connect, RDMA WRITE)
#   reg          making memory usable (reg-cost): LITE_alloc + LITE_free
#                on node 2 against ibv_reg_mr + ibv_dereg_mr, by size
#   mr_scale     MR scalability (mr-scale): writes per second of random
#                64 B and 1 KB writes, one outstanding at a time, into one
#                region of 1 MiB to 4 GiB and into 1 to 10,000 regions of
#                64 KiB: lite (one LMR per region on node 2, LITE_write)
#                against native (one MR per region, RDMA WRITE), with the
#                time to set the regions up; the programs run one after
#                another, so only one of them holds the memory at a time
#   async        throughput with 1..64 operations in flight (async-tput):
#                lite::Ring over io_uring and one blocking ioctl per thread
#                against native verbs with that many WRs outstanding
#   isolation    the cost of isolation (docs/security.md): the nodes brought
#                up in global mode, then in lmr mode (litectl up
#                --isolation MODE), each running lite-lat (write, read),
#                async-tput (lite ring, 4 KiB, queue depth 1 and 32),
#                lite-rpc (8 B and 4 KiB calls) and reg-cost (LITE_alloc +
#                LITE_free by size, with leases and with leases off:
#                every allocation a request to the memory node, the
#                registration on its path), and with a third node in the
#                same mode dsm-lat (the kernel DSM's fault latency: a page
#                frame's registration is on the first fault's path in lmr
#                mode); report.py isolation makes the table
#                (lmr over global) and the iso_* summary keys; the nodes
#                come back up in the default mode
#   dsm          with a third node: DSM fault latency, kernel and user
#                level, against one raw 4 KiB LITE_read (dsm-lat); the
#                three DSM programs (dsm-apps) on the kernel DSM, the
#                user-level DSM and local memory, and their Global Arrays
#                peer (dsm-apps-ga under mpirun); tables, CSVs, figures and
#                summary.json keys by benchmarks/report.py
#   mapreduce    with the third node: lite-MapReduce (lite-mr, a master
#                and one worker per node) against MapReduce-MPI (mr-mpi
#                under mpirun, as many ranks) and the single-process
#                baseline (lite-mr serial) on the inputs of make mr-data:
#                word count at 16, 64 and 256 MiB and on GCIDE, byte
#                histogram at 256 MiB, inverted index over 64 files; 1, 2
#                and 3 processes for word count at 256 MiB. Every run's
#                output is compared byte for byte with the others'.
#                report.py makes the tables, CSVs, figure and summary keys
#
# The headline figures of rpc, rpc_tput, latency, ops, async, first_op and
# reg go into summary.json too (report.py core, after the last section).
#
# Every native measurement is made in both of the native programs' poll
# modes: busy (ibv_poll_cq in a loop) and event (sleeping on a completion
# channel). Busy polling from user space is the fastest way on real
# hardware, but Soft-RoCE does its work in the kernel on the same vCPUs, so
# here a busy poller can starve the device it waits for. Each table shows
# both and divides lite's number by the better of the two for that row (the
# lower latency, the higher throughput), naming the mode it was; with one of
# them missing, the ratio is "-".
#
# Environment: BUILD (default build/meson), BENCH_ITERS (1000),
# BENCH_WARMUP (100), BENCH_SIZES (8,64,512,4096,32768), BENCH_ZSIZES,
# BENCH_ZITERS (300), BENCH_RPC_ITERS (BENCH_ITERS), BENCH_RPC_SIZES
# (8,64,512,4096,32768,65536), BENCH_TPUT_THREADS (1,2,4), BENCH_TPUT_SIZE
# (64), BENCH_TPUT_SECONDS (3), BENCH_CQ_MODES ("busy softirq workqueue
# adaptive poll"), BENCH_CQ_ITERS (BENCH_ITERS), BENCH_CQ_SIZES (8,4096),
# BENCH_OPS_ITERS (500), BENCH_OPS_SIZES (BENCH_SIZES), BENCH_FIRST_RUNS
# (20), BENCH_REG_SIZES (4K,64K,1M,16M,256M,1G), BENCH_MR_SIZES
# (1M,16M,256M,1G,4G), BENCH_MR_REGIONS (1,10,100,1000,10000),
# BENCH_MR_REGION_SIZE (64K), BENCH_MR_LENS (64,1024), BENCH_MR_SECONDS (2),
# BENCH_ASYNC_QDS (1,2,4,8,16,32,64), BENCH_ASYNC_LEN (64),
# BENCH_ASYNC_SECONDS (1), BENCH_DSM_RUNS (300), BENCH_DSM_APP_RUNS (3),
# BENCH_DSM_THREADS (4), LITE_ADDR (10.99.0.1), LITE_RXE (rxe0),
# LITE_OUT (/tmp).
# BENCH_ONLY: the sections to run, by the names above, separated by spaces
# (default: all of them, in the order above); the nodes are brought up
# whatever it says.
# Exit status 0 only if every measurement ran and passed its checks; a
# program that fails contributes no numbers ("-" in the tables).
set -euo pipefail

build=${BUILD:-build/meson}
litectl=$build/tools/litectl/litectl
native=$build/benchmarks/native-lat
lite=$build/benchmarks/lite-lat
native_rpc=$build/benchmarks/native-rpc
lite_rpc=$build/benchmarks/lite-rpc
lite_rpc_ring=$build/benchmarks/lite-rpc-ring
native_ops=$build/benchmarks/native-ops
first_op=$build/benchmarks/first-op
reg_cost=$build/benchmarks/reg-cost
mr_scale=$build/benchmarks/mr-scale
async_tput=$build/benchmarks/async-tput
sendfile_bench=$build/benchmarks/sendfile-bench
dsm_lat=$build/benchmarks/dsm-lat
dsm_apps=$build/benchmarks/dsm-apps
dsm_apps_ga=$build/benchmarks/dsm-apps-ga
lite_mr=$build/mapreduce/lite-mr
mr_mpi=$build/benchmarks/mr-mpi
iters=${BENCH_ITERS:-1000}
warmup=${BENCH_WARMUP:-100}
sizes=${BENCH_SIZES:-8,64,512,4096,32768}
addr=${LITE_ADDR:-10.99.0.1}
dev=${LITE_RXE:-rxe0}
out=${LITE_OUT:-/tmp}
opts=(--iters "$iters" --warmup "$warmup" --sizes "$sizes")
kver=$(uname -r)

say() { echo "bench: $*" >&2; }

# The sections (each a table, NAME.txt and NAME.csv); want NAME: whether
# BENCH_ONLY asks for it. The sections' code below is not indented under
# its "if want NAME" guard.
sections="latency rpc rpc_tput cq_modes rpc_breakdown ops first_op reg mr_scale async sendfile isolation dsm mapreduce"
only=${BENCH_ONLY:-$sections}
for s in $only; do
	[[ " $sections " == *" $s "* ]] || { say "BENCH_ONLY: no section '$s' (there are: $sections)"; exit 2; }
done
want() { [[ " $only " == *" $1 "* ]]; }

for f in "$litectl" "$native" "$native_rpc" "$lite_rpc" "$native_ops" "$first_op" "$reg_cost" "$mr_scale" \
	"$async_tput" "$sendfile_bench" "$dsm_lat" "$dsm_apps" "$dsm_apps_ga" "$lite_mr" "$mr_mpi"; do
	[ -x "$f" ] || { say "$f not built (make user)"; exit 1; }
done

work=$(mktemp -d)
up=()
# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() {
	local i
	for ((i = ${#up[@]} - 1; i >= 0; i--)); do
		"$litectl" down -i "${up[$i]}" >&2 || say "litectl down -i ${up[$i]} failed"
	done
	rm -rf "$work"
}
trap cleanup EXIT

# The nodes: client_inst is the instance of node 1 (the manager), where
# lite-lat and lite-rpc's client run; server_inst and server_node are the
# joining node's (the LMR and the RPC server are there).
client_inst='' server_inst='' server_node=''

# nodes_up [--cq MODE]: brings up the two nodes, noting their instances.
nodes_up() {
	local line re='^instance ([0-9]+): node ([0-9]+)'
	line=$("$litectl" up --dev "$dev" --listen "$addr:18515" --secret-file "$work/secret" "$@") || return 1
	echo "$line" >&2
	[[ $line =~ $re ]] || { say "cannot read the instance from litectl up: $line"; return 1; }
	client_inst=${BASH_REMATCH[1]}
	up+=("$client_inst")
	line=$("$litectl" up --dev "$dev" --listen "$addr:18516" --secret-file "$work/secret" \
		--join "$addr:18515" "$@") || return 1
	echo "$line" >&2
	[[ $line =~ $re ]] || { say "cannot read the instance from litectl up: $line"; return 1; }
	server_inst=${BASH_REMATCH[1]}
	server_node=${BASH_REMATCH[2]}
	up+=("$server_inst")
}

# nodes_in OPTION MODE LINE: bring the nodes up again with "OPTION MODE"
# (--cq, --isolation) and check that both report "LINE: MODE" in litectl
# status; on failure say so, count it (failed, rc) and return 1.
nodes_in() {
	local opt=$1 mode=$2 line=$3 i ok=1 status
	say "$line $mode: restarting the nodes with $opt $mode"
	if ! nodes_down || ! nodes_up "$opt" "$mode"; then
		say "FAILED: could not bring the nodes up with $opt $mode: no numbers for it"
		failed+=("litectl up $opt $mode")
		rc=1
		return 1
	fi
	for i in "$client_inst" "$server_inst"; do
		status=$("$litectl" status -i "$i") || status=''
		echo "$status" >&2
		if ! grep -q "$line: $mode\$" <<<"$status"; then
			say "FAILED: instance $i does not report $line $mode"
			ok=0
		fi
	done
	if [ "$ok" -eq 0 ]; then
		failed+=("$line $mode not in effect")
		rc=1
		return 1
	fi
}

# nodes_down: takes the nodes this script brought up down, newest first.
nodes_down() {
	while [ ${#up[@]} -gt 0 ]; do
		"$litectl" down -i "${up[-1]}" >&2 || { say "litectl down -i ${up[-1]} failed"; return 1; }
		unset 'up[-1]'
	done
}

# run_to FILE CMD...: CMD's stdout (CSV) into FILE. If CMD fails, FILE is
# left empty, so that no number of a failed run reaches a table, and rc=1.
failed=()
run_to() {
	local file=$1 st=0
	shift
	"$@" >"$file.part" || st=$?
	if [ "$st" -eq 0 ]; then
		mv "$file.part" "$file"
		return 0
	fi
	rm -f "$file.part"
	: >"$file"
	say "FAILED (exit $st): $*"
	failed+=("${1##*/} (${file##*/})")
	rc=1
	return 1
}

# report NAME [SETTING=VALUE...]: benchmarks/report.py's section NAME makes
# its tables (NAME.txt), CSVs, figures and summary.json keys from the raw
# CSVs in $out; the settings are the run's that its tables name (run_info:
# the kernel and the device, for all of the joins). This script only runs
# the programs. Debian's python3 first, which has matplotlib. A failure
# counts as a failed run.
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
run_info=(kver="$kver" dev="$dev")
report() {
	"$py" "$(dirname "$0")/report.py" "$out" "$@" >/dev/null || { say "FAILED: report.py $1"; rc=1; }
}
# show NAME: prints the table NAME.txt, if report.py could make it (a
# failure there must not end the run).
show() {
	if [ -f "$out/$1.txt" ]; then cat "$out/$1.txt"; fi
}

head -c 32 /dev/urandom | base64 >"$work/secret"
say "bringing up 2 lite nodes on $dev ($addr:18515, $addr:18516)"
nodes_up

rc=0
# A third node for the sections that need one (dsm, mapreduce): joins as
# node 3, its instance in third_inst; third_down takes it down again.
third_up() {
	local re='^instance ([0-9]+): node ([0-9]+)' line
	line=$("$litectl" up --dev "$dev" --listen "$addr:18517" --secret-file "$work/secret" --join "$addr:18515" "$@")
	echo "$line" >&2
	[[ $line =~ $re ]] || { say "cannot read the instance from litectl up: $line"; exit 1; }
	third_inst=${BASH_REMATCH[1]}
	up+=("$third_inst")
}
third_down() {
	"$litectl" down -i "$third_inst" >&2 || { say "litectl down -i $third_inst failed"; rc=1; }
	unset 'up[-1]'
}

if want latency; then
say "native verbs: $native (--poll busy, then --poll event)"
run_to "$out/native.csv" "$native" --addr "$addr" --poll busy "${opts[@]}" || true
run_to "$out/native-event.csv" "$native" --addr "$addr" --poll event "${opts[@]}" || true
if [ -x "$lite" ]; then
	say "lite: $lite (instance $client_inst = node 1, LMR on node $server_node)"
	run_to "$out/lite.csv" "$lite" --instance "$client_inst" --node "$server_node" --lmr-size 65536 "${opts[@]}" ||
		true
else
	say "$lite not built (liblite has no C API yet?): no lite numbers"
	rc=1
	: >"$out/lite.csv"
	rm -f "$out/copy.csv" "$out/zcopy.csv" "$out/kept.csv"
fi

# Where zero copy starts to pay for buffers the kernel does not keep
# pinned: the copy path (kernel buffer) against the zero-copy path (user
# pages pinned for the call) per size, with pin_cache_kb 0; the kernel
# switches at zcopy_min_kb (module parameter, lite_kmod/params.c), chosen
# from this table. Then the default path with pin_cache_kb back (kept.csv):
# the pages of the benchmark's one buffer kept pinned between calls.
if [ -x "$lite" ]; then
	zsizes=${BENCH_ZSIZES:-4096,8192,16384,32768,65536,262144,1048576}
	zopts=(--iters "${BENCH_ZITERS:-300}" --warmup 30 --sizes "$zsizes")
	pin_param=/sys/module/lite/parameters/pin_cache_kb
	pin_kb=$(cat "$pin_param")
	say "copy vs zero copy: $zsizes (pin_cache_kb 0), then pages kept pinned (pin_cache_kb $pin_kb)"
	echo 0 >"$pin_param"
	run_to "$out/copy.csv" "$lite" --instance "$client_inst" --node "$server_node" --lmr-size 1048576 \
		--path copy "${zopts[@]}" || true
	run_to "$out/zcopy.csv" "$lite" --instance "$client_inst" --node "$server_node" --lmr-size 1048576 \
		--path zcopy "${zopts[@]}" || true
	echo "$pin_kb" >"$pin_param"
	run_to "$out/kept.csv" "$lite" --instance "$client_inst" --node "$server_node" --lmr-size 1048576 \
		"${zopts[@]}" || true
fi
# The table joins the three latency CSVs on op (less native-lat's -event
# suffix) and size; the copy path against zero copy and kept pages
# (copy.csv, zcopy.csv, kept.csv, if lite-lat ran them) follows it in
# latency.txt, with zcopy-threshold.csv.
report latency "${run_info[@]}" iters="$iters" warmup="$warmup"
show latency
fi # latency

if want rpc; then
# RPC latency: native-rpc against lite-rpc, one call at a time per size.
rpc_iters=${BENCH_RPC_ITERS:-$iters}
rpc_sizes=${BENCH_RPC_SIZES:-8,64,512,4096,32768,65536}
rpc_opts=(--mode lat --iters "$rpc_iters" --warmup "$warmup" --sizes "$rpc_sizes")
say "RPC latency, native: $native_rpc (--poll busy, then --poll event)"
run_to "$out/native-rpc.csv" "$native_rpc" --addr "$addr" --poll busy "${rpc_opts[@]}" || true
run_to "$out/native-rpc-event.csv" "$native_rpc" --addr "$addr" --poll event "${rpc_opts[@]}" || true
say "RPC latency, lite: $lite_rpc (node 1 calls node $server_node)"
run_to "$out/lite-rpc.csv" "$lite_rpc" --client-instance "$client_inst" --server-instance "$server_inst" \
	"${rpc_opts[@]}" || true

# The table joins the three CSVs on size.
report rpc "${run_info[@]}" iters="$rpc_iters" warmup="$warmup"
show rpc
fi # rpc

if want rpc_tput; then
# RPC throughput: calls per second from each number of client threads.
tput_threads=${BENCH_TPUT_THREADS:-1,2,4}
tput_size=${BENCH_TPUT_SIZE:-64}
tput_secs=${BENCH_TPUT_SECONDS:-3}
tput_opts=(--mode tput --threads "$tput_threads" --size "$tput_size" --seconds "$tput_secs")
say "RPC throughput, native: $native_rpc ${tput_opts[*]} (--poll busy, then --poll event)"
run_to "$out/native-rpc-tput.csv" "$native_rpc" --addr "$addr" --poll busy "${tput_opts[@]}" || true
run_to "$out/native-rpc-tput-event.csv" "$native_rpc" --addr "$addr" --poll event "${tput_opts[@]}" || true
say "RPC throughput, lite: $lite_rpc ${tput_opts[*]}"
run_to "$out/lite-rpc-tput.csv" "$lite_rpc" --client-instance "$client_inst" --server-instance "$server_inst" \
	"${tput_opts[@]}" || true
ring_depth=${BENCH_RING_DEPTH:-32}
say "RPC throughput, lite on io_uring: $lite_rpc_ring --depth $ring_depth --threads $tput_threads"
run_to "$out/lite-rpc-tput-ring.csv" "$lite_rpc_ring" --client-instance "$client_inst" \
	--server-instance "$server_inst" --depth "$ring_depth" --threads "$tput_threads" --size "$tput_size" \
	--seconds "$tput_secs" || true

# The table joins the four CSVs on threads.
report rpc_tput "${run_info[@]}" size="$tput_size" secs="$tput_secs" depth="$ring_depth"
show rpc_tput
fi # rpc_tput

if want cq_modes; then
# Completion delivery: the nodes brought up again in each mode; lite-rpc at
# a small and a page-sized call and lite-lat at 8 bytes, against native runs
# made once here in both poll modes (native code does not depend on lite's
# mode).
cq_modes=${BENCH_CQ_MODES:-busy softirq workqueue adaptive poll}
cq_iters=${BENCH_CQ_ITERS:-$iters}
cq_sizes=${BENCH_CQ_SIZES:-8,4096}
cq_opts=(--iters "$cq_iters" --warmup "$warmup")
say "completion modes ($cq_modes): native baseline (--poll busy, then --poll event)"
run_to "$out/cq-native-rpc.csv" "$native_rpc" --addr "$addr" --poll busy --mode lat "${cq_opts[@]}" \
	--sizes "$cq_sizes" || true
run_to "$out/cq-native-lat.csv" "$native" --addr "$addr" --poll busy "${cq_opts[@]}" --sizes 8 || true
run_to "$out/cq-native-rpc-event.csv" "$native_rpc" --addr "$addr" --poll event --mode lat "${cq_opts[@]}" \
	--sizes "$cq_sizes" || true
run_to "$out/cq-native-lat-event.csv" "$native" --addr "$addr" --poll event "${cq_opts[@]}" --sizes 8 || true
for mode in $cq_modes; do
	: >"$out/cq-$mode-rpc.csv"
	: >"$out/cq-$mode-lat.csv"
	nodes_in --cq "$mode" "completion mode" || continue
	run_to "$out/cq-$mode-rpc.csv" "$lite_rpc" --client-instance "$client_inst" --server-instance "$server_inst" \
		--mode lat "${cq_opts[@]}" --sizes "$cq_sizes" || true
	run_to "$out/cq-$mode-lat.csv" "$lite" --instance "$client_inst" --node "$server_node" --lmr-size 65536 \
		"${cq_opts[@]}" --sizes 8 || true
done
say "leaving the nodes in the default completion mode"
if ! nodes_down || ! nodes_up; then
	say "FAILED: could not bring the nodes up again in the default mode"
	failed+=("litectl up (default mode)")
	rc=1
fi

# The table: every run's rows gathered in cq-all.csv (mode,op,size,median,
# p99; native first, as modes native-busy and native-event), each lite mode
# against native by op and size.
report cq_modes "${run_info[@]}" iters="$cq_iters" warmup="$warmup" modes="$cq_modes"
show cq_modes
fi # cq_modes

if want rpc_breakdown; then
# Where the time of an 8-byte call goes: lite-rpc traced with ftrace events
# (ioctl entry and exit, sched_waking and sched_switch, softirq entry and
# exit) in softirq mode (the old default) and poll mode (the new one);
# report.py breakdown splits each round trip into wake-up, rxe (the wire:
# its tasklets), CQ-handler and the rest (lite and the system calls).
bd_modes=${BENCH_BD_MODES:-softirq poll}
bd_iters=${BENCH_BD_ITERS:-300}
tr=/sys/kernel/tracing
[ -d "$tr/events" ] || mount -t tracefs nodev "$tr" 2>/dev/null || true
bd_events=(sched/sched_waking sched/sched_switch syscalls/sys_enter_ioctl syscalls/sys_exit_ioctl
	irq/softirq_entry irq/softirq_exit)
trace_set() { # 0|1: the events off or on
	local e
	for e in "${bd_events[@]}"; do
		echo "$1" >"$tr/events/$e/enable" || return 1
	done
}
for mode in $bd_modes; do
	: >"$out/trace-$mode.txt"
	if [ ! -w "$tr/trace" ]; then
		say "FAILED: no tracefs at $tr: no breakdown"
		failed+=("tracefs")
		rc=1
		break
	fi
	say "RPC breakdown, $mode: restarting the nodes with --cq $mode, tracing $bd_iters calls of 8 bytes"
	if ! nodes_down || ! nodes_up --cq "$mode"; then
		say "FAILED: could not bring the nodes up with --cq $mode"
		failed+=("litectl up --cq $mode (breakdown)")
		rc=1
		continue
	fi
	echo 0 >"$tr/tracing_on"
	echo nop >"$tr/current_tracer"
	echo 32768 >"$tr/buffer_size_kb"
	echo >"$tr/trace"
	trace_set 1 && echo 1 >"$tr/tracing_on"
	run_to "$out/bd-$mode-rpc.csv" "$lite_rpc" --client-instance "$client_inst" --server-instance "$server_inst" \
		--mode lat --iters "$bd_iters" --warmup 20 --sizes 8 || true
	echo 0 >"$tr/tracing_on"
	trace_set 0
	cp "$tr/trace" "$out/trace-$mode.txt"
	echo >"$tr/trace"
	echo 1408 >"$tr/buffer_size_kb"
done
if [ -n "$bd_modes" ] && ! { nodes_down && nodes_up; }; then
	say "FAILED: could not bring the nodes up again in the default mode"
	failed+=("litectl up (default mode)")
	rc=1
fi
report breakdown
show rpc_breakdown
fi # rpc_breakdown

if want ops; then
# lite's latency by operation comes from the latency section (lite-lat).
lite_csv=''
if want latency; then lite_csv=lite.csv; fi
# The transport's ceiling: native verbs latency by operation and size.
ops_iters=${BENCH_OPS_ITERS:-500}
ops_sizes=${BENCH_OPS_SIZES:-$sizes}
ops_warmup=$((warmup < ops_iters ? warmup : ops_iters))
ops_opts=(--iters "$ops_iters" --warmup "$ops_warmup" --sizes "$ops_sizes")
say "native verbs by operation: $native_ops (--poll busy, then --poll event)"
run_to "$out/native-ops.csv" "$native_ops" --addr "$addr" --poll busy "${ops_opts[@]}" || true
run_to "$out/native-ops-event.csv" "$native_ops" --addr "$addr" --poll event "${ops_opts[@]}" || true

# perftest's own latency tools, as users know them, on the same device
# (rdma_cm, one process each side): write and read of 8 bytes and
# ib_atomic_lat's fetch-and-add. report.py perftest-row turns each tool's
# output into its row of perftest.csv (op,size,iters,median_us,p99_us,
# mean_us; t_typical is the median) and fails unless it has one result.
perftest_lat() { # tool op size
	local tool=$1 op=$2 size=$3 port=19990 srv st=0
	local args=(-R -d "$dev" -n "$ops_iters" -p "$port" -F)
	[ "$op" = fetch-add ] || args+=(-s "$size")
	timeout 180 "$tool" "${args[@]}" >/dev/null 2>&1 &
	srv=$!
	sleep 2
	# shellcheck disable=SC2094 # both only append to the log
	timeout 120 "$tool" "${args[@]}" "$addr" 2>>"$out/perftest.log" | tee -a "$out/perftest.log" |
		"$py" "$(dirname "$0")/report.py" perftest-row "$op" "$size" || st=1
	wait "$srv" 2>/dev/null || st=1
	return "$st"
}
if command -v ib_write_lat >/dev/null && command -v ib_atomic_lat >/dev/null; then
	say "perftest: ib_write_lat, ib_read_lat (8 B), ib_atomic_lat (fetch-and-add)"
	echo "op,size,iters,median_us,p99_us,mean_us" >"$out/perftest.csv"
	: >"$out/perftest.log"
	for t in "ib_write_lat write 8" "ib_read_lat read 8" "ib_atomic_lat fetch-add 8"; do
		# shellcheck disable=SC2086 # three words: tool, op, size
		if ! perftest_lat $t >>"$out/perftest.csv"; then
			say "FAILED: perftest ${t%% *} (see perftest.log)"
			failed+=("${t%% *}")
			rc=1
		fi
	done
else
	say "FAILED: perftest (ib_write_lat, ib_atomic_lat) is not installed"
	failed+=("perftest")
	rc=1
	echo "op,size,iters,median_us,p99_us,mean_us" >"$out/perftest.csv"
fi

# The table joins the two CSVs on op (less the -event suffix) and size,
# with perftest's and lite-lat's rows beside them; ops.csv has native-ops'
# rows as they are (busy, then event with their -event ops). native-ops
# leaves an operation that failed (the atomics, if the device refuses them)
# out of its CSV and says so on stderr: its rows are then missing here, and
# the table says so.
report ops "${run_info[@]}" iters="$ops_iters" warmup="$ops_warmup" lite="$lite_csv"
show ops
fi # ops

if want first_op; then
# Time to the first operation, lite against native, in fresh processes.
first_runs=${BENCH_FIRST_RUNS:-20}
say "time to first operation: $first_op, $first_runs runs each (native, then lite on node $server_node)"
run_to "$out/first-op-native.csv" "$first_op" --mode native --runs "$first_runs" --addr "$addr" || true
run_to "$out/first-op-lite.csv" "$first_op" --mode lite --runs "$first_runs" --instance "$client_inst" \
	--node "$server_node" || true

# The table joins the two one-row CSVs; first_op.csv has both rows, the
# lite one with the ratio.
report first_op "${run_info[@]}" runs="$first_runs"
show first_op
fi # first_op

if want reg; then
# Making memory usable: registration against LITE_alloc, by size.
reg_sizes=${BENCH_REG_SIZES:-4K,64K,1M,16M,256M,1G}
say "registration cost: $reg_cost --sizes $reg_sizes (LMRs on node $server_node)"
run_to "$out/reg-cost.csv" "$reg_cost" --addr "$addr" --instance "$client_inst" --node "$server_node" \
	--sizes "$reg_sizes" || true

# The table: reg-cost's CSV (size, then reg, dereg, alloc, free back to
# back, then the same paced; "-" for a side skipped on ENOMEM or not paced)
# with the ratios added.
report reg "${run_info[@]}" node="$server_node"
show reg
fi # reg
if want mr_scale; then
# MR scalability: random writes into one region of growing size and into a
# growing number of regions, native (one MR per region, both poll modes)
# against lite (one LMR per region on node 2), one write outstanding at a
# time. The programs run one after another and free every point's memory
# before the next point, so the largest (4 GiB) is held once, on one side.
mr_sizes=${BENCH_MR_SIZES:-1M,16M,256M,1G,4G}
mr_regions=${BENCH_MR_REGIONS:-1,10,100,1000,10000}
mr_region_size=${BENCH_MR_REGION_SIZE:-64K}
mr_lens=${BENCH_MR_LENS:-64,1024}
mr_secs=${BENCH_MR_SECONDS:-2}
mr_start=$SECONDS
for sweep in memory regions; do
	if [ "$sweep" = memory ]; then
		mr_opts=(--sweep memory --sizes "$mr_sizes")
	else
		mr_opts=(--sweep regions --regions "$mr_regions" --region-size "$mr_region_size")
	fi
	mr_opts+=(--lens "$mr_lens" --seconds "$mr_secs")
	say "MR scalability, $sweep sweep: $mr_scale ${mr_opts[*]} (native --poll busy, --poll event, lite on node $server_node)"
	run_to "$out/mr-$sweep-native.csv" "$mr_scale" --mode native --addr "$addr" --poll busy "${mr_opts[@]}" || true
	run_to "$out/mr-$sweep-native-event.csv" "$mr_scale" --mode native --addr "$addr" --poll event "${mr_opts[@]}" ||
		true
	run_to "$out/mr-$sweep-lite.csv" "$mr_scale" --mode lite --instance "$client_inst" --node "$server_node" \
		"${mr_opts[@]}" || true
done
say "MR scalability: $((SECONDS - mr_start)) s"

# The table joins the six CSVs on sweep, regions, region size and write
# size; a point not measured ("-", or a failed program) shows as "-".
report mr_scale "${run_info[@]}" secs="$mr_secs" node="$server_node"
show mr_scale
fi # mr_scale

if want async; then
# Throughput with operations in flight, by queue depth: lite over io_uring,
# lite with one blocking ioctl per thread, native verbs.
async_qds=${BENCH_ASYNC_QDS:-1,2,4,8,16,32,64}
async_len=${BENCH_ASYNC_LEN:-64}
async_secs=${BENCH_ASYNC_SECONDS:-1}
async_opts=(--qd "$async_qds" --len "$async_len" --seconds "$async_secs")
for op in write read; do
	say "async throughput ($op, $async_len B, queue depths $async_qds): $async_tput"
	run_to "$out/async-native-$op.csv" "$async_tput" --mode native --poll busy --op "$op" --addr "$addr" \
		"${async_opts[@]}" || true
	run_to "$out/async-native-event-$op.csv" "$async_tput" --mode native --poll event --op "$op" \
		--addr "$addr" "${async_opts[@]}" || true
	for m in lite-ring lite-ring-poll lite-sync; do
		run_to "$out/async-$m-$op.csv" "$async_tput" --mode "$m" --op "$op" --instance "$client_inst" \
			--node "$server_node" "${async_opts[@]}" || true
	done
done

# The table: async-tput's rows of every run, gathered in async-all.csv,
# joined on op and queue depth; async.csv has the table with the ratios.
report async "${run_info[@]}" len="$async_len" secs="$async_secs"
show async
fi # async

if want sendfile; then
# Files into remote memory (seed 002): native verbs registering the file's
# mapping per request or once, pread + LITE_write, LITE_sendfile, and the
# kernel's NFS over RDMA reading the same files (benchmarks/nfs_rdma.sh
# exports the directory and mounts it over rxe). The files live in this
# guest's tmpfs (the page cache). benchmarks/report.py makes the table and
# the summary keys.
sf_sizes=${BENCH_SF_SIZES:-4K,16K,64K,256K,1M,4M,16M,64M}
sf_dir=/tmp/lite-sendfile sf_mnt=/tmp/lite-sendfile-nfs
mkdir -p "$sf_dir"
nfs_opt=()
if LITE_ADDR=$addr "$(dirname "$0")/nfs_rdma.sh" up "$sf_dir" "$sf_mnt"; then
	nfs_opt=(--nfs "$sf_mnt")
else
	say "FAILED: NFS over RDMA did not come up: no anchor column"
	failed+=("nfs_rdma.sh (sendfile.csv, nfs)")
	rc=1
fi
say "sendfile ($sf_sizes, LMR on node $server_node): $sendfile_bench"
run_to "$out/sendfile-raw.csv" "$sendfile_bench" --dir "$sf_dir" "${nfs_opt[@]}" --addr "$addr" \
	--instance "$client_inst" --node "$server_node" --sizes "$sf_sizes" || true
if [ ${#nfs_opt[@]} -gt 0 ]; then
	LITE_ADDR=$addr "$(dirname "$0")/nfs_rdma.sh" down "$sf_dir" "$sf_mnt" ||
		{ say "FAILED: nfs_rdma.sh down"; rc=1; }
fi
rm -rf "$sf_dir"
report sendfile
show sendfile
fi # sendfile

if want isolation; then
# The same lite programs with the nodes in each isolation mode, the modes
# taking turns for BENCH_ISO_ROUNDS rounds (this host drifts by more than
# the difference between the modes within minutes); each round's rows go
# to iso-MODE-rN-*.csv, report.py isolation takes the median over rounds.
iso_sizes=${BENCH_ISO_SIZES:-8,64,512,4096,32768}
iso_reg_sizes=${BENCH_ISO_REG_SIZES:-4K,64K,1M,16M}
iso_qds=${BENCH_ISO_QDS:-1,32}
rm -f "$out"/iso-*.csv
for round in $(seq 1 "${BENCH_ISO_ROUNDS:-3}"); do
for mode in global lmr; do
	p="$out/iso-$mode-r$round"
	for f in lat rpc tput-write tput-read reg reg-nolease dsm; do : >"$p-$f.csv"; done
	nodes_in --isolation "$mode" "isolation" || continue
	run_to "$p-lat.csv" "$lite" --instance "$client_inst" --node "$server_node" --lmr-size 65536 \
		--iters "$iters" --warmup "$warmup" --sizes "$iso_sizes" || true
	run_to "$p-rpc.csv" "$lite_rpc" --client-instance "$client_inst" --server-instance "$server_inst" \
		--mode lat --iters "$iters" --warmup "$warmup" --sizes 8,4096 || true
	for op in write read; do
		run_to "$p-tput-$op.csv" "$async_tput" --mode lite-ring --op "$op" --instance "$client_inst" \
			--node "$server_node" --qd "$iso_qds" --len 4096 --seconds "${BENCH_ASYNC_SECONDS:-1}" || true
	done
	run_to "$p-reg.csv" "$reg_cost" --addr "$addr" --instance "$client_inst" --node "$server_node" \
		--sizes "$iso_reg_sizes" || true
	# Every allocation a request to the memory node (registration on the
	# path in lmr mode): leases off for this run.
	lease_param=/sys/module/lite/parameters/lease_kb
	lease_kb=$(cat "$lease_param")
	echo 0 >"$lease_param"
	run_to "$p-reg-nolease.csv" "$reg_cost" --addr "$addr" --instance "$client_inst" \
		--node "$server_node" --sizes 4K,64K,1M --iters "${BENCH_ISO_ALLOC_ITERS:-100}" || true
	echo "$lease_kb" >"$lease_param"
	third_up --isolation "$mode"
	run_to "$p-dsm.csv" "$dsm_lat" --instances "$client_inst,$server_inst,$third_inst" \
		--runs "${BENCH_ISO_DSM_RUNS:-100}" || true
	third_down
done
done
say "leaving the nodes in the default isolation mode"
if ! nodes_down || ! nodes_up; then
	say "FAILED: could not bring the nodes up again in the default mode"
	failed+=("litectl up (default isolation)")
	rc=1
fi
report isolation
show isolation
fi # isolation

if want dsm; then
# The DSM, on three nodes (the two above and a third that joins for this
# section): fault latency against one raw 4 KiB read, and the three
# programs on the kernel DSM, the user-level DSM, plain local memory and
# their Global Arrays peer (Open MPI over TCP, one rank per node, in this
# guest). benchmarks/report.py makes the tables, CSVs, figures and the
# summary.json keys.
dsm_runs=${BENCH_DSM_RUNS:-300}
dsm_app_runs=${BENCH_DSM_APP_RUNS:-3}
dsm_threads=${BENCH_DSM_THREADS:-4}
third_up
three="$client_inst,$server_inst,$third_inst"
say "DSM fault latency ($dsm_runs runs each, instances $three): $dsm_lat"
run_to "$out/dsm-lat.csv" "$dsm_lat" --instances "$three" --runs "$dsm_runs" || true
for b in kernel user local; do
	say "DSM programs on $b ($dsm_app_runs runs, $dsm_threads threads per node): $dsm_apps"
	run_to "$out/dsm-apps-$b.csv" "$dsm_apps" --app all --backend "$b" --instances "$three" \
		--threads "$dsm_threads" --runs "$dsm_app_runs" || true
done
say "DSM programs on Global Arrays (mpirun -np 3, btl tcp,self): $dsm_apps_ga"
run_to "$out/dsm-apps-ga.csv" mpirun --allow-run-as-root --oversubscribe -np 3 --mca btl tcp,self \
	"$dsm_apps_ga" --app all --runs "$dsm_app_runs" || true
third_down
report dsm
show dsm
fi # dsm

if want mapreduce; then
# MapReduce on three nodes (the two above and a third for this section):
# lite-mr (master on node 1, one worker process per node) against mr-mpi
# (mpirun, one rank per lite worker, btl tcp,self, in this guest) and the
# single-process reference (lite-mr serial), on the inputs of make
# mr-data. Each writes every pair to a file; the files must be equal.
mr_data=${BENCH_MR_DATA:-build/mr-data}
mr_page=${BENCH_MR_PAGE_MB:-512}
third_up
insts=("$client_inst" "$server_inst" "$third_inst")
rm -f "$out/mr-lite.csv" "$out/mr-mpi.csv" "$out/mr-serial.csv"
# One job on all three; APP INPUT LABEL PROCS [SERIAL]
mr_job() {
	local app=$1 input=$2 label=$3 procs=$4 serial=${5:-}
	local on res=$work/mr-out st
	on=$(IFS=,; echo "${insts[*]:0:$procs}")
	[ -e "$mr_data/$input" ] || { say "FAILED: $mr_data/$input missing (make mr-data)"; failed+=("mr-data"); rc=1; return; }
	cat "$mr_data/$input" >/dev/null 2>&1 || find "$mr_data/$input" -type f -exec cat {} + >/dev/null
	say "lite-mr $app $label, $procs worker(s): $lite_mr run"
	st=0
	"$lite_mr" run --instance "$client_inst" --spawn-on "$on" --app "$app" --top 0 --output "$res.lite" \
		--stats "$out/mr-lite.csv" --label "$label" "$mr_data/$input" >&2 || st=$?
	[ "$st" -eq 0 ] || { say "FAILED (exit $st): lite-mr $app $label"; failed+=("lite-mr $app $label"); rc=1; }
	say "mr-mpi $app $label, $procs rank(s): mpirun $mr_mpi"
	st=0
	mpirun --allow-run-as-root --oversubscribe -np "$procs" --mca btl tcp,self "$mr_mpi" --app "$app" \
		--page-mb "$mr_page" --label "$label" --output "$res.mpi" "$mr_data/$input" \
		>>"$out/mr-mpi.csv" || st=$?
	[ "$st" -eq 0 ] || { say "FAILED (exit $st): mr-mpi $app $label"; failed+=("mr-mpi $app $label"); rc=1; }
	if [ -n "$serial" ]; then
		say "serial $app $label: $lite_mr serial"
		st=0
		"$lite_mr" serial --app "$app" --top 0 --output "$res.serial" --stats "$out/mr-serial.csv" \
			--label "$label" "$mr_data/$input" >&2 || st=$?
		[ "$st" -eq 0 ] || { say "FAILED (exit $st): serial $app $label"; failed+=("serial $app $label"); rc=1; }
		cmp -s "$res.lite" "$res.serial" ||
			{ say "FAILED: lite-mr and the serial reference differ ($app $label)"; failed+=("mr $app $label"); rc=1; }
	fi
	cmp -s "$res.lite" "$res.mpi" ||
		{ say "FAILED: lite-mr and mr-mpi differ ($app $label)"; failed+=("mr $app $label"); rc=1; }
	rm -f "$res".*
}
mr_job wordcount text-16m.txt 16m 3 serial
mr_job wordcount text-64m.txt 64m 3 serial
mr_job wordcount text-64m.txt 64m 2
mr_job wordcount text-256m.txt 256m 3 serial
mr_job wordcount text-256m.txt 256m 2
mr_job wordcount text-256m.txt 256m 1
mr_job wordcount gcide.txt gcide 3 serial
mr_job histogram bytes-256m.bin 256m 3 serial
mr_job invindex docs-32m docs-32m 3 serial
third_down
report mapreduce
show mapreduce
fi # mapreduce

# The headline figures of the sections above (their tables are made) into
# summary.json: benchmarks/report.py core.
case " $only " in
*" rpc "* | *" rpc_tput "* | *" latency "* | *" ops "* | *" async "* | *" first_op "* | *" reg "*)
	report core
	;;
esac

# The runs that failed: a note on the terminal and under each table.
if [ ${#failed[@]} -gt 0 ]; then
	note="FAILED: $(printf '%s; ' "${failed[@]}")no numbers from these runs (\"-\")"
	echo "$note"
	report failed note="$note" tables="$only"
fi
csvs=''
for t in $only; do
	csvs+="${csvs:+, }$out/$t.csv"
done
say "CSV in $csvs"

# Figures: a PNG next to each CSV (benchmarks/plot.py, python3-matplotlib),
# made after every measurement, with report's python3 ($py).
plot=$(dirname "$0")/plot.py
plotted=0
for t in $only; do
	case $t in dsm | mapreduce | sendfile | isolation) ;; *) plotted=1 ;; esac
done
if [ "$plotted" -eq 0 ]; then
	: # report.py made these sections' tables and figures; plot.py has none of their CSVs
else
say "plotting: $py $plot $out"
if pngs=$("$py" "$plot" "$out"); then
	printf 'figures:\n%s\n' "$pngs"
else
	[ -z "$pngs" ] || printf 'figures (some failed):\n%s\n' "$pngs"
	say "FAILED: plotting ($py $plot $out)"
	rc=1
fi
fi
exit "$rc"
