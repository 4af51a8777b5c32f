#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build lite.ko with W=1 and sparse (C=2, every file re-checked); fail on any
# compiler or sparse diagnostic; check that modinfo shows the project's
# version and a description of every module parameter.
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
# The module's face: the project's version, and every parameter described.
version=$(sed -n "s/^  version : '\([^']*\)',/\1/p" meson.build)
if [ "$(modinfo -F version lite_kmod/lite.ko)" != "$version" ]; then
	echo "kmod-check: modinfo shows version '$(modinfo -F version lite_kmod/lite.ko)', meson.build says '$version'" >&2
	exit 1
fi
# (Lines ending in a backslash are macro bodies, not parameters.)
mapfile -t params < <(grep -rhE '^(module_param(_named|_cb)?|LITE_TUNABLE)\(' lite_kmod/*.c | grep -v '\\$' |
	grep -oE '^[A-Za-z_]+\([a-z0-9_]+' | sed 's/.*(//' | sort -u)
for p in "${params[@]}"; do
	if ! modinfo -F parm lite_kmod/lite.ko | grep -qE "^$p:.{20,}"; then
		echo "kmod-check: parameter $p has no description (MODULE_PARM_DESC) in modinfo" >&2
		exit 1
	fi
done
checked=$(grep -c ' CHECK ' "$log" || true)
echo "kmod-check: lite.ko built with W=1 and sparse: no warnings ($checked files checked); version $version, ${#params[@]} parameters described"
