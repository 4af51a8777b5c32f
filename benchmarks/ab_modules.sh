#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A/B of lite modules in one guest boot, for changes smaller than the
# spread between boots: for each round, native-rpc (busy) once, then for
# each module in turn insmod, two nodes on rxe0, lite-rpc latency (8 B and
# 4 KiB) and 2 s of 1-thread calls/s, both nodes down, rmmod. One line per
# run: "round R MODULE: 8:<median us> 4096:<median us> t1:<calls/s>".
#
#   tools/vm/lite-vm --no-module --out build/ab -- \
#       bash benchmarks/ab_modules.sh ROUNDS A.ko B.ko ...
#
# (build each module from its commit first, e.g. in a git worktree with
# make kmod). Environment: BUILD (build/meson), LITE_ADDR (10.99.0.1),
# AB_ITERS (600).
set -euo pipefail

build=${BUILD:-build/meson}
litectl=$build/tools/litectl/litectl
addr=${LITE_ADDR:-10.99.0.1}
iters=${AB_ITERS:-600}
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
	line=$("$litectl" up --dev rxe0 --secret-file "$work/secret" "$@")
	[[ $line =~ $re ]] || { echo "ab_modules.sh: cannot read the instance from: $line" >&2; return 1; }
	echo "${BASH_REMATCH[1]}"
}

medians() { awk -F, 'NR > 1 { printf "%s:%s ", $2, $4 }'; }

for r in $(seq 1 "$rounds"); do
	echo "round $r native-busy: $("$build/benchmarks/native-rpc" --addr "$addr" --poll busy --mode lat \
		--iters "$iters" --warmup 100 --sizes 8,4096 | medians)"
	for m in "$@"; do
		insmod "$m"
		i1=$(up --listen "$addr:18515")
		i2=$(up --listen "$addr:18516" --join "$addr:18515")
		lat=$("$build/benchmarks/lite-rpc" --client-instance "$i1" --server-instance "$i2" --mode lat \
			--iters "$iters" --warmup 100 --sizes 8,4096 | medians)
		tput=$("$build/benchmarks/lite-rpc" --client-instance "$i1" --server-instance "$i2" --mode tput \
			--threads 1 --seconds 2 --size 64 | awk -F, 'NR > 1 { printf "t%s:%s", $1, $5 }')
		echo "round $r ${m##*/}: $lat$tput"
		"$litectl" down -i "$i2"
		"$litectl" down -i "$i1"
		rmmod lite
	done
done
