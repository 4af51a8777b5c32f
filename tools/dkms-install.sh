#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make dkms-install: put lite.ko's sources under /usr/src/lite-VERSION with
# dkms.conf, and have DKMS build and install the module for every kernel
# that has headers installed (and, through DKMS's kernel hooks, for each
# kernel installed later). As root, or through sudo.
#   tools/dkms-install.sh [--remove]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n "s/^  version : '\([^']*\)',/\1/p" "$root/meson.build")
[ -n "$version" ] || { echo "dkms-install: no version in meson.build" >&2; exit 1; }
command -v dkms >/dev/null || { echo "dkms-install: dkms is not installed (apt-get install dkms)" >&2; exit 1; }
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
src=/usr/src/lite-$version

if dkms status "lite/$version" 2>/dev/null | grep -q .; then
	"${sudo[@]}" dkms remove "lite/$version" --all
fi
if [ "${1:-}" = --remove ]; then
	"${sudo[@]}" rm -rf "$src"
	echo "dkms-install: lite/$version removed"
	exit 0
fi

"${sudo[@]}" rm -rf "$src"
"${sudo[@]}" install -d "$src/lite_kmod/core" "$src/lite_kmod/uapi/linux"
"${sudo[@]}" install -m 0644 "$root/Kbuild" "$src/"
"${sudo[@]}" install -m 0644 "$root"/lite_kmod/Kbuild "$root"/lite_kmod/*.[ch] "$src/lite_kmod/"
"${sudo[@]}" install -m 0644 "$root"/lite_kmod/core/*.[ch] "$src/lite_kmod/core/"
"${sudo[@]}" install -m 0644 "$root/lite_kmod/uapi/linux/lite.h" "$src/lite_kmod/uapi/linux/"
sed "s/#MODULE_VERSION#/$version/" "$root/dkms.conf" | "${sudo[@]}" tee "$src/dkms.conf" >/dev/null
"${sudo[@]}" dkms add "lite/$version"
built=0
for k in /lib/modules/*; do
	[ -d "$k/build" ] || continue
	"${sudo[@]}" dkms install "lite/$version" -k "$(basename "$k")"
	built=$((built + 1))
done
[ "$built" -gt 0 ] || { echo "dkms-install: no kernel has headers installed (/lib/modules/*/build)" >&2; exit 1; }
dkms status lite
