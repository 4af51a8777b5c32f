#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside a lite-vm guest (make bench): lite against native verbs on the
# same Soft-RoCE device in the same guest run.
#
# Brings up two lite nodes on rxe0 (the first instance is node 1, the
# manager; the second joins as node 2) and measures, each table printed and
# written to $LITE_OUT as .txt and .csv (the raw CSVs of every program stay
# there too):
#
#   latency      LITE_write/LITE_read (lite-lat, node 1 to an LMR on node 2)
#                against RDMA WRITE/READ (native-lat, an RC connection from
#                rxe0 to itself through librdmacm); then the copy path
#                against the zero-copy path (appended to latency.txt)
#   rpc          RPC round trips, request and echoed reply of each size:
#                lite-rpc (node 1 calls an echo server on node 2) against
#                native-rpc (RDMA WRITE WITH IMMEDIATE both ways, busy-polled)
#   rpc_tput     calls per second from 1, 2, 4 client threads, same two
#   cq_modes     for each completion-delivery mode (litectl up --cq MODE):
#                lite-rpc and lite-lat latency against native; the nodes are
#                brought up again in each mode, and in the default mode at
#                the end
#
# Environment: BUILD (default build/meson), BENCH_ITERS (1000),
# BENCH_WARMUP (100), BENCH_SIZES (8,64,512,4096,32768), BENCH_ZSIZES,
# BENCH_ZITERS (300), BENCH_RPC_ITERS (BENCH_ITERS), BENCH_RPC_SIZES
# (8,64,512,4096,32768,65536), BENCH_TPUT_THREADS (1,2,4), BENCH_TPUT_SIZE
# (64), BENCH_TPUT_SECONDS (3), BENCH_CQ_MODES ("busy softirq workqueue
# adaptive"), BENCH_CQ_ITERS (BENCH_ITERS), BENCH_CQ_SIZES (8,4096),
# LITE_ADDR (10.99.0.1), LITE_RXE (rxe0), LITE_OUT (/tmp).
# Exit status 0 only if every measurement ran and passed its checks; a
# program that fails contributes no numbers ("-" in the tables).
set -euo pipefail

build=${BUILD:-build/meson}
litectl=$build/tools/litectl/litectl
native=$build/benchmarks/native-lat
lite=$build/benchmarks/lite-lat
native_rpc=$build/benchmarks/native-rpc
lite_rpc=$build/benchmarks/lite-rpc
iters=${BENCH_ITERS:-1000}
warmup=${BENCH_WARMUP:-100}
sizes=${BENCH_SIZES:-8,64,512,4096,32768}
addr=${LITE_ADDR:-10.99.0.1}
dev=${LITE_RXE:-rxe0}
out=${LITE_OUT:-/tmp}
opts=(--iters "$iters" --warmup "$warmup" --sizes "$sizes")

say() { echo "bench: $*" >&2; }

for f in "$litectl" "$native" "$native_rpc" "$lite_rpc"; do
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
	failed+=("${1##*/}")
	rc=1
	return 1
}

head -c 32 /dev/urandom | base64 >"$work/secret"
say "bringing up 2 lite nodes on $dev ($addr:18515, $addr:18516)"
nodes_up

rc=0
say "native verbs: $native"
run_to "$out/native.csv" "$native" --addr "$addr" "${opts[@]}" || true
if [ -x "$lite" ]; then
	say "lite: $lite (instance $client_inst = node 1, LMR on node $server_node)"
	run_to "$out/lite.csv" "$lite" --instance "$client_inst" --node "$server_node" --lmr-size 65536 "${opts[@]}" ||
		true
else
	say "$lite not built (liblite has no C API yet?): no lite numbers"
	rc=1
	: >"$out/lite.csv"
fi

# Join the two CSVs (op,size,iters,median_us,p99_us,min_us) on op and size,
# in native-lat's order; a side that is missing shows as "-".
kver=$(uname -r)
awk -F, -v kver="$kver" -v iters="$iters" -v warmup="$warmup" -v dev="$dev" \
	-v csv="$out/latency.csv" '
	FNR == 1 { next }
	FILENAME ~ /native\.csv$/ { key = $1 "," $2; order[++n] = key; nmed[key] = $4; np99[key] = $5; next }
	{ key = $1 "," $2; lmed[key] = $4; lp99[key] = $5; if (!(key in nmed)) order[++n] = key }
	function v(a, k) { return (k in a) ? a[k] : "-" }
	END {
		printf "lite latency, guest kernel %s, %s on QEMU/TCG: %d iterations per point (after %d warm-up)\n",
			kver, dev, iters, warmup
		printf "%-6s %6s %15s %14s %13s %12s %7s\n", "op", "size", "native med us",
			"native p99 us", "lite med us", "lite p99 us", "ratio"
		print "op,size,native_median_us,native_p99_us,lite_median_us,lite_p99_us,ratio,iters,kernel" >csv
		for (i = 1; i <= n; i++) {
			k = order[i]
			split(k, f, ",")
			ratio = ((k in nmed) && (k in lmed) && nmed[k] > 0) ? sprintf("%.2f", lmed[k] / nmed[k]) : "-"
			printf "%-6s %6s %15s %14s %13s %12s %7s\n", f[1], f[2], v(nmed, k), v(np99, k),
				v(lmed, k), v(lp99, k), ratio
			print k "," v(nmed, k) "," v(np99, k) "," v(lmed, k) "," v(lp99, k) "," ratio "," iters "," kver >csv
		}
		printf "ratio = lite median / native median; absolute times under TCG emulation mean little\n"
	}' "$out/native.csv" "$out/lite.csv" | tee "$out/latency.txt"
