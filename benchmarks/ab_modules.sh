#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A/B of lite modules in one guest boot, for changes smaller than the
# spread between boots: for each round, native-rpc once (busy-polled
# latency; event-driven calls/s), then for each module in turn insmod, two
# nodes on rxe0, lite-rpc latency (at AB_SIZES; default 8 B and 4 KiB)
# and 2 s of 64-byte calls/s per client thread count of AB_THREADS (1,2,4
# say; default 1), both nodes down, rmmod. One line per run: "round R
# MODULE: 8:<median us> 4096:<median us> t1:<calls/s> ...".
# With AB_WHAT=onesided, the one-sided path instead: native async-tput
# (busy) once a round, then per module lite-lat write and read medians at
# AB_SIZES (default 8, 64 and 4096 bytes: "w8:<us> ... r4096:<us>"),
# lite::Ring 64-byte writes and reads at queue depths 1, 8 and 32
# ("wq1:<ops/s> ...") and the same on a polled Ring ("pwq1:<ops/s> ...",
# absent where the module has no polled rings). With AB_WHAT=dsm, the
# DSM's fault latency: per module three nodes and dsm-lat (AB_ITERS faults
# of each kind), its medians ("raw_read:<us> read_fault:<us> ...").
# With AB_WHAT=alloc, LITE_alloc+LITE_free on the other node with leases
# off (every allocation a request to the memory node): reg-cost at
# AB_SIZES (default 4K,64K), AB_ITERS of each, its back-to-back medians
# ("a4096:<us> f4096:<us> ..."). AB_ISOLATION=lmr brings every node up in
# lmr isolation (litectl up --isolation).
#
#   tools/vm/lite-vm --no-module --out build/ab -- \
#       bash benchmarks/ab_modules.sh ROUNDS A.ko B.ko ...
#
# (build each module from its commit first, e.g. in a git worktree with
# make kmod). Environment: BUILD (build/meson), LITE_ADDR (10.99.0.1),
# AB_ITERS (600), AB_WHAT (rpc, onesided, dsm or alloc), AB_ISOLATION
# (unset: the default), AB_THREADS (1),
# AB_SIZES (comma-separated, K and M suffixes allowed).
set -euo pipefail

