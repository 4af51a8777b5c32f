#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make check: build everything, lint the C++ user space (tools/lint.sh; in
# `all`, in the background at idle priority while the steps below run), run
# the host tests, a short libFuzzer campaign on the kernel core
# (tools/fuzz-host.sh short: every target FUZZ_SECONDS, default 7), the
# guest tests and, in the one-guest boot, a short campaign of the ioctl and
# io_uring fuzzer (tools/vm/guest-fuzz.sh: FUZZ_GUEST_SECONDS, default 60),
# then the one-guest tests again with every node in lmr isolation (module
# parameter isolation=2; the DSM litmus tests with DSM_ROUNDS_LMR rounds,
# default 2000, instead of DSM_ROUNDS, default 10000), the several-guest
# tests in both modes, the Debian packages (built, then installed in a guest:
# DKMS, lite@.service; packages_test below), and print how many ran,
# passed, failed and were skipped. Exit 0 only if
# every step passed, nothing was skipped, the fuzzers found nothing, and no
# guest kernel log showed trouble.
#   tools/check.sh [all|host|fuzz|guest|packages|lint]
# Guest runs take extra lite-vm options from LITE_VM_OPTS (e.g. "--kernel
# BZIMAGE --module PATH --unload", as make check-debug does), results go to
# CHECK_OUT (default build/check), per-guest limits GUEST1_TIMEOUT (one guest,
# default 1020 s: the guest tests and the guest fuzzing) and GUEST2_TIMEOUT (several guests, default 600 s); the
# MultiGuest* tests run in MULTI_GUESTS guests (default 3, at least 3).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
build=${BUILD:-build/meson}
out=${CHECK_OUT:-build/check}
read -ra vm_opts <<<"${LITE_VM_OPTS:-}"
start=$(date +%s)
summary=()
failed=0

# step TITLE: start a step; the time of the one before goes to step_times.
step_times=()
step_name="" step_start=$start
step() {
	end_step
	step_name=$* step_start=$(date +%s)
	echo
	echo "=== $*"
}
end_step() {
	[ -z "$step_name" ] || step_times+=("$(printf '%5d s  %s' "$(($(date +%s) - step_start))" "${step_name:0:72}")")
	step_name=""
}

# Count a gtest JSON report: "run passed failed skipped".
count() {
	python3 - "$@" <<'PY'
import json, sys
run = passed = failed = skipped = 0
for path in sys.argv[1:]:
    with open(path) as f:
        doc = json.load(f)
    for suite in doc["testsuites"]:
        for t in suite["testsuite"]:
            run += 1
            if t.get("result") == "SKIPPED":
                skipped += 1
            elif t.get("failures"):
                failed += 1
            else:
                passed += 1
print(run, passed, failed, skipped)
PY
}

# unfinished LOG...: for a guest run that wrote no report, what it was
# doing: the gtest test it started and did not end, and whether the guest
# killed the command for its time.
unfinished() {
	python3 - "$@" <<'PY'
import re, sys
for path in sys.argv[1:]:
    try:
        text = open(path, errors="replace").read().split("LITE-VM-DMESG-BEGIN")[0]
    except OSError:
        continue
    running = None
    for m in re.finditer(r"^\[ (RUN|      OK|  FAILED|  SKIPPED) +\] (\S+)", text, re.M):
        running = m.group(2) if m.group(1) == "RUN" else None
    what = []
    if running:
        what.append("in " + running)
    if "LITE-VM-GUEST-TIMEOUT" in text:
        what.append("timed out")
    # The hang dump: each task it names, with its innermost lite frame
    # (else its innermost frame), so that the summary names the wait.
    dump = text.partition("LITE-VM-HANG-DUMP:")[2]
    tasks = []
    for block in dump.split("LITE-VM-HANG-DUMP-END")[0].split("--- task ")[1:]:
        head, _, stack = block.partition("\n")
        frames = re.findall(r"\] (\S+)\+0x\S+( \[lite\])?", stack)
        frame = next((f for f, mod in frames if mod), frames[0][0] if frames else "?")
        tasks.append(head.split(" ", 1)[-1].strip("()") + " at " + frame)
    if tasks:
        what.append("hang dump: " + "; ".join(tasks[:4]))
    if what:
        print(f"; {path.rsplit('/', 1)[-1]}: " + ", ".join(what))
PY
}