say "CSV in $out/latency.csv"

# Where zero copy starts to pay: the copy path (kernel buffer) against the
# zero-copy path (pinned user pages) per size; the kernel switches at
# LITE_ZCOPY_MIN (lite_kmod/internal.h), chosen from this table.
if [ -x "$lite" ]; then
	zsizes=${BENCH_ZSIZES:-4096,8192,16384,32768,65536,262144,1048576}
	zopts=(--iters "${BENCH_ZITERS:-300}" --warmup 30 --sizes "$zsizes")
	say "copy vs zero copy: $zsizes"
	run_to "$out/copy.csv" "$lite" --instance "$client_inst" --node "$server_node" --lmr-size 1048576 \
		--path copy "${zopts[@]}" || true
	run_to "$out/zcopy.csv" "$lite" --instance "$client_inst" --node "$server_node" --lmr-size 1048576 \
		--path zcopy "${zopts[@]}" || true
	awk -F, -v csv="$out/zcopy-threshold.csv" '
		FNR == 1 { next }
		FILENAME ~ /\/copy\.csv$/ { key = $1 "," $2; order[++n] = key; c[key] = $4; next }
		{ z[$1 "," $2] = $4 }
		END {
			printf "\ncopy path vs zero-copy path (lite, median us)\n"
			printf "%-6s %8s %10s %10s %8s\n", "op", "size", "copy", "zcopy", "faster"
			print "op,size,copy_median_us,zcopy_median_us" >csv
			for (i = 1; i <= n; i++) {
				k = order[i]
				split(k, f, ",")
				faster = (k in z) ? (z[k] < c[k] ? "zcopy" : "copy") : "-"
				printf "%-6s %8s %10s %10s %8s\n", f[1], f[2], c[k], (k in z) ? z[k] : "-", faster
				print k "," c[k] "," ((k in z) ? z[k] : "-") >csv
			}
		}' "$out/copy.csv" "$out/zcopy.csv" | tee -a "$out/latency.txt"
fi

# RPC latency: native-rpc against lite-rpc, one call at a time per size.
rpc_iters=${BENCH_RPC_ITERS:-$iters}
rpc_sizes=${BENCH_RPC_SIZES:-8,64,512,4096,32768,65536}
rpc_opts=(--mode lat --iters "$rpc_iters" --warmup "$warmup" --sizes "$rpc_sizes")
say "RPC latency, native: $native_rpc"
run_to "$out/native-rpc.csv" "$native_rpc" --addr "$addr" "${rpc_opts[@]}" || true
say "RPC latency, lite: $lite_rpc (node 1 calls node $server_node)"
run_to "$out/lite-rpc.csv" "$lite_rpc" --client-instance "$client_inst" --server-instance "$server_inst" \
	"${rpc_opts[@]}" || true

# Joins two latency CSVs (op,size,iters,median_us,p99_us,mean_us) on size;
# a side that is missing shows as "-".
awk -F, -v kver="$kver" -v iters="$rpc_iters" -v warmup="$warmup" -v dev="$dev" -v csv="$out/rpc.csv" '
	FNR == 1 { next }
	FILENAME ~ /\/native-rpc\.csv$/ { order[++n] = $2; nmed[$2] = $4; np99[$2] = $5; nmean[$2] = $6; next }
	{ lmed[$2] = $4; lp99[$2] = $5; lmean[$2] = $6; if (!($2 in nmed)) order[++n] = $2 }
	function v(a, k) { return (k in a) ? a[k] : "-" }
	function ratio(l, nat, k) { return ((k in nat) && (k in l) && nat[k] > 0) ? sprintf("%.2f", l[k] / nat[k]) : "-" }
	END {
		printf "\nRPC latency (request of SIZE bytes, the same echoed back), guest kernel %s, %s on QEMU/TCG:\n", kver, dev
		printf "%d calls per size (after %d warm-up)\n", iters, warmup
		printf "%8s %15s %14s %13s %12s %7s %10s\n", "size", "native med us", "native p99 us", "lite med us",
			"lite p99 us", "ratio", "p99 ratio"
		print "size,native_median_us,native_p99_us,native_mean_us,lite_median_us,lite_p99_us,lite_mean_us,ratio,p99_ratio,iters,kernel" >csv
		for (i = 1; i <= n; i++) {
			k = order[i]
			r = ratio(lmed, nmed, k)
			r99 = ratio(lp99, np99, k)
			printf "%8s %15s %14s %13s %12s %7s %10s\n", k, v(nmed, k), v(np99, k), v(lmed, k), v(lp99, k), r, r99
			print k "," v(nmed, k) "," v(np99, k) "," v(nmean, k) "," v(lmed, k) "," v(lp99, k) "," v(lmean, k) "," r "," r99 "," iters "," kver >csv
		}
		printf "ratio = lite median / native median, p99 ratio = lite p99 / native p99\n"
	}' "$out/native-rpc.csv" "$out/lite-rpc.csv" | tee "$out/rpc.txt"

