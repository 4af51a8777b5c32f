#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# libFuzzer on the verb-free kernel core (lite_kmod/core/*.c), on the host:
# each tests/fuzz/*_fuzz.cpp is one target, built with clang and
# -fsanitize=fuzzer,address,undefined together with the core sources and the
# host stub headers, apart from the meson (g++) build.
#   tools/fuzz-host.sh build           build the targets and their seeds
#   tools/fuzz-host.sh compdb          only build/fuzz/compile_commands.json
#   tools/fuzz-host.sh run [TARGET..]  long campaign: FUZZ_RUNS executions
#                                      per target (default 10,000,000)
#   tools/fuzz-host.sh short [SECS [TARGET..]]
#                                      every target for SECS seconds
#                                      (default FUZZ_SECONDS or 7; make check)
# Everything lands in build/fuzz (FUZZ_OUT): bin/, seeds/ (from
# tests/fuzz/seeds.cpp), corpus/TARGET/ (grows from run to run), logs/,
# artifacts/TARGET/ (reproducers), host-summary.json for `run`,
# short-summary.json for `short`: {target: {execs, seconds, findings}}.
# Targets run one after the other (one core each). Any crash, sanitizer
# report, leak, timeout or broken invariant fails the run and prints the
# reproducer: rerun it with build/fuzz/bin/TARGET REPRODUCER.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${FUZZ_OUT:-build/fuzz}
cc=${FUZZ_CC:-clang-14}
cxx=${FUZZ_CXX:-clang++-14}
mode=${1:-run}
[ "$#" -gt 0 ] && shift

# shellcheck disable=SC2054 # the commas belong to the flag
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1)
inc=(-Itests/host/stub -Ilite_kmod)
warn=(-Wall -Wextra -Werror)

targets=()
for f in tests/fuzz/*_fuzz.cpp; do
	t=${f##*/}
	targets+=("${t%_fuzz.cpp}")
done

# Longest input per target: a whole control message for the wire parser, a
# whole JOIN accept for the membership decoder; the others read little or
# run sequences of operations, where a few hundred steps reach every state.
max_len() {
	case $1 in
	wire_parse) echo 8256 ;;
	mbr_accept) echo 4200 ;;
	mbr_ops) echo 128 ;;
	sync) echo 256 ;;
	credits | auth) echo 512 ;;
	*) echo 1024 ;;
	esac
}

# stale OUT INPUT...: whether OUT is missing or older than an input.
stale() {
	local o=$1
	shift
	[ ! -e "$o" ] || [ -n "$(find "$@" -newer "$o" -print -quit)" ]
}

# compile_commands.json for clang-tidy (tools/lint.sh): the flags of the
# build below, without the sanitizers.
compdb() {
	mkdir -p "$out"
	python3 - "$out/compile_commands.json" "$cxx" "${inc[@]}" <<'PY'
import glob, json, os, sys
path, cxx, inc = sys.argv[1], sys.argv[2], sys.argv[3:]
root = os.getcwd()
# Written aside (a name of this process's own) and renamed: lint may be
# reading it, or writing it too (make check lints in the background while
# the short campaign builds).
tmp = f"{path}.{os.getpid()}"
with open(tmp, "w") as out:
    json.dump([{"directory": root, "file": f,
                "arguments": [cxx, "-std=c++20", *inc, "-Wall", "-Wextra", "-c", f]}
               for f in sorted(glob.glob("tests/fuzz/*.cpp"))], out, indent=1)
os.replace(tmp, path)
PY
}

