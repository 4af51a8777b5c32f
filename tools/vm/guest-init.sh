#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# PID 1 of a lite-vm guest. The initramfs /init has mounted the host root
# read-only over 9p and chrooted into it, so host binaries run unchanged and
# the kernel's on-demand modprobe finds /sbin/modprobe and /lib/modules.
#
# Kernel command line (read from /proc/cmdline once /proc is mounted):
#   lite_run=DIR  host directory (visible here) holding env, cmd, module copy
#   lite_idx=I    index of this guest, 0-based
# DIR/env sets LITE_GUESTS, LITE_REPO, LITE_TIMEOUT, LITE_NO_MODULE,
# LITE_MODULE, LITE_BUILTIN (a build tree's modules.builtin when the kernel is
# not Debian's: modules listed there are not modprobed), LITE_UNLOAD (1: rmmod
# the module after the command); DIR/cmd holds the command as NUL-separated
# words. With kmemleak, a leak scan follows the command (and the unload).
#
# Console protocol read by lite-vm: "LITE-VM-EXIT: <rc>" after the command,
# then the kernel log between LITE-VM-DMESG-BEGIN and LITE-VM-DMESG-END.
# A setup failure prints "LITE-VM-SETUP-FAILED: ..." and no exit marker.
set -euo pipefail

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C.UTF-8

dump_dmesg_and_power_off() {
	set +e
	echo "LITE-VM-DMESG-BEGIN"
	dmesg --color=never
	echo "LITE-VM-DMESG-END"
	sync
	echo o >/proc/sysrq-trigger
	# PID 1 must never exit (that would panic the kernel): wait for power-off.
	while :; do sleep 1; done
}

fail() {
	trap - ERR
	echo "LITE-VM-SETUP-FAILED: $*"
	dump_dmesg_and_power_off
}
trap 'fail "line $LINENO: \"$BASH_COMMAND\" failed"' ERR

# --- Filesystems -----------------------------------------------------------
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
# As udev makes them on a real system (bash's <(...) needs /dev/fd).
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
[ -e /dev/stdin ] || ln -s /proc/self/fd/0 /dev/stdin
[ -e /dev/stdout ] || ln -s /proc/self/fd/1 /dev/stdout
[ -e /dev/stderr ] || ln -s /proc/self/fd/2 /dev/stderr
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
if grep -qw debugfs /proc/filesystems && [ -d /sys/kernel/debug ]; then
	mount -t debugfs debugfs /sys/kernel/debug
fi
if grep -qw tracefs /proc/filesystems && [ -d /sys/kernel/tracing ]; then
	mount -t tracefs tracefs /sys/kernel/tracing
fi

