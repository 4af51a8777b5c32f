#!/bin/bash
# SPDX-License-Identifier: MIT
# The kernel's own NFS over RDMA in a lite-vm guest, as the external anchor
# of the sendfile benchmark (bench.sh): the guest exports a directory with
# knfsd, listening for RDMA on port 20049 of the rxe device's address, and
# mounts it back over RDMA (NFSv3, proto=rdma, no locking), so reads of the
# mount go client -> rpcrdma -> rxe -> svcrdma -> the exported page cache.
#
#   nfs_rdma.sh up DIR MNT      export DIR, mount it on MNT
#   nfs_rdma.sh down DIR MNT    unmount, stop the server, undo the mounts
#
# Needs root in a lite-vm guest (the host root is read-only there: the
# state directories get tmpfs mounts) and Debian's nfs-kernel-server.
# Environment: LITE_ADDR (10.99.0.1). Exit 0 ok, 1 failure (named on
# stderr), 2 usage.
set -euo pipefail

say() { echo "nfs_rdma: $*" >&2; }
[ $# -eq 3 ] || { say "usage: nfs_rdma.sh up|down DIR MNT"; exit 2; }
cmd=$1 dir=$2 mnt=$3
addr=${LITE_ADDR:-10.99.0.1}

up() {
	local t
	for t in rpc.nfsd rpc.mountd exportfs rpcbind mount.nfs; do
		command -v "$t" >/dev/null || { say "$t missing (nfs-kernel-server)"; return 1; }
	done
	modprobe nfsd && modprobe rpcrdma || { say "modprobe nfsd rpcrdma failed"; return 1; }
	mountpoint -q /var/lib/nfs || mount -t tmpfs -o mode=0755 tmpfs /var/lib/nfs
	mkdir -p /var/lib/nfs/sm /var/lib/nfs/sm.bak /var/lib/nfs/v4recovery /run/rpcbind "$mnt"
	: >/var/lib/nfs/etab
	: >/var/lib/nfs/rmtab
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	pgrep -x rpcbind >/dev/null || rpcbind
	exportfs -o rw,sync,no_root_squash,insecure,no_subtree_check,fsid=7 "$addr/32:$dir" ||
		{ say "exportfs $dir failed"; return 1; }
	pgrep -x rpc.mountd >/dev/null || rpc.mountd
	rpc.nfsd -N 4 4 || { say "rpc.nfsd failed"; return 1; }
	echo "rdma 20049" >/proc/fs/nfsd/portlist || { say "knfsd does not listen for RDMA (svcrdma)"; return 1; }
	mount -t nfs -o vers=3,proto=rdma,port=20049,nolock,actimeo=0 "$addr:$dir" "$mnt" ||
		{ say "mount -o proto=rdma $addr:$dir failed"; return 1; }
	grep -q " $mnt nfs .*proto=rdma" /proc/mounts || { say "$mnt is not an NFS/RDMA mount"; return 1; }
	say "$dir exported and mounted on $mnt over RDMA ($addr:20049)"
}

down() {
	local st=0
	if mountpoint -q "$mnt"; then umount "$mnt" || st=1; fi
	rpc.nfsd 0 2>/dev/null || true
	exportfs -ua 2>/dev/null || true
	pkill -x rpc.mountd 2>/dev/null || true
	pkill -x rpcbind 2>/dev/null || true
	if mountpoint -q /proc/fs/nfsd; then umount /proc/fs/nfsd || st=1; fi
	if mountpoint -q /var/lib/nfs; then umount /var/lib/nfs || st=1; fi
	return $st
}

case $cmd in
up) up ;;
down) down ;;
*) say "usage: nfs_rdma.sh up|down DIR MNT"; exit 2 ;;
esac