# record NAME RC JSON...: add a summary line; fail on rc, failures or skips.
record() {
	local name=$1 rc=$2
	shift 2
	local run=0 passed=0 bad=0 skipped=0 why=""
	if [ "$#" -gt 0 ] && [ -s "$1" ]; then
		read -r run passed bad skipped < <(count "$@")
	fi
	if [ "$rc" -ne 0 ] && [ "$#" -gt 0 ]; then
		why=$(unfinished "$(dirname "$1")"/guest-*.log | tr -d '\n')
	fi
	summary+=("$(printf '%-34s %4d run, %4d passed, %d failed, %d skipped%s%s' "$name" \
		"$run" "$passed" "$bad" "$skipped" "$([ "$rc" -eq 0 ] || echo ", exit $rc")" "$why")")
	if [ "$rc" -ne 0 ] || [ "$bad" -ne 0 ] || [ "$skipped" -ne 0 ] || [ "$run" -eq 0 ]; then
		failed=1
	fi
}

build_all() {
	step "lite.ko with W=1 and sparse"
	tools/kmod-check.sh
	step "user space (meson)"
	[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null
	ninja -C "$build"
}

# Lint is pure host CPU; the guest steps leave a good part of the host's
# cores idle (the guests wait on timers and wake-ups). So `all` runs lint in
# the background at idle priority (SCHED_IDLE and nice 19: a waking guest
# vCPU preempts it at once) from the end of the build to the end of the
# guest steps, into $out/lint.log, and prints and counts it at the end.
lint_pid="" lint_start=0
lint_begin() {
	mkdir -p "$out"
	lint_start=$(date +%s)
	echo
	echo "=== lint (clang-format, clang-tidy): started in the background at idle priority, log $out/lint.log"
	# Its own process group (job control), so that an early exit can end
	# all of it; the same session, so the same scheduling autogroup as the
	# guests (a waking guest preempts it anyway, but its share of a busy CPU
	# is that small only within one group). No stdin: a background group
	# reading the terminal would stop.
	set -m
	BUILD=$build chrt --idle 0 nice -n 19 tools/lint.sh </dev/null >"$out/lint.log" 2>&1 &
	lint_pid=$!
	set +m
	trap 'lint_kill' EXIT
}
lint_kill() {
	[ -z "$lint_pid" ] || kill -TERM -- "-$lint_pid" 2>/dev/null || true
}
lint_end() {
	step "lint: clang-format and clang-tidy on the C++ user space (waiting for the background run)"
	local rc=0
	wait "$lint_pid" || rc=$?
	lint_pid=""
	cat "$out/lint.log"
	step_times+=("$(printf '%5d s  %s' "$(($(date +%s) - lint_start))" "lint, in the background since the build (wall time)")")
	record_lint "$rc"
}
lint_step() {
	step "lint: clang-format and clang-tidy on the C++ user space"
	local rc=0
	BUILD=$build tools/lint.sh || rc=$?
	record_lint "$rc"
}
record_lint() {
	summary+=("$(printf '%-34s %s' "lint (clang-format, clang-tidy)" "$([ "$1" -eq 0 ] && echo ok || echo FAILED)")")
	[ "$1" -eq 0 ] || failed=1
}

host_tests() {
	step "host tests (verb-free core via stub headers, liblite)"
	mkdir -p "$out"
	rm -f "$out/host.json"
	local rc=0
	"$build/tests/lite-host-tests" --gtest_output="json:$out/host.json" || rc=$?
	record "host tests" "$rc" "$out/host.json"
}

fuzz_short() {
	step "host fuzzing: every libFuzzer target on the kernel core, ${FUZZ_SECONDS:-7} s each"
	local rc=0 fuzz_out=${FUZZ_OUT:-build/fuzz} line
	rm -f "$fuzz_out/short-summary.json"
	FUZZ_OUT=$fuzz_out tools/fuzz-host.sh short "${FUZZ_SECONDS:-7}" || rc=$?
	line=$(python3 - "$fuzz_out/short-summary.json" <<'PY' 2>/dev/null || echo "no results"
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"{len(doc)} targets, {sum(v['execs'] for v in doc.values())} execs, "
      f"{sum(v['findings'] for v in doc.values())} findings")
PY
	)
	summary+=("$(printf '%-34s %s%s' "host fuzzing (libFuzzer)" "$line" "$([ "$rc" -eq 0 ] || echo ", FAILED")")")
	[ "$rc" -eq 0 ] || failed=1
}

