#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The two-guest point of make bench's mapreduce section: runs in each of
# two lite-vm guests (one vCPU each, one lite node each, over the guests'
# virtual link). Guest 0 is node 1 (the manager) and runs the master and a
# worker; guest 1 joins as node 2 and runs a worker. The job is word count
# on BENCH_MR_2G_INPUT (default text-64m.txt of make mr-data); guest 0
# appends its lite-mr --stats row (label "2guest") to
# $LITE_OUT/mr-2guest.csv, and its output must equal the serial
# reference's (checked with --check). benchmarks/report.py mapreduce
# puts the row beside the one-guest runs.
set -euo pipefail
build=${BUILD:-build/meson}
litectl=$build/tools/litectl/litectl
lite_mr=$build/mapreduce/lite-mr
data=${BENCH_MR_DATA:-build/mr-data}
input=${BENCH_MR_2G_INPUT:-text-64m.txt}
idx=${LITE_GUEST_INDEX:?run under lite-vm --guests 2}
peers=(${LITE_PEERS:?})
manager=${peers[0]}:18515
secret=$(mktemp)
# Both guests must hold the same secret: derive it from the run id.
printf 'mr-2guest-%s' "${LITE_RUN_ID:?}" | sha256sum | cut -d' ' -f1 >"$secret"
say() { echo "mr-2guest[g$idx]: $*" >&2; }

cat "$data/$input" >/dev/null
if [ "$idx" -eq 0 ]; then
	"$litectl" up --dev "$LITE_RXE" --listen "$LITE_ADDR:18515" --secret-file "$secret" >&2
	say "waiting for node 2"
	for _ in $(seq 300); do
		"$litectl" status -i 0 2>/dev/null | grep -q "cluster: 2 members" && break
		sleep 0.2
	done
	say "lite-mr wordcount $input on 2 guests"
	"$lite_mr" run --instance 0 --spawn-on 0 --workers 2 --threads 1 --app wordcount --top 0 --check \
		--stats "$LITE_OUT/mr-2guest.csv" --label 2guest "$data/$input" >&2
	"$litectl" down -i 0 >&2
else
	for _ in $(seq 300); do
		"$litectl" up --dev "$LITE_RXE" --listen "$LITE_ADDR:18515" --secret-file "$secret" \
			--join "$manager" >&2 && break
		sleep 0.5
	done
	say "worker for the master on node 1"
	"$lite_mr" worker --instance 0 --master-node 1 --threads 1 --join-timeout 120
	"$litectl" down -i 0 >&2 || true
fi
