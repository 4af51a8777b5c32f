#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build a debug kernel (KASAN, lockdep, kmemleak, UBSAN, hung-task and
# soft-lockup detectors, list debugging) from Debian's linux-source-6.1, with
# everything lite's guests need built in, into a cache outside the clone:
#   tools/vm/debug-kernel.sh [--print]
# Cache: $LITE_DEBUG_CACHE (default /work/cache/lite-debug-kernel). The tree
# is unpacked to CACHE/linux-source-6.1 and built in place. Does nothing if
# CACHE/linux-source-6.1/arch/x86/boot/bzImage is already built (a stamp file
# marks a finished build; a changed patch set rebuilds). --print: print the
# tree path and exit (nonzero if it is not built). About 20 min of wall time
# on 2 cores. The patches in tools/vm/debug-kernel-patches are applied first.
# Needs: linux-source-6.1 bc bison flex libelf-dev libssl-dev dwarves (root
# installs them when missing).
set -euo pipefail

cache=${LITE_DEBUG_CACHE:-/work/cache/lite-debug-kernel}
tree=$cache/linux-source-6.1
stamp=$tree/.lite-debug-built
# Fixes to the instrument itself (bugs of the 6.1 tree that KASAN would
# report as if they were lite's), each explained in its patch.
patches=$(cd "$(dirname "$0")/debug-kernel-patches" && pwd)
patched=$tree/.lite-patches
want_patches=$(cd "$patches" && ls ./*.patch | sort | xargs cat | sha256sum | cut -d' ' -f1)

if [ "${1:-}" = --print ]; then
	echo "$tree"
	[ -f "$stamp" ]
	exit
fi
if [ -f "$stamp" ] && [ -f "$tree/arch/x86/boot/bzImage" ] &&
	[ "$(cat "$patched" 2>/dev/null)" = "$want_patches" ]; then
	echo "debug-kernel: already built: $tree/arch/x86/boot/bzImage"
	exit 0
fi

pkgs=(linux-source-6.1 bc bison flex libelf-dev libssl-dev dwarves)
missing=()
for p in "${pkgs[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" -eq 0 ] || { echo "debug-kernel: install ${missing[*]} (as root)" >&2; exit 1; }
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

mkdir -p "$cache"
if [ ! -f "$tree/Makefile" ]; then
	tarballs=(/usr/src/linux-source-6.1.tar.*)
	tarball=${tarballs[0]}
	[ -f "$tarball" ] || { echo "debug-kernel: no /usr/src/linux-source-6.1.tar.*" >&2; exit 1; }
	echo "debug-kernel: unpacking $tarball"
	rm -rf "$tree.tmp"
	mkdir -p "$tree.tmp"
	tar -xaf "$tarball" -C "$tree.tmp" --strip-components=1
	mv "$tree.tmp" "$tree"
fi

cd "$tree"
if [ "$(cat "$patched" 2>/dev/null)" != "$want_patches" ]; then
	for p in "$patches"/*.patch; do
		if patch -p1 -R -s -f --dry-run <"$p" >/dev/null 2>&1; then
			echo "debug-kernel: already applied: $(basename "$p")"
		else
			echo "debug-kernel: applying $(basename "$p")"
			patch -p1 -s -N <"$p"
		fi
	done
	echo "$want_patches" >"$patched"
	rm -f "$stamp"
fi
if [ ! -f .config ] || [ ! -f .lite-debug-config ]; then
	make -s defconfig
	scripts/config \
		-e MODULES -e MODULE_UNLOAD \
		-e INFINIBAND -e INFINIBAND_USER_ACCESS -e INFINIBAND_ADDR_TRANS -e RDMA_RXE \
		-e NET_9P -e NET_9P_VIRTIO -e 9P_FS \
		-e VIRTIO_PCI -e VIRTIO_NET -e VETH -e BRIDGE -e NET_SCHED -e NET_SCH_NETEM -e DEVTMPFS \
		-e IO_URING -e USERFAULTFD \
		-e KASAN -e KASAN_GENERIC -e KASAN_INLINE -d KASAN_OUTLINE \
		-e PROVE_LOCKING -e DEBUG_ATOMIC_SLEEP \
		-e DEBUG_KMEMLEAK -d DEBUG_KMEMLEAK_DEFAULT_OFF --set-val DEBUG_KMEMLEAK_MEM_POOL_SIZE 65536 \
		-e DEBUG_FS -e DEBUG_FS_ALLOW_ALL \
		-e DETECT_HUNG_TASK -e SOFTLOCKUP_DETECTOR -e DEBUG_LIST \
		-e UBSAN -e UBSAN_BOUNDS \
		-e CRYPTO_LIB_SHA256 -e CRYPTO_CRC32 -e CRYPTO_CRC32C \
		-d DRM -d SOUND -d USB_SUPPORT -d WLAN \
		-d DEBUG_INFO -d DEBUG_INFO_DWARF4 -d DEBUG_INFO_DWARF5 \
		-d DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT -d DEBUG_INFO_BTF \
		-e DEBUG_INFO_NONE
	make -s olddefconfig
	# Check what olddefconfig kept: a dependency it silently dropped would
	# give a kernel without the detector we asked for.
	for o in MODULES MODULE_UNLOAD INFINIBAND INFINIBAND_USER_ACCESS INFINIBAND_ADDR_TRANS \
		RDMA_RXE NET_9P NET_9P_VIRTIO 9P_FS VIRTIO_PCI VIRTIO_NET VETH BRIDGE NET_SCH_NETEM \
		DEVTMPFS IO_URING \
		USERFAULTFD KASAN KASAN_GENERIC KASAN_INLINE PROVE_LOCKING DEBUG_ATOMIC_SLEEP \
		DEBUG_KMEMLEAK DEBUG_FS DETECT_HUNG_TASK SOFTLOCKUP_DETECTOR DEBUG_LIST UBSAN \
		UBSAN_BOUNDS CRYPTO_LIB_SHA256; do
		grep -q "^CONFIG_$o=y" .config || { echo "debug-kernel: CONFIG_$o not =y after olddefconfig" >&2; exit 1; }
	done
	touch .lite-debug-config
fi

start=$(date +%s)
echo "debug-kernel: make -j$(nproc) bzImage modules in $tree"
make -j"$(nproc)" bzImage modules
echo "debug-kernel: built in $(($(date +%s) - start)) s: $tree/arch/x86/boot/bzImage"
touch "$stamp"
