#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make lint: the C++ user space (liblite, litectl, tests) must be clang-format
# and clang-tidy clean (.clang-format, .clang-tidy at the top; any clang-tidy
# diagnostic is an error there). lite_kmod is kernel C in the kernel's style
# and is checked by tools/kmod-check.sh instead.
#   tools/lint.sh
# Checks the files git tracks. clang-tidy uses $BUILD/compile_commands.json
# (BUILD defaults to build/meson; set up with meson if missing), for the
# libFuzzer targets in tests/fuzz (built by clang outside meson) the one
# tools/fuzz-host.sh writes to build/fuzz (tests/fuzz/guest is built by
# meson), and runs LINT_JOBS files at a time (default 2). Exit 0 only if
# nothing was reported.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/meson}
jobs=${LINT_JOBS:-2}

mapfile -t fmt_files < <(git ls-files -- '*.cpp' '*.hpp' ':!:lite_kmod/**')
mapfile -t tidy_files < <(git ls-files -- '*.cpp' ':!:lite_kmod/**')
failed=0

# clang-format: report every file that would change, with the first hunks.
bad_fmt=0
for f in "${fmt_files[@]}"; do
	if ! clang-format --dry-run -Werror "$f" 2>/dev/null; then
		bad_fmt=$((bad_fmt + 1))
		echo "lint: $f is not clang-format clean:"
		clang-format "$f" | diff -u "$f" - | head -40 || true
	fi
done
[ "$bad_fmt" -eq 0 ] || failed=1

# clang-tidy: one process per file, $jobs at a time, each into its own log
# so the diagnostics of parallel runs do not interleave.
if [ ! -f "$build/compile_commands.json" ]; then
	meson setup "$build" >/dev/null
fi
fuzz_build=${FUZZ_OUT:-build/fuzz}
FUZZ_OUT=$fuzz_build tools/fuzz-host.sh compdb
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export build fuzz_build logs
# Largest files first (the large guest tests and litectl take a minute
# each): the last minutes then have both jobs busy on small files.
# shellcheck disable=SC2016 # expanded by the inner shell
for f in "${tidy_files[@]}"; do printf '%s %s\0' "$(stat -c %s "$f")" "$f"; done |
	sort -z -rn | cut -z -d' ' -f2- | xargs -0 -n1 -P"$jobs" sh -c '
	log="$logs/$(printf %s "$1" | tr / _).log"
	case $1 in tests/fuzz/guest/*) db=$build ;; tests/fuzz/*) db=$fuzz_build ;; *) db=$build ;; esac
	start=$(date +%s)
	clang-tidy -p "$db" --quiet "$1" >"$log" 2>&1 || echo "exit $?" >>"$log"
	echo "$(($(date +%s) - start)) $1" >"$log.time"' sh

bad_tidy=0
for f in "${tidy_files[@]}"; do
	log="$logs/$(printf %s "$f" | tr / _).log"
	# "N warnings generated." counts the ones suppressed in system headers.
	if grep -qv ' warnings\? generated\.$' "$log"; then
		bad_tidy=$((bad_tidy + 1))
		echo "lint: clang-tidy on $f:"
		grep -v ' warnings\? generated\.$' "$log"
	fi
done
[ "$bad_tidy" -eq 0 ] || failed=1
# Where clang-tidy's time goes: the slowest files (s).
echo "lint: slowest in clang-tidy: $(cat "$logs"/*.time | sort -rn | head -5 | awk '{printf "%s%s %d s", (NR > 1 ? ", " : ""), $2, $1}')"

if [ "$failed" -ne 0 ]; then
	echo "lint: FAILED: $bad_fmt of ${#fmt_files[@]} files need clang-format -i," \
		"$bad_tidy of ${#tidy_files[@]} files have clang-tidy diagnostics"
	exit 1
fi
echo "lint: ${#fmt_files[@]} files formatted, ${#tidy_files[@]} files clang-tidy clean"
