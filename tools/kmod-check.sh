#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build lite.ko with W=1 and sparse (C=2, every file re-checked); fail on any
# compiler or sparse diagnostic.
set -euo pipefail
cd "$(dirname "$0")/.."
kdir=${1:-/lib/modules/$(tools/kver.sh)/build}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! make -C "$kdir" M="$PWD" W=1 C=2 modules >"$log" 2>&1; then
	cat "$log"
	echo "kmod-check: lite.ko failed to build" >&2
	exit 1
fi
# Diagnostics look like "file:line:col: warning: ..." (gcc, sparse) or
# "file:line: warning: ..." (kernel-doc).
if grep -E ':[0-9]+(:[0-9]+)?: (warning|error):' "$log"; then
	echo "kmod-check: lite.ko has W=1 or sparse diagnostics (above)" >&2
	exit 1
fi
checked=$(grep -c ' CHECK ' "$log" || true)
echo "kmod-check: lite.ko built with W=1 and sparse: no warnings ($checked files checked)"