# RPC throughput: calls per second from each number of client threads.
tput_threads=${BENCH_TPUT_THREADS:-1,2,4}
tput_size=${BENCH_TPUT_SIZE:-64}
tput_secs=${BENCH_TPUT_SECONDS:-3}
tput_opts=(--mode tput --threads "$tput_threads" --size "$tput_size" --seconds "$tput_secs")
say "RPC throughput, native: $native_rpc ${tput_opts[*]}"
run_to "$out/native-rpc-tput.csv" "$native_rpc" --addr "$addr" "${tput_opts[@]}" || true
say "RPC throughput, lite: $lite_rpc ${tput_opts[*]}"
run_to "$out/lite-rpc-tput.csv" "$lite_rpc" --client-instance "$client_inst" --server-instance "$server_inst" \
	"${tput_opts[@]}" || true

# Joins the two throughput CSVs (threads,size,calls,seconds,calls_per_s) on
# threads.
awk -F, -v kver="$kver" -v size="$tput_size" -v secs="$tput_secs" -v dev="$dev" -v csv="$out/rpc_tput.csv" '
	FNR == 1 { next }
	FILENAME ~ /\/native-rpc-tput\.csv$/ { order[++n] = $1; nc[$1] = $3; ns[$1] = $4; nr[$1] = $5; next }
	{ lc[$1] = $3; ls[$1] = $4; lr[$1] = $5; if (!($1 in nr)) order[++n] = $1 }
	function v(a, k) { return (k in a) ? a[k] : "-" }
	END {
		printf "\nRPC throughput (%d-byte calls echoed, about %d s per point), guest kernel %s, %s on QEMU/TCG;\n",
			size, secs, kver, dev
		printf "one connection and one busy-polling server thread per client thread for native,\n"
		printf "as many lite server threads (LITE_rpc_recv) as the most client threads\n"
		printf "%8s %17s %15s %7s\n", "threads", "native calls/s", "lite calls/s", "ratio"
		print "threads,size,native_calls,native_seconds,native_calls_per_s,lite_calls,lite_seconds,lite_calls_per_s,ratio,kernel" >csv
		for (i = 1; i <= n; i++) {
			k = order[i]
			r = ((k in nr) && (k in lr) && nr[k] > 0) ? sprintf("%.2f", lr[k] / nr[k]) : "-"
			printf "%8s %17s %15s %7s\n", k, v(nr, k), v(lr, k), r
			print k "," size "," v(nc, k) "," v(ns, k) "," v(nr, k) "," v(lc, k) "," v(ls, k) "," v(lr, k) "," r "," kver >csv
		}
		printf "ratio = lite calls/s / native calls/s\n"
	}' "$out/native-rpc-tput.csv" "$out/lite-rpc-tput.csv" | tee "$out/rpc_tput.txt"

