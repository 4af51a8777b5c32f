#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The Debian packages installed on the host, in a private mount namespace,
# into a writable overlay of its root: dpkg -i of lite-dkms, liblite0,
# liblite-dev and litectl, DKMS building lite.ko for every kernel in
# /lib/modules (the Debian kernel the guests boot; the host's own kernel
# has no headers here). The overlay's upper directory, which holds all the
# installation did, is written to OUT.tar for guest-install.sh, which
# checks it and runs the services in a guest. DKMS's compile is what takes
# time, and it runs here at native speed rather than under TCG. Nothing
# outside OUT.tar changes on the host.
#   tests/packaging/host-install.sh DEBDIR OUT.tar
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=install-lib.sh
. "$here/install-lib.sh"

if [ "${1:-}" != --in-namespace ]; then
	[ "$(id -u)" -eq 0 ] || fail "run as root (the overlay and chroot need it)"
	[ $# -eq 2 ] || { echo "usage: host-install.sh DEBDIR OUT.tar" >&2; exit 2; }
	top=$(mktemp -d)
	rc=0
	unshare --mount --propagation private "$0" --in-namespace "$(realpath "$1")" "$(realpath -m "$2")" "$top" ||
		rc=$?
	rmdir "$top"
	exit "$rc"
fi
debs=$2 out=$3 top=$4

overlay_root "$top"
dpkg_install "$debs"
rm -f "$out"
tar -cf "$out" --xattrs --xattrs-include='*' -C "$top/upper" .
step "the installation's files: $out ($(du -m "$out" | cut -f1) MiB)"