# guest_fuzz_line DIR RC: the summary line of the guest fuzzing campaign
# (DIR/fuzz-ioctl.json); fail on rc, findings or no results.
guest_fuzz_line() {
	local line
	line=$(python3 - "$1/fuzz-ioctl.json" <<'PY' 2>/dev/null || echo "no results"
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"{doc['calls']} calls, {doc['findings']} findings")
PY
	)
	summary+=("$(printf '%-34s %s%s' "guest fuzzing (ioctl, io_uring)" "$line" "$([ "$2" -eq 0 ] || echo ", exit $2")")")
	if [ "$2" -ne 0 ] || [ "$line" = "no results" ]; then
		failed=1
	fi
}

# multi_guest_run N DIR FILTER REPORT: the guest tests FILTER on N guests
# (one node each, lite-vm's virtual network, $iso_args), each guest's
# gtest report in DIR/REPORT-INDEX.json. Sets rc.
multi_guest_run() {
	rc=0
	# shellcheck disable=SC2016 # the guest's shell expands $LITE_GUEST_INDEX
	tools/vm/lite-vm --quiet --guests "$1" --timeout "${GUEST2_TIMEOUT:-600}" ${vm_opts[@]+"${vm_opts[@]}"} \
		${iso_args[@]+"${iso_args[@]}"} --out "$2" -- \
		env LITE_DETECT_SLACK_S="${DETECT_SLACK_S:-0}" LITE_TIMEOUT_SCALE="${TIMEOUT_SCALE:-1}" sh -c 'exec "$0" --gtest_color=no --gtest_filter="$1" --gtest_output=json:/run/lite-out/$2-$LITE_GUEST_INDEX.json' \
		"$build/tests/lite-guest-tests" "$3" "$4" || rc=$?
}

guest_tests() {
	step "guest tests and guest fuzzing (ioctl, io_uring): one guest, nodes on rxe0 (lite-vm)"
	rm -rf "$out/guest1" "$out/guest2" "$out/guest3"
	mkdir -p "$out/guest1" "$out/guest2" "$out/guest3"
	local rc=0 trc frc slack=${DETECT_SLACK_S:-0}
	tools/vm/lite-vm --quiet --timeout "${GUEST1_TIMEOUT:-1020}" ${vm_opts[@]+"${vm_opts[@]}"} \
		--module-args raw_rdma=1 --out "$out/guest1" -- \
		env BUILD="$build" LITE_DSM_ROUNDS="${DSM_ROUNDS:-10000}" LITE_DETECT_SLACK_S="$slack" LITE_TIMEOUT_SCALE="${TIMEOUT_SCALE:-1}" \
		tools/vm/guest-fuzz.sh --seconds "${FUZZ_GUEST_SECONDS:-60}" -- \
		"$build/tests/lite-guest-tests" --gtest_color=no --gtest_filter='-MultiGuest*' \
		--gtest_output=json:/run/lite-out/guest.json || rc=$?
	# Each part's own status (a part that did not finish failed); trouble
	# of the guest as a whole (its kernel log) fails both.
	trc=$(cat "$out/guest1/before.rc" 2>/dev/null || echo 1)
	frc=$(cat "$out/guest1/fuzz-ioctl.rc" 2>/dev/null || echo 1)
	if [ "$trc" -eq 0 ] && [ "$frc" -eq 0 ] && [ "$rc" -ne 0 ]; then
		trc=$rc frc=$rc
	fi
	record "guest tests (1 guest)" "$trc" "$out/guest1/guest.json"
	guest_fuzz_line "$out/guest1" "$frc"

	step "guest tests again, every node in lmr isolation (one guest, isolation=2)"
	rm -rf "$out/guest1-lmr"
	mkdir -p "$out/guest1-lmr"
	rc=0
	tools/vm/lite-vm --quiet --timeout "${GUEST1_TIMEOUT:-1020}" ${vm_opts[@]+"${vm_opts[@]}"} \
		--module-args raw_rdma=1,isolation=2 --out "$out/guest1-lmr" -- \
		env LITE_DSM_ROUNDS="${DSM_ROUNDS_LMR:-2000}" LITE_DETECT_SLACK_S="$slack" LITE_TIMEOUT_SCALE="${TIMEOUT_SCALE:-1}" \
		"$build/tests/lite-guest-tests" --gtest_color=no \
		--gtest_filter='-MultiGuest*' \
		--gtest_output=json:/run/lite-out/guest.json || rc=$?
	record "guest tests (1 guest, lmr isolation)" "$rc" "$out/guest1-lmr/guest.json"

	local n=${MULTI_GUESTS:-3} iso sfx g reports=()
	local iso_args=()
	# Both isolation modes on the wire: global, then every node in lmr.
	for iso in global lmr; do
		iso_args=() sfx=""
		if [ "$iso" = lmr ]; then
			iso_args=(--module-args isolation=2) sfx="-lmr"
		fi
		step "guest tests: $n guests on a virtual network, one node each, $iso isolation; 5% loss on one link for 30 s"
		multi_guest_run "$n" "$out/guest2$sfx" 'MultiGuest.*:MultiGuestLoss.*' multi || rc=$?
		record "guest tests ($n guests, $iso isolation)" "$rc" "$out/guest2$sfx"/multi-*.json

		# The last guest resets itself mid-test: it writes no report, the
		# survivors' reports count.
		step "guest tests: $n guests, $iso isolation, the last one reset mid-traffic"
		multi_guest_run "$n" "$out/guest3$sfx" 'MultiGuestReset.*' reset || rc=$?
		reports=()
		for ((g = 0; g < n - 1; g++)); do reports+=("$out/guest3$sfx/reset-$g.json"); done
		record "guest tests ($n guests, $iso isolation, one reset)" "$rc" "${reports[@]}"
	done
	fault_figures
}