# Completion delivery: the nodes brought up again in each mode; lite-rpc at
# a small and a page-sized call and lite-lat at 8 bytes, against native runs
# made once here (native code does not depend on lite's mode).
cq_modes=${BENCH_CQ_MODES:-busy softirq workqueue adaptive}
cq_iters=${BENCH_CQ_ITERS:-$iters}
cq_sizes=${BENCH_CQ_SIZES:-8,4096}
cq_opts=(--iters "$cq_iters" --warmup "$warmup")
say "completion modes ($cq_modes): native baseline"
run_to "$out/cq-native-rpc.csv" "$native_rpc" --addr "$addr" --mode lat "${cq_opts[@]}" --sizes "$cq_sizes" || true
run_to "$out/cq-native-lat.csv" "$native" --addr "$addr" "${cq_opts[@]}" --sizes 8 || true
# mode,op,size,median,p99 of every run, native first (mode "native").
cq_rows() {
	local mode=$1 f
	shift
	for f in "$@"; do
		awk -F, -v mode="$mode" 'FNR > 1 { print mode "," $1 "," $2 "," $4 "," $5 }' "$f"
	done
}
cq_rows native "$out/cq-native-rpc.csv" "$out/cq-native-lat.csv" >"$out/cq-all.csv"
for mode in $cq_modes; do
	: >"$out/cq-$mode-rpc.csv"
	: >"$out/cq-$mode-lat.csv"
	say "completion mode $mode: restarting the nodes with --cq $mode"
	if ! nodes_down || ! nodes_up --cq "$mode"; then
		say "FAILED: could not bring the nodes up with --cq $mode: no numbers for it"
		failed+=("litectl up --cq $mode")
		rc=1
		continue
	fi
	inst_ok=1
	for i in "$client_inst" "$server_inst"; do
		status=$("$litectl" status -i "$i") || status=''
		echo "$status" >&2
		if ! grep -q "completion mode: $mode\$" <<<"$status"; then
			say "FAILED: instance $i does not report completion mode $mode"
			inst_ok=0
		fi
	done
	if [ "$inst_ok" -eq 0 ]; then
		failed+=("cq mode $mode not in effect")
		rc=1
		continue
	fi
	run_to "$out/cq-$mode-rpc.csv" "$lite_rpc" --client-instance "$client_inst" --server-instance "$server_inst" \
		--mode lat "${cq_opts[@]}" --sizes "$cq_sizes" || true
	run_to "$out/cq-$mode-lat.csv" "$lite" --instance "$client_inst" --node "$server_node" --lmr-size 65536 \
		"${cq_opts[@]}" --sizes 8 || true
	cq_rows "$mode" "$out/cq-$mode-rpc.csv" "$out/cq-$mode-lat.csv" >>"$out/cq-all.csv"
done
say "leaving the nodes in the default completion mode"
if ! nodes_down || ! nodes_up; then
	say "FAILED: could not bring the nodes up again in the default mode"
	failed+=("litectl up (default mode)")
	rc=1
fi

awk -F, -v kver="$kver" -v iters="$cq_iters" -v warmup="$warmup" -v dev="$dev" -v modes="$cq_modes" \
	-v csv="$out/cq_modes.csv" '
	$1 == "native" { k = $2 "," $3; if (!(k in nmed)) korder[++nk] = k; nmed[k] = $4; np99[k] = $5; next }
	{ k = $1 "," $2 "," $3; lmed[k] = $4; lp99[k] = $5 }
	function v(a, k) { return (k in a) ? a[k] : "-" }
	function ratio(l, lk, nat, nk) { return ((nk in nat) && (lk in l) && nat[nk] > 0) ? sprintf("%.2f", l[lk] / nat[nk]) : "-" }
	END {
		printf "\nlite by completion-delivery mode (litectl up --cq MODE), guest kernel %s, %s on QEMU/TCG:\n", kver, dev
		printf "%d calls per point (after %d warm-up); native measured once, the same for every mode\n", iters, warmup
		printf "%-10s %-6s %6s %15s %14s %13s %12s %7s %10s\n", "mode", "op", "size", "native med us",
			"native p99 us", "lite med us", "lite p99 us", "ratio", "p99 ratio"
		print "mode,op,size,native_median_us,native_p99_us,lite_median_us,lite_p99_us,ratio,p99_ratio,iters,kernel" >csv
		nm = split(modes, m, " ")
		for (j = 1; j <= nm; j++) {
			for (i = 1; i <= nk; i++) {
				nkey = korder[i]
				lkey = m[j] "," nkey
				split(nkey, f, ",")
				r = ratio(lmed, lkey, nmed, nkey)
				r99 = ratio(lp99, lkey, np99, nkey)
				printf "%-10s %-6s %6s %15s %14s %13s %12s %7s %10s\n", m[j], f[1], f[2], v(nmed, nkey),
					v(np99, nkey), v(lmed, lkey), v(lp99, lkey), r, r99
				print m[j] "," nkey "," v(nmed, nkey) "," v(np99, nkey) "," v(lmed, lkey) "," v(lp99, lkey) "," r "," r99 "," iters "," kver >csv
			}
		}
		printf "ratio = lite median / native median (rpc: native-rpc; write, read: native-lat)\n"
	}' "$out/cq-all.csv" | tee "$out/cq_modes.txt"

if [ ${#failed[@]} -gt 0 ]; then
	note="FAILED: $(printf '%s; ' "${failed[@]}")no numbers from these runs (\"-\")"
	echo "$note"
	for f in "$out/rpc.txt" "$out/rpc_tput.txt" "$out/cq_modes.txt"; do
		echo "$note" >>"$f"
	done
fi
say "CSV in $out/rpc.csv, $out/rpc_tput.csv, $out/cq_modes.csv"
exit "$rc"
