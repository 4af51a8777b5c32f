#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The Debian packages, installed in a guest booted without lite.ko
# (lite-vm --no-module): dpkg -i of lite-dkms, liblite0, liblite-dev and
# litectl in a writable overlay of the guest's root (the host's, read-only
# over 9p); DKMS builds and installs lite.ko for the running kernel; a
# 2-node cluster comes up through lite@.service's own ExecStartPre and
# ExecStart lines (systemd is not PID 1 in these guests), a C program built
# with pkg-config against liblite-dev moves data between the two nodes,
# and the ExecStop lines take the nodes down. With INSTALLED.tar (from
# host-install.sh, which ran dpkg -i and DKMS's compile on the host at
# native speed), the overlay starts with those files and dpkg is not run
# here; the checks are the same.
#   lite-vm --no-module -- tests/packaging/guest-install.sh DEBDIR [INSTALLED.tar]
set -euo pipefail

debs=$(realpath "${1:?usage: guest-install.sh DEBDIR [INSTALLED.tar]}")
installed=${2:+$(realpath "$2")}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=install-lib.sh
. "$here/install-lib.sh"
[ "$(id -u)" -eq 0 ] || fail "run as root, in a guest"
! grep -qw '^lite' /proc/modules || fail "lite.ko is loaded already (boot with --no-module)"

overlay_root /run/lite-pkg "$installed"
kver=$(uname -r)
if [ -n "$installed" ]; then
	step "installed on the host by host-install.sh: $installed"
else
	dpkg_install "$debs"
fi

status=$(in_root dkms status lite)
step "dkms status: $status"
grep -q "^lite/[^,]*, $kver, [^:]*: installed" <<<"$status" || fail "dkms did not install lite for $kver"
modinfo=$(in_root modinfo -k "$kver" lite)
grep -q "^filename: *.*/updates/dkms/lite.ko" <<<"$modinfo" || fail "modinfo: not the DKMS module: $modinfo"
version=$(in_root dpkg-query -W -f='${Version}' lite-dkms)
grep -q "^version: *$version\$" <<<"$modinfo" || fail "modinfo: version is not $version"
[ "$(grep -c '^parm:' <<<"$modinfo")" -ge 10 ] || fail "modinfo: parameters missing"
cmp "$here/../../tools/udev/60-lite.rules" "$r/usr/lib/udev/rules.d/60-lite.rules" || fail "udev rule"
in_root getent group lite >/dev/null || fail "litectl's postinst made no group lite"
[ "$(cat "$r/usr/lib/modules-load.d/lite.conf" | grep -v '^#')" = lite ] || fail "modules-load.d entry"

# Two nodes from /etc/lite/NAME.conf, through the unit's own lines.
unit=$r/usr/lib/systemd/system/lite@.service
[ -r "$unit" ] || fail "no lite@.service"
addr=${LITE_ADDR:-10.99.0.1}
head -c 32 /dev/urandom | base64 >"$r/etc/lite/secret"
chmod 600 "$r/etc/lite/secret"
cat >"$r/etc/lite/a.conf" <<CONF
dev = ${LITE_RXE:-rxe0}
listen = $addr:18600
secret-file = /etc/lite/secret
CONF
cat >"$r/etc/lite/b.conf" <<CONF
dev = ${LITE_RXE:-rxe0}
listen = $addr:18601
join = $addr:18600
secret-file = /etc/lite/secret
isolation = lmr
CONF
unit_run() { # KEY NAME: run the unit's KEY= lines for instance NAME
	local line
	grep "^$1=" "$unit" | while IFS= read -r line; do
		line=${line#"$1"=}
		line=${line//%i/$2}
		step "lite@$2: $1 $line"
		# shellcheck disable=SC2086 # the unit's words
		in_root $line || exit 1
	done
}
for n in a b; do
	unit_run ExecStartPre "$n" || fail "lite@$n ExecStartPre"
	unit_run ExecStart "$n" || fail "lite@$n ExecStart"
done
grep -qw '^lite' /proc/modules || fail "ExecStartPre did not load lite.ko"
json=$(in_root litectl status --json)
counts=$(python3 -c '
import json, sys
s = json.load(sys.stdin)
print(len(s), " ".join(str(len(n["members"])) for n in s), " ".join(str(n["node_id"]) for n in s),
      " ".join(str(n["instance"]) for n in s))' <<<"$json")
step "status: instances, members of each, node ids, instance numbers: $counts"
read -r n m1 m2 id1 id2 inst1 _ <<<"$counts"
[ "$n" = 2 ] && [ "$m1" = 2 ] && [ "$m2" = 2 ] || fail "not a 2-node cluster: $json"

# A program built against the installed headers and library, pkg-config's way.
cp "$here/use_liblite.c" "$r/tmp/"
in_root sh -c 'cc -O2 -Wall -Werror $(pkg-config --cflags liblite) /tmp/use_liblite.c \
	$(pkg-config --libs liblite) -o /tmp/use_liblite' || fail "building against liblite-dev"
in_root /tmp/use_liblite "$inst1" "$id2" || fail "use_liblite"
in_root ldd /tmp/use_liblite | grep -Eq 'liblite.so.0 => /(usr/)?lib/[^ ]*/liblite.so.0 ' || fail "not linked to the packaged liblite.so.0"

for n in b a; do
	unit_run ExecStop "$n" || fail "lite@$n ExecStop"
done
left=$(in_root litectl info --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["instances"]))')
[ "$left" = 0 ] || fail "$left instance(s) left after ExecStop"
rmmod lite
step "PASS: packages installed, dkms built lite for $kver, lite@a and lite@b up and down"
