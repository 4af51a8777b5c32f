#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Inside a lite-vm guest: load and unload lite.ko CYCLES times; each cycle
# forms a two-node cluster, moves 1 MiB through a remote LMR (checked by
# examples/remote_rw) and takes the nodes down before the unload. Unreclaimable
# slab after the first cycle (caches warm) and after the last goes to
# $LITE_OUT/soak-load.json; more than SLAB_GROWTH_KB growth (default 4096)
# fails. Leaks are kmemleak's to name (lite-vm scans when the kernel has it).
#   tools/vm/soak-load.sh [CYCLES [LIMIT_KB]]
set -euo pipefail
cycles=${1:-100}
limit_kb=${2:-${SLAB_GROWTH_KB:-4096}}
: "${LITE_MODULE:?run inside lite-vm}"
litectl=build/meson/tools/litectl/litectl
remote_rw=build/meson/examples/remote_rw
secret=/tmp/soak-secret
head -c 32 /dev/urandom >"$secret"

sunreclaim_kb() { awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo; }
settle() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 1
}

# lite-vm loaded the module: start from none.
[ ! -d /sys/module/lite ] || rmmod lite
start=$(date +%s.%N)
before=
for ((i = 1; i <= cycles; i++)); do
	# shellcheck disable=SC2086 # PARAM=VALUE words
	insmod "$LITE_MODULE" ${LITE_MODULE_ARGS:-}
	"$litectl" up --dev "$LITE_RXE" --listen "$LITE_ADDR:18900" --secret-file "$secret" >/dev/null
	"$litectl" up --dev "$LITE_RXE" --listen "$LITE_ADDR:18901" --secret-file "$secret" \
		--join "$LITE_ADDR:18900" >/dev/null
	"$remote_rw" --instance 0 --node 2 --size 1048576 >/dev/null ||
		{ echo "soak-load: cycle $i: remote_rw failed" >&2; exit 1; }
	"$litectl" down -i 1 >/dev/null
	"$litectl" down -i 0 >/dev/null
	rmmod lite || { echo "soak-load: cycle $i: rmmod failed" >&2; exit 1; }
	[ $((i % 10)) -ne 0 ] || echo "soak-load: $i of $cycles cycles"
	if [ -z "$before" ]; then
		settle
		before=$(sunreclaim_kb)
	fi
done
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
settle
after=$(sunreclaim_kb)
growth=$((after - before))
echo "soak-load: $cycles load/unload cycles in $elapsed s; unreclaimable slab after the first $before kB, after the last $after kB ($growth kB)"
printf '{"cycles": %d, "seconds": %s, "sunreclaim_before_kb": %d, "sunreclaim_after_kb": %d}\n' \
	"$cycles" "$elapsed" "$before" "$after" >"$LITE_OUT/soak-load.json"
if [ "$growth" -gt "$limit_kb" ]; then
	echo "soak-load: unreclaimable slab grew by $growth kB (limit $limit_kb kB)" >&2
	exit 1
fi
