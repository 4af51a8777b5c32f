#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Print the Debian kernel version to build against and boot: the newest
# /lib/modules entry that has both build/ (headers) and /boot/vmlinuz-$v.
set -euo pipefail

best=
for d in /lib/modules/*/; do
	[ -d "$d" ] || continue
	v=$(basename "$d")
	if [ ! -d "/lib/modules/$v/build" ] || [ ! -f "/boot/vmlinuz-$v" ]; then
		continue
	fi
	best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n 1)
done

if [ -z "$best" ]; then
	echo "kver.sh: no kernel in /lib/modules has both build/ and /boot/vmlinuz-<version>;" \
		"install linux-image-amd64 and linux-headers-amd64 (tools/deps.sh)" >&2
	exit 1
fi
echo "$best"
