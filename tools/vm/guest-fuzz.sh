#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In a lite-vm guest: run a command first if one is given (make check: the
# guest tests, in the same boot), then the ioctl and io_uring fuzzer
# (tests/fuzz/guest/lite_fuzz_ioctl.cpp, built as lite-fuzz-ioctl) with
# FUZZ-OPTIONs. In $LITE_OUT: before.rc (the command's exit status),
# fuzz-ioctl.rc, fuzz-ioctl.log (the fuzzer's output, also on the console)
# and fuzz-ioctl.json (its figures). Exits with the command's status if it
# failed, else with the fuzzer's.
#   tools/vm/guest-fuzz.sh [FUZZ-OPTION...] [-- CMD [ARG...]]
# BUILD names the meson build directory (default build/meson).
set -uo pipefail
build=${BUILD:-build/meson}
out=${LITE_OUT:?run this inside lite-vm (LITE_OUT unset)}
fuzz=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	fuzz+=("$1")
	shift
done
before=0
if [ $# -gt 0 ]; then
	shift
	"$@"
	before=$?
	echo "$before" >"$out/before.rc"
fi
rm -f "$out/fuzz-ioctl.json"
"$build/tests/lite-fuzz-ioctl" ${fuzz[@]+"${fuzz[@]}"} 2>&1 | tee "$out/fuzz-ioctl.log"
rc=${PIPESTATUS[0]}
echo "$rc" >"$out/fuzz-ioctl.rc"
[ "$before" -eq 0 ] || exit "$before"
exit "$rc"