run='' idx=''
read -ra kargs </proc/cmdline
for arg in "${kargs[@]}"; do
	case $arg in
	lite_run=*) run=${arg#lite_run=} ;;
	lite_idx=*) idx=${arg#lite_idx=} ;;
	esac
done
if [ -z "$run" ] || [ -z "$idx" ]; then
	fail "lite_run= or lite_idx= missing from kernel command line"
fi
[ -r "$run/env" ] || fail "$run/env not readable"
# shellcheck source=/dev/null
. "$run/env"
mapfile -d '' -t cmd <"$run/cmd"
[ ${#cmd[@]} -gt 0 ] || fail "empty command"

mkdir -p /run/lite-out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /run/lite-out ||
	fail "cannot mount the out share (tag out)"
echo "lite-g$idx" >/proc/sys/kernel/hostname

# --- Modules and network ---------------------------------------------------
mods=(rdma_rxe ib_uverbs rdma_ucm veth virtio_net)
[ "$LITE_GUESTS" -le 2 ] || mods+=(bridge)
if [ -n "${LITE_BUILTIN:-}" ]; then
	# A kernel from a build tree has no /lib/modules here: skip what it has
	# built in, modprobe the rest (which fails unless it can be found).
	need=()
	for m in "${mods[@]}"; do
		grep -q "/$m\.ko\$" "$LITE_BUILTIN" || need+=("$m")
	done
	[ ${#need[@]} -eq 0 ] || modprobe -a "${need[@]}"
else
	modprobe -a "${mods[@]}"
fi
# Report a task stuck in D state after 30 s (default 120) so the log scan
# catches hangs well inside a run.
echo 30 >/proc/sys/kernel/hung_task_timeout_secs
ip link set lo up
if [ "$LITE_GUESTS" -eq 1 ]; then
	# One guest: rxe0 on veth0; veth1 is a second addressed end for tests.
	ip link add veth0 type veth peer name veth1
	ip addr add 10.99.0.1/24 dev veth0
	ip addr add 10.99.0.2/24 dev veth1
	ip link set veth0 up
	ip link set veth1 up
	netdev=veth0
	addr=10.99.0.1
	peers=10.99.0.1
else
	# Several guests: one NIC per other guest j (MAC 52:54:00:12:<me>:<j>,
	# a point-to-point link to it, see lite-vm). With two guests that NIC
	# is eth0. With more, each is renamed to<j> and all are joined into a
	# bridge named eth0; port isolation keeps the bridge from relaying
	# between links (each guest reaches every other directly, a broadcast
	# reaches each once). Under each link a plain FIFO: QEMU holds frames
	# back rather than drop them, and fq_codel would drop what queues up
	# meanwhile. Jumbo frames: rxe's path MTU becomes 4096, a quarter of
	# the frames (each costs the emulated guests far more than its bytes).
	me=$(printf %02x "$idx")
	for _ in $(seq 100); do
		links=() # their address files (no /dev/fd here for <(...))
		for f in /sys/class/net/*/address; do
			[[ $(cat "$f") != 52:54:00:12:$me:* ]] || links+=("$f")
		done
		[ ${#links[@]} -eq $((LITE_GUESTS - 1)) ] && break
		sleep 0.1
	done
	[ ${#links[@]} -eq $((LITE_GUESTS - 1)) ] ||
		fail "${#links[@]} of $((LITE_GUESTS - 1)) links to the other guests: $(echo /sys/class/net/*)"
	link_up() { # DEV [NAME]: bring up a link, renamed NAME
		[ -z "${2:-}" ] || [ "$1" = "$2" ] || ip link set dev "$1" name "$2"
		ip link set dev "${2:-$1}" mtu 9000
		tc qdisc replace dev "${2:-$1}" root pfifo limit 10000
		ip link set dev "${2:-$1}" up
	}
	if [ "$LITE_GUESTS" -eq 2 ]; then
		link_up "$(basename "$(dirname "${links[0]}")")" eth0
	else
		ip link add eth0.br type bridge
		for f in "${links[@]}"; do
			mac=$(cat "$f")
			link=to$((16#${mac##*:}))
			link_up "$(basename "$(dirname "$f")")" "$link"
			ip link set dev "$link" master eth0.br
			bridge link set dev "$link" isolated on
		done
		ip link set dev eth0.br name eth0
		ip link set eth0 mtu 9000
	fi
	addr=10.99.1.$((idx + 1))
	ip addr add "$addr/24" dev eth0
	ip link set eth0 up
	netdev=eth0
	peers=$(for ((g = 0; g < LITE_GUESTS; g++)); do printf '10.99.1.%d ' $((g + 1)); done)
	peers=${peers% }
fi
rdma link add rxe0 type rxe netdev "$netdev"
for _ in $(seq 100); do
	rdma link show rxe0/1 2>/dev/null | grep -q 'state ACTIVE' && break
	sleep 0.1
done
rdma link show rxe0/1 | grep -q 'state ACTIVE' || fail "rxe0 port did not become ACTIVE"

# --- udev: the rule the install step put in /etc/udev/rules.d ---------------
# (tools/install-udev.sh: /dev/lite for group lite, 0660), nothing else:
# Debian's own rules (renaming links and RDMA devices, loading modules) are
# hidden under an empty tmpfs. It runs on, so /dev/lite gets its group each
# time a test loads the module again.
if [ -r /etc/udev/rules.d/60-lite.rules ] && [ -x /lib/systemd/systemd-udevd ]; then
	mount -t tmpfs -o mode=0755 tmpfs /lib/udev/rules.d
	/lib/systemd/systemd-udevd --daemon
fi

# --- The module under test -------------------------------------------------
if [ "$LITE_NO_MODULE" -eq 0 ]; then
	[ -r "$LITE_MODULE" ] || fail "module $LITE_MODULE not found"
	# shellcheck disable=SC2086 # PARAM=VALUE words
	insmod "$LITE_MODULE" ${LITE_MODULE_ARGS:-} || fail "insmod $LITE_MODULE ${LITE_MODULE_ARGS:-} failed"
	! command -v udevadm >/dev/null || udevadm settle --timeout=10 || true
fi

export LITE_GUEST_INDEX=$idx LITE_GUESTS LITE_ADDR=$addr LITE_PEERS=$peers LITE_NETDEV=$netdev
export LITE_RXE=rxe0 LITE_REPO LITE_OUT=/run/lite-out LITE_MODULE LITE_RUN_ID LITE_MODULE_ARGS
trap - ERR
cd "$LITE_REPO"

# --- The command -----------------------------------------------------------
# Leave time for the dmesg dump and power-off before the host-side timeout
# (and for the unload and the leak scan, which are slow under KASAN).
kmemleak=/sys/kernel/debug/kmemleak
reserve=15
[ "${LITE_UNLOAD:-0}" -eq 0 ] || reserve=$((reserve + 60))
[ ! -w "$kmemleak" ] || reserve=$((reserve + 120))
up=$(cut -d. -f1 /proc/uptime)
budget=$((LITE_TIMEOUT - up - reserve))
[ "$budget" -ge 5 ] || budget=5
set +e
# The watchdog: 20 s before the command's time is up, the kernel stack of
# every task that runs, waits uninterruptibly, or sleeps in lite, RDMA or
# rxe code goes to the console (a hang names itself). Shell builtins only:
# a process per task takes too long under TCG.
(
	sleep $((budget > 40 ? budget - 20 : budget))
	echo "LITE-VM-HANG-DUMP: the command runs $budget s, about to be killed"
	for t in /proc/[0-9]*/task/[0-9]*; do
		state=
		while read -r key value _; do
			[ "$key" != State: ] || { state=$value; break; }
		done <"$t/status" 2>/dev/null
		stack=$(<"$t/stack") 2>/dev/null || continue
		case $state in
		S | I) [[ $stack =~ lite|dsm|rdma|rxe ]] || continue ;;
		esac
		echo "--- task ${t#/proc/} ($(<"$t/comm"), state $state)"
		printf '%s\n' "$stack"
	done 2>/dev/null
	echo "LITE-VM-HANG-DUMP-END"
) &
watchdog=$!
began=$SECONDS
timeout -k 5 "$budget" "${cmd[@]}" </dev/null
rc=$?
kill "$watchdog" 2>/dev/null
wait "$watchdog" 2>/dev/null
set -e
# 124: ended by SIGTERM; 137: SIGKILL 5 s later (or the OOM killer).
if [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && [ $((SECONDS - began)) -ge "$budget" ]; }; then
	echo "LITE-VM-GUEST-TIMEOUT: command killed after $budget s"
fi
if [ "${LITE_UNLOAD:-0}" -eq 1 ] && [ "$LITE_NO_MODULE" -eq 0 ]; then
	mod=$(basename "$LITE_MODULE" .ko)
	mod=${mod//-/_}
	if [ -d "/sys/module/$mod" ]; then
		echo "lite-vm: rmmod $mod"
		if ! timeout 50 rmmod "$mod"; then
			echo "LITE-VM-UNLOAD-FAILED: rmmod $mod"
			[ "$rc" -ne 0 ] || rc=1
		fi
	fi
fi
if [ -w "$kmemleak" ]; then
	# kmemleak reports objects unreferenced in a scan and older than 5 s;
	# a second scan after that age catches the newest ones.
	echo "lite-vm: kmemleak scan"
	echo scan >"$kmemleak" || true
	sleep 6
	echo scan >"$kmemleak" || true
	echo "LITE-VM-KMEMLEAK-BEGIN"
	cat "$kmemleak" || true
	echo "LITE-VM-KMEMLEAK-END"
fi
echo
echo "LITE-VM-EXIT: $rc"
dump_dmesg_and_power_off
