#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# netem.sh: put loss, delay, reordering, ... on what a lite-vm guest sends
# (tc netem as the root qdisc of $LITE_NETDEV, or of one link). See usage().
set -euo pipefail

usage() {
	cat <<'EOF'
usage: tools/vm/netem.sh [--dev DEV] set NETEM-ARGS...
       tools/vm/netem.sh [--dev DEV] clear
       tools/vm/netem.sh [--dev DEV] show

Inside a lite-vm guest only. set: make netem with NETEM-ARGS (tc-netem(8))
the root qdisc of DEV, replacing any earlier one; clear: remove it again;
show: print DEV's root qdisc. DEV defaults to $LITE_NETDEV: with
--guests N that is eth0 (the link to the other guest, or with three or
more the bridge over this guest's links), so netem acts on every frame this
guest sends to any other guest; with three or more, --dev to<j> shapes only
the link to guest j.

netem acts on the frames DEV sends (requests, responses and acknowledgements
alike); run it in several guests to shape more of the traffic. Nodes sharing
one rxe device talk through rxe's internal loopback, which netem never sees:
wire faults need nodes in different guests. Examples:
  tools/vm/netem.sh set loss 5%
  tools/vm/netem.sh --dev to1 set delay 10ms 5ms reorder 25% 50%
  tools/vm/netem.sh clear
From a test: system("\"$LITE_REPO\"/tools/vm/netem.sh set loss 5%"), or
lite_guest::netem("loss 5%") / lite_guest::netem("") in tests/guest.
Exit status: 0 done, 1 tc failed, 2 usage or not in a guest.
EOF
}

die() {
	echo "netem.sh: $*" >&2
	exit "${2:-2}"
}

dev=${LITE_NETDEV:-}
if [ "${1:-}" = --dev ]; then
	dev=${2:?--dev needs a device}
	shift 2
fi
case ${1:-} in
-h | --help) usage; exit 0 ;;
set) [ $# -ge 2 ] || { usage >&2; die "set needs netem arguments (e.g. loss 5%)"; } ;;
clear | show) [ $# -eq 1 ] || { usage >&2; die "$1 takes no arguments"; } ;;
*) usage >&2; die "unknown or missing command '${1:-}'" ;;
esac
# The host has no netem and must not have its qdiscs changed by a test.
[ -n "${LITE_GUEST_INDEX:-}" ] || die "not inside a lite-vm guest (LITE_GUEST_INDEX unset)"
[ -n "$dev" ] || die "no device: LITE_NETDEV unset and no --dev"
[ -e "/sys/class/net/$dev" ] || die "no network device $dev"

case $1 in
set)
	shift
	# tc loads sch_netem on demand (the guest's modprobe is the host's);
	# a kernel built without it (CONFIG_NET_SCH_NETEM) makes this fail.
	tc qdisc replace dev "$dev" root netem "$@" ||
		die "tc qdisc replace dev $dev root netem $* failed (sch_netem in this kernel?)" 1
	;;
clear)
	# A link (a NIC, not the bridge) goes back to the FIFO guest-init.sh
	# gave it (the default, fq_codel, drops what queues up while QEMU holds
	# frames back); a virtual device to its default. Nothing to remove is
	# fine.
	if [ -e "/sys/class/net/$dev/device" ]; then
		tc qdisc replace dev "$dev" root pfifo limit 10000 || die "tc qdisc replace dev $dev failed" 1
	elif tc qdisc show dev "$dev" root | grep -q '^qdisc netem '; then
		tc qdisc del dev "$dev" root || die "tc qdisc del dev $dev root failed" 1
	fi
	;;
show) tc qdisc show dev "$dev" root ;;
esac
