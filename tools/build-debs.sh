#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the Debian packages (lite-dkms, liblite0, liblite-dev, litectl)
# with dpkg-buildpackage -us -uc from a copy of the source tree (the files
# git knows, as they are in the working tree), so that nothing lands beside
# the repository: the source package and the .debs end up in OUT.
#   tools/build-debs.sh [OUT]      (default build/deb)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/build/deb}")
version=$(sed -n '1s/^lite (\([^)]*\)).*/\1/p' "$root/debian/changelog")
[ -n "$version" ] || { echo "build-debs: no version in debian/changelog" >&2; exit 1; }
meson_version=$(sed -n "s/^  version : '\([^']*\)',/\1/p" "$root/meson.build")
if [ "$version" != "$meson_version" ]; then
	echo "build-debs: debian/changelog says $version, meson.build $meson_version: make them agree" >&2
	exit 1
fi

rm -rf "$out"
src=$out/lite-$version
mkdir -p "$src"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 -I{} sh -c '[ -e "{}" ] && printf "%s\0" "{}"' |
	tar --null -T - -cf -) | tar -xf - -C "$src"

start=$(date +%s)
(cd "$src" && dpkg-buildpackage -us -uc >"$out/build.log" 2>&1) || {
	tail -n 40 "$out/build.log" >&2
	echo "build-debs: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
}
rm -rf "$src"
echo "build-debs: $(cd "$out" && ls ./*.deb | tr '\n' ' ')in $out ($(($(date +%s) - start)) s)"
