#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The install step for /dev/lite's permissions: a system group "lite" and
# the udev rule that gives /dev/lite to it with mode 0660 (the module alone
# creates it root-only, 0600). Idempotent; as root, or through sudo.
#   tools/install-udev.sh [--check]
# --check: exit 0 if both are in place, 1 (naming what is missing) if not.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rule=$here/udev/60-lite.rules
dest=/etc/udev/rules.d/60-lite.rules

missing=()
getent group lite >/dev/null || missing+=("group lite")
cmp -s "$rule" "$dest" || missing+=("$dest")

if [ "${1:-}" = --check ]; then
	[ ${#missing[@]} -eq 0 ] && exit 0
	echo "install-udev: missing: ${missing[*]} (run make install-udev as root)" >&2
	exit 1
fi
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-udev: group lite and $dest already in place"
	exit 0
fi

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
getent group lite >/dev/null || "${sudo[@]}" groupadd --system lite
"${sudo[@]}" install -D -m 0644 "$rule" "$dest"
# A running udev applies it now to a /dev/lite that exists already.
if "${sudo[@]}" udevadm control --reload 2>/dev/null; then
	"${sudo[@]}" udevadm trigger --subsystem-match=misc --sysname-match=lite 2>/dev/null || true
fi
echo "install-udev: group lite ($(getent group lite | cut -d: -f3)) and $dest installed"
