#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make demo: boot a guest, bring up a 3-node lite cluster on Soft-RoCE, show
# its status and the ping round trip of every pair, and shut down. The
# guest writes its transcript to the out share; we follow it live.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/demo
mkdir -p "$out"
: >"$out/demo.log"
echo "make demo: booting a guest (Debian kernel under QEMU/TCG, Soft-RoCE), about 15 s..."
tail -n +1 -F "$out/demo.log" 2>/dev/null &
tailer=$!
trap 'kill $tailer 2>/dev/null || true' EXIT
rc=0
tools/vm/lite-vm --quiet --timeout 300 --out "$out" -- \
	bash -c 'set -o pipefail; bash tools/demo-guest.sh 2>&1 | tee "$LITE_OUT/demo.log"' || rc=$?
sleep 0.5
exit "$rc"