# The fault-recovery figures the guest tests measured ($LITE_OUT/faults/KEY
# files, one JSON value each; fatal_signal.json) in one file, compared run
# to run: detect_dead_s, reconnect_s, hostile_join_ok, fatal_signal_stop_s,
# loss_whole, reset_detect_s.
fault_figures() {
	python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
figs = {}
for f in sorted(out.glob("guest[0-9]/faults/*")):
    figs[f.name] = json.loads(f.read_text())
for f in sorted(out.glob("guest[0-9]/fatal_signal.json")):
    figs.update(json.loads(f.read_text()))
(out / "faults.json").write_text(json.dumps(figs, indent=2, sort_keys=True) + "\n")
print("fault figures (" + str(out / "faults.json") + "): " + json.dumps(figs, sort_keys=True))
PY
}

# The Debian packages: built with dpkg-buildpackage, installed with dpkg
# -i into an overlay of the host's root (tests/packaging/host-install.sh:
# DKMS builds the module for the guests' kernel, at native speed rather
# than the 7-8 minutes it takes under TCG), then checked in a guest booted
# without lite.ko (tests/packaging/guest-install.sh: the DKMS module,
# two nodes up and down through lite@.service's own lines, a program built
# against liblite-dev). Not with LITE_VM_OPTS (another kernel has no
# headers for DKMS).
packages_test() {
	step "Debian packages: dpkg-buildpackage, dpkg -i (DKMS), checked in a guest (lite@.service, liblite-dev)"
	if [ ${#vm_opts[@]} -gt 0 ]; then
		echo "packages: not with LITE_VM_OPTS (${vm_opts[*]}): DKMS needs the Debian kernel's headers"
		return
	fi
	local rc=0
	rm -rf "$out/packages"
	tools/build-debs.sh "$out/deb" || rc=$?
	[ "$rc" -ne 0 ] || tests/packaging/host-install.sh "$out/deb" "$out/deb/installed.tar" || rc=$?
	if [ "$rc" -eq 0 ]; then
		tools/vm/lite-vm --quiet --no-module --timeout "${PACKAGES_TIMEOUT:-900}" --out "$out/packages" -- \
			tests/packaging/guest-install.sh "$out/deb" "$out/deb/installed.tar" || rc=$?
	fi
	summary+=("$(printf '%-34s %s' "packages (build, install, guest check)" "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED, exit $rc")")")
	[ "$rc" -eq 0 ] || failed=1
}

case $mode in
all)
	build_all
	lint_begin
	host_tests
	fuzz_short
	guest_tests
	packages_test
	lint_end
	;;
lint) lint_step ;;
host) host_tests ;;
fuzz) fuzz_short ;;
guest) guest_tests ;;
packages) packages_test ;;
*)
	echo "usage: $0 [all|host|fuzz|guest|packages|lint]" >&2
	exit 2
	;;
esac

end_step
echo
echo "=== time by step"
for line in "${step_times[@]}"; do echo "  $line"; done
echo
echo "=== summary ($(($(date +%s) - start)) s)"
for line in "${summary[@]}"; do echo "  $line"; done
if [ "$failed" -ne 0 ]; then
	echo "make check: FAILED"
	exit 1
fi
case $mode in
all | guest | packages) echo "make check: all passed, none skipped, guest kernel logs clean" ;;
*) echo "tools/check.sh $mode: all passed, none skipped (no guest ran)" ;;
esac
