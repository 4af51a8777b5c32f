#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the guest (see tools/demo.sh): three nodes on rxe0, each with
# its own port on this guest's address.
set -euo pipefail
litectl=${LITECTL:-build/meson/tools/litectl/litectl}
addr=${LITE_ADDR:-10.99.0.1}
secret=/tmp/lite-demo-secret
head -c 32 /dev/urandom | base64 >"$secret"

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

echo "lite demo: one guest, Soft-RoCE device ${LITE_RXE:-rxe0} on $addr"
say "$litectl" up --dev rxe0 --listen "$addr:18515" --secret-file "$secret"
say "$litectl" up --dev rxe0 --listen "$addr:18516" --secret-file "$secret" --join "$addr:18515"
say "$litectl" up --dev rxe0 --listen "$addr:18517" --secret-file "$secret" --join "$addr:18515"

# Every pair, both directions: instance i is node i+1.
for i in 0 1 2; do
	for n in 1 2 3; do
		[ "$n" -ne $((i + 1)) ] || continue
		say "$litectl" ping -i "$i" -c 3 "$n"
	done
done

say "$litectl" status

echo
echo "Memory on another node, as an unprivileged user in group lite: node 1"
echo "allocates 1 MiB on node 3, writes it with one-sided RDMA and reads it back:"
say setpriv --reuid=65534 --regid=65534 --groups=lite \
	build/meson/examples/remote_rw --instance 0 --node 3 --size 1048576

echo
echo "A counter shared by name: processes on nodes 1, 2 and 3, four threads each,"
echo "fetch-and-add one 8-byte LMR; the total must be exact:"
say build/meson/examples/shared_counter --instances 3 --threads 4 --adds 250

echo
echo "An RPC key-value store: kv_server runs on node 3 (instance 2) with 4 threads;"
echo "kv_client on node 1 talks to it over RDMA write-with-immediate:"
build/meson/examples/kv_server --instance 2 --port 4000 --threads 4 &
kv=$!
trap 'kill $kv 2>/dev/null || true' EXIT
sleep 1
say build/meson/examples/kv_client --instance 0 --node 3 put greeting "hello from node 1"
say build/meson/examples/kv_client --instance 1 --node 3 get greeting
echo
say build/meson/examples/kv_client --instance 0 --node 3 put big --random-size 1M
say build/meson/examples/kv_client --instance 0 --node 3 del greeting
say build/meson/examples/kv_client --instance 0 --node 3 get greeting || echo "(exit $?: not found)"
say build/meson/examples/kv_client --instance 1 --node 3 selftest --count 20
kill "$kv"
wait "$kv" || true
trap - EXIT

echo
echo "A counter under a distributed lock: processes on nodes 1, 2 and 3, two"
echo "threads each, do a plain read, +1, write under the lock; then a barrier:"
build/meson/examples/lock_counter --instance 1 --name demo-lock --iters 50 --threads 2 --participants 3 &
p1=$!
build/meson/examples/lock_counter --instance 2 --name demo-lock --iters 50 --threads 2 --participants 3 &
p2=$!
say build/meson/examples/lock_counter --instance 0 --name demo-lock --create --iters 50 --threads 2 --participants 3
wait "$p1" "$p2"

echo
echo "Many operations in flight through io_uring (lite::Ring): node 1 fills 8 MiB"
echo "on node 2 with 4 KiB writes and a fetch-and-add per block, reads it back:"
say build/meson/examples/async_fill --instance 0 --node 2 --size 8M --block 4K --depth 256

echo
echo "MapReduce across the three nodes: a master on node 1 and a lite-mr worker on"
echo "each node count the words of this repository's documents and the licenses"
echo "Debian ships, shuffle with one-sided writes, and check the result against"
echo "a single-process count:"
say build/meson/mapreduce/lite-mr run --instance 0 --spawn --check --top 10 --split 64K \
	README.md docs/*.md /usr/share/common-licenses

echo
echo "A node with the wrong secret is refused:"
echo "not-the-secret" >/tmp/lite-wrong
say "$litectl" up --dev rxe0 --listen "$addr:18518" --secret-file /tmp/lite-wrong \
	--join "$addr:18515" || true

for i in 2 1 0; do say "$litectl" down -i "$i"; done
