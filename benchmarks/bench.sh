#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside a lite-vm guest (make bench): LITE_write/LITE_read latency
# against native verbs RDMA WRITE/READ, in the same guest run.
#
# Brings up two lite nodes on rxe0 (instance 0 = node 1, the manager;
# instance 1 = node 2), runs build/meson/benchmarks/native-lat (an RC
# connection from rxe0 to itself through librdmacm) and lite-lat (instance
# 0 to an LMR on node 2), prints one table and writes it to
# $LITE_OUT/latency.txt and as CSV to $LITE_OUT/latency.csv (the raw outputs
# go to native.csv and lite.csv there). Takes the nodes down on exit.
#
# Environment: BUILD (default build/meson), BENCH_ITERS (1000),
# BENCH_WARMUP (100), BENCH_SIZES (8,64,512,4096,32768), LITE_ADDR
# (10.99.0.1), LITE_RXE (rxe0), LITE_OUT (/tmp).
# Exit status 0 only if both measurements ran.
set -euo pipefail

build=${BUILD:-build/meson}
litectl=$build/tools/litectl/litectl
native=$build/benchmarks/native-lat
lite=$build/benchmarks/lite-lat
iters=${BENCH_ITERS:-1000}
warmup=${BENCH_WARMUP:-100}
sizes=${BENCH_SIZES:-8,64,512,4096,32768}
addr=${LITE_ADDR:-10.99.0.1}
dev=${LITE_RXE:-rxe0}
out=${LITE_OUT:-/tmp}
opts=(--iters "$iters" --warmup "$warmup" --sizes "$sizes")

say() { echo "bench: $*" >&2; }

for f in "$litectl" "$native"; do
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

head -c 32 /dev/urandom | base64 >"$work/secret"
say "bringing up 2 lite nodes on $dev ($addr:18515, $addr:18516)"
"$litectl" up --dev "$dev" --listen "$addr:18515" --secret-file "$work/secret" >&2
up+=(0)
"$litectl" up --dev "$dev" --listen "$addr:18516" --secret-file "$work/secret" --join "$addr:18515" >&2
up+=(1)

rc=0
say "native verbs: $native"
"$native" --addr "$addr" "${opts[@]}" >"$out/native.csv" || { rc=1; say "native-lat failed"; }
if [ -x "$lite" ]; then
	say "lite: $lite (instance 0 = node 1, LMR on node 2)"
	"$lite" --instance 0 --node 2 --lmr-size 65536 "${opts[@]}" >"$out/lite.csv" ||
		{ rc=1; say "lite-lat failed"; }
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
	"$lite" --instance 0 --node 2 --lmr-size 1048576 --path copy "${zopts[@]}" >"$out/copy.csv" &&
		"$lite" --instance 0 --node 2 --lmr-size 1048576 --path zcopy "${zopts[@]}" >"$out/zcopy.csv" ||
		{ rc=1; say "lite-lat --path failed"; }
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
exit "$rc"
