# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by host-install.sh and guest-install.sh: a writable overlay of
# this system's root, and dpkg -i of the Debian packages into it.

fail() {
	echo "packages: FAIL: $*"
	exit 1
}
step() { echo "packages: $*"; }

# overlay_root TOP [UPPER.tar]: a tmpfs at TOP holding the overlay's upper
# and work directories (a separate file system, so no layer lies inside
# another), the overlay of / at TOP/root with /proc, /sys and /dev bound
# and its own /tmp and /run. With UPPER.tar (from host-install.sh), the
# upper directory starts as that archive's files: the packages are then
# installed already. Sets r to TOP/root.
overlay_root() {
	local top=$1 tar=${2:-}
	mkdir -p "$top"
	mount -t tmpfs tmpfs "$top"
	mkdir -p "$top/upper" "$top/work" "$top/root"
	if [ -n "$tar" ]; then
		tar -xpf "$tar" --xattrs --xattrs-include='*' -C "$top/upper" || fail "unpacking $tar"
	fi
	mount -t overlay overlay -o "lowerdir=/,upperdir=$top/upper,workdir=$top/work" "$top/root"
	r=$top/root
	local d
	for d in proc sys dev dev/pts; do mount --bind "/$d" "$r/$d"; done
	mount -t tmpfs tmpfs "$r/tmp"
	mount -t tmpfs tmpfs "$r/run"
}

in_root() {
	chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		DEBIAN_FRONTEND=noninteractive "$@"
}

# dpkg_install DEBDIR: dpkg -i of the four packages into the overlay, each
# line of its output timed; fails on any error.
dpkg_install() {
	local debs=$1 t0 rc=0
	step "dpkg -i $(cd "$debs" && echo lite-dkms_*.deb liblite0_*.deb liblite-dev_*.deb litectl_*.deb)"
	rm -f "$r/var/lib/man-db/auto-update"
	t0=$(date +%s)
	{ in_root dpkg -i "$debs"/lite-dkms_*.deb "$debs"/liblite0_*.deb "$debs"/liblite-dev_*.deb \
		"$debs"/litectl_*.deb 2>&1 || echo "dpkg: exit $?"; } |
		while IFS= read -r line; do echo "packages: [$(($(date +%s) - t0)) s] $line"; done | tee "$r/run/dpkg.log"
	! grep -q '^packages: \[[0-9]* s\] dpkg: exit' "$r/run/dpkg.log" || rc=1
	[ "$rc" -eq 0 ] || fail "dpkg -i"
	step "installed in $(($(date +%s) - t0)) s"
}