build=${BUILD:-build/meson}
litectl=$build/tools/litectl/litectl
addr=${LITE_ADDR:-10.99.0.1}
iters=${AB_ITERS:-600}
threads=${AB_THREADS:-1}
rounds=${1:?usage: ab_modules.sh ROUNDS MODULE.ko...}
shift
[ $# -gt 0 ] || { echo "ab_modules.sh: no module named" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c 32 /dev/urandom | base64 >"$work/secret"
re='^instance ([0-9]+):'

# up ARGS...: brings a node up, prints its instance.
up() {
	local line
	line=$("$litectl" up --dev rxe0 --secret-file "$work/secret" ${AB_ISOLATION:+--isolation "$AB_ISOLATION"} "$@")
	[[ $line =~ $re ]] || { echo "ab_modules.sh: cannot read the instance from: $line" >&2; return 1; }
	echo "${BASH_REMATCH[1]}"
}

medians() { awk -F, 'NR > 1 { printf "%s:%s ", $2, $4 }'; }

# nodes_up MODULE N: insmod MODULE, then N nodes on rxe0 (the first the
# manager), their instances in ins[] (node 1 first).
ins=()
nodes_up() {
	local j
	insmod "$1"
	ins=("$(up --listen "$addr:18515")")
	for ((j = 1; j < $2; j++)); do
		ins+=("$(up --listen "$addr:$((18515 + j))" --join "$addr:18515")")
	done
}

# nodes_down: the nodes of nodes_up down, newest first, and rmmod.
nodes_down() {
	local j
	for ((j = ${#ins[@]} - 1; j >= 0; j--)); do
		"$litectl" down -i "${ins[$j]}"
	done
	rmmod lite
}

# onesided_ring PREFIX MODE...: async-tput write and read rows as
# "<PREFIX>wq1:<ops/s> ...".
onesided_ring() {
	local op prefix=$1
	shift
	for op in write read; do
		"$build/benchmarks/async-tput" "$@" --op "$op" --qd 1,8,32 --len 64 --seconds 1 2>/dev/null |
			awk -F, -v o="$prefix${op:0:1}" 'NR > 1 { printf "%sq%s:%s ", o, $3, $7 }' || true
	done
}

if [ "${AB_WHAT:-rpc}" = dsm ]; then
	for r in $(seq 1 "$rounds"); do
		for m in "$@"; do
			nodes_up "$m" 3
			lat=$("$build/benchmarks/dsm-lat" --instances "${ins[0]},${ins[1]},${ins[2]}" --runs "$iters" |
				awk -F, 'NR > 1 && $1 !~ /^user_/ { printf "%s:%s ", $1, $3 }')
			echo "round $r ${m##*/}: $lat"
			nodes_down
		done
	done
	exit 0
fi

if [ "${AB_WHAT:-rpc}" = alloc ]; then
	for r in $(seq 1 "$rounds"); do
		for m in "$@"; do
			nodes_up "$m" 2
			echo 0 >/sys/module/lite/parameters/lease_kb
			lat=$("$build/benchmarks/reg-cost" --addr "$addr" --instance "${ins[0]}" --node 2 \
				--sizes "${AB_SIZES:-4K,64K}" --iters "$iters" 2>/dev/null |
				awk -F, 'NR > 1 { printf "a%s:%s f%s:%s ", $1, $4, $1, $5 }')
			echo "round $r ${m##*/}: $lat"
			nodes_down
		done
	done
	exit 0
fi

if [ "${AB_WHAT:-rpc}" = onesided ]; then
	for r in $(seq 1 "$rounds"); do
		echo "round $r native-busy: $(onesided_ring "" --mode native --poll busy --addr "$addr")"
		for m in "$@"; do
			nodes_up "$m" 2
			lat=$("$build/benchmarks/lite-lat" --instance "${ins[0]}" --node 2 --iters "$iters" --warmup 100 \
				--sizes "${AB_SIZES:-8,64,4096}" | awk -F, 'NR > 1 { printf "%s%s:%s ", substr($1, 1, 1), $2, $4 }')
			ring=$(onesided_ring "" --mode lite-ring --instance "${ins[0]}" --node 2)
			polled=$(onesided_ring p --mode lite-ring-poll --instance "${ins[0]}" --node 2)
			echo "round $r ${m##*/}: $lat$ring$polled"
			nodes_down
		done
	done
	exit 0
fi

# calls_per_s: "t<threads>:<calls/s> ..." from a --mode tput CSV.
calls_per_s() { awk -F, 'NR > 1 { printf "t%s:%s ", $1, $5 }'; }

for r in $(seq 1 "$rounds"); do
	echo "round $r native-busy: $("$build/benchmarks/native-rpc" --addr "$addr" --poll busy --mode lat \
		--iters "$iters" --warmup 100 --sizes "${AB_SIZES:-8,4096}" | medians)"
	echo "round $r native-event: $("$build/benchmarks/native-rpc" --addr "$addr" --poll event --mode tput \
		--threads "$threads" --seconds 2 --size 64 | calls_per_s)"
	for m in "$@"; do
		nodes_up "$m" 2
		lat=$("$build/benchmarks/lite-rpc" --client-instance "${ins[0]}" --server-instance "${ins[1]}" \
			--mode lat --iters "$iters" --warmup 100 --sizes "${AB_SIZES:-8,4096}" | medians)
		tput=$("$build/benchmarks/lite-rpc" --client-instance "${ins[0]}" --server-instance "${ins[1]}" \
			--mode tput --threads "$threads" --seconds 2 --size 64 | calls_per_s)
		echo "round $r ${m##*/}: $lat$tput"
		nodes_down
	done
done