build() {
	compdb
	mkdir -p "$out/obj" "$out/bin"
	local deps=(lite_kmod/core tests/host/stub tests/fuzz/fuzz.hpp tools/fuzz-host.sh)
	local objs=() c o t
	for c in lite_kmod/core/*.c; do
		o=$out/obj/$(basename "${c%.c}").o
		objs+=("$o")
		if stale "$o" "${deps[@]}"; then
			echo "fuzz-host: cc $c"
			"$cc" -std=gnu11 "${san[@]}" -fsanitize=fuzzer-no-link "${inc[@]}" "${warn[@]}" \
				-Wno-unused-parameter -Wno-sign-compare -c "$c" -o "$o"
		fi
	done
	for t in "${targets[@]}"; do
		if stale "$out/bin/$t" "${deps[@]}" "tests/fuzz/${t}_fuzz.cpp"; then
			echo "fuzz-host: c++ tests/fuzz/${t}_fuzz.cpp"
			"$cxx" -std=c++20 "${san[@]}" -fsanitize=fuzzer "${inc[@]}" "${warn[@]}" \
				"tests/fuzz/${t}_fuzz.cpp" "${objs[@]}" -lcrypto -o "$out/bin/$t"
		fi
	done
	if stale "$out/bin/fuzz-seeds" "${deps[@]}" tests/fuzz/seeds.cpp; then
		echo "fuzz-host: c++ tests/fuzz/seeds.cpp"
		"$cxx" -std=c++20 "${san[@]}" "${inc[@]}" "${warn[@]}" tests/fuzz/seeds.cpp "${objs[@]}" \
			-lcrypto -o "$out/bin/fuzz-seeds"
	fi
	rm -rf "$out/seeds"
	"$out/bin/fuzz-seeds" "$out/seeds"
}

# fuzz TARGET LIBFUZZER-OPTION...: one campaign; appends "execs seconds
# findings" to $out/.result and prints the reproducers of any finding.
fuzz() {
	local t=$1
	shift
	local log=$out/logs/$t.log art=$out/artifacts/$t start rc=0
	rm -rf "$art"
	mkdir -p "$out/corpus/$t" "$out/seeds/$t" "$out/logs" "$art"
	start=$(date +%s.%N)
	"$out/bin/$t" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$art/" "$@" "$out/corpus/$t" "$out/seeds/$t" >"$log" 2>&1 || rc=$?
	local secs execs findings
	secs=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	findings=$(find "$art" -type f | wc -l)
	if [ "$rc" -ne 0 ] && [ "$findings" -eq 0 ]; then
		findings=1 # died without a reproducer: the log says why
	fi
	printf '  %-12s %12s execs %8s s  %s\n' "$t" "${execs:-?}" "$secs" \
		"$([ "$findings" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")"
	if [ "$findings" -ne 0 ]; then
		grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz invariant|.*runtime error)' "$log" | head -5 | sed 's/^/    /'
		find "$art" -type f | sed "s|^|    reproducer: |"
		echo "    log: $log; rerun: $out/bin/$t REPRODUCER"
	fi
	echo "$t ${execs:-0} $secs $findings" >>"$out/.result"
}

# summary JSON-FILE MIN-EXECS: write the results, fail on any finding or a
# target that ran fewer than MIN-EXECS inputs.
summary() {
	python3 - "$out/.result" "$1" "$2" <<'PY'
import json, sys
res, path, need = sys.argv[1], sys.argv[2], int(sys.argv[3])
doc, bad = {}, []
for line in open(res):
    t, execs, secs, found = line.split()
    doc[t] = {"execs": int(execs), "seconds": float(secs), "findings": int(found)}
    if int(found):
        bad.append(f"{t}: {found} finding(s)")
    elif int(execs) < need:
        bad.append(f"{t}: {execs} execs, fewer than {need}")
json.dump(doc, open(path, "w"), indent=2, sort_keys=True)
total = sum(v["execs"] for v in doc.values())
print(f"fuzz-host: {len(doc)} targets, {total} execs, "
      f"{sum(v['findings'] for v in doc.values())} findings -> {path}")
for b in bad:
    print(f"fuzz-host: FAILED: {b}")
sys.exit(1 if bad else 0)
PY
}

case $mode in
build)
	build
	;;
compdb)
	compdb
	;;
run)
	runs=${FUZZ_RUNS:-10000000}
	[ "$#" -eq 0 ] || targets=("$@")
	build
	rm -f "$out/.result"
	echo "fuzz-host: ${#targets[@]} targets, $runs executions each, one at a time"
	for t in "${targets[@]}"; do
		[ -x "$out/bin/$t" ] || { echo "fuzz-host: no target $t" >&2; exit 2; }
		fuzz "$t" -runs="$runs"
	done
	summary "$out/host-summary.json" "$runs"
	;;
short)
	secs=${1:-${FUZZ_SECONDS:-7}}
	[ "$#" -le 1 ] || targets=("${@:2}")
	build
	rm -f "$out/.result"
	echo "fuzz-host: ${#targets[@]} targets, $secs s each"
	for t in "${targets[@]}"; do
		fuzz "$t" -max_total_time="$secs"
	done
	summary "$out/short-summary.json" 1
	;;
*)
	echo "usage: $0 [build | compdb | run [TARGET...] | short [SECONDS [TARGET...]]]" >&2
	exit 2
	;;
esac
