#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian packages this project needs, only if some are missing.
# Fast no-op (one dpkg-query call) when everything is present.
set -euo pipefail

pkgs=(
	qemu-system-x86 linux-image-amd64 linux-headers-amd64 busybox-static
	rdma-core ibverbs-providers ibverbs-utils libibverbs-dev librdmacm-dev
	rdmacm-utils perftest liburing-dev meson ninja-build kmod cpio sparse
	pkg-config iproute2 libgtest-dev libssl-dev g++ python3
	python3-matplotlib clang-format clang-tidy clang-14 libclang-rt-14-dev
	libglobalarrays-dev libarmci-mpi-dev libscalapack-openmpi-dev libopenmpi-dev
	openmpi-bin libmrmpi-dev libcli11-dev nlohmann-json3-dev wamerican dict-gcide nfs-kernel-server
	dkms dh-dkms debhelper dpkg-dev fakeroot
)

# One query for all packages; unknown ones go to stderr and count as missing.
installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${pkgs[@]}" 2>/dev/null |
	awk '$1 == "ii" { print $2 }' || true)

missing=()
for p in "${pkgs[@]}"; do
	grep -qxF -- "$p" <<<"$installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps.sh: all ${#pkgs[@]} packages already installed"
	exit 0
fi

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >/dev/null
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps.sh: installed ${#missing[@]} missing package(s): ${missing[*]}"
