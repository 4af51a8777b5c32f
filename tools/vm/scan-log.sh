#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Scan guest console logs for signs of kernel trouble.
# Usage: scan-log.sh LOGFILE...
# Prints every offending line as FILE:LINE: TEXT (at most 50 per file; a line
# repeated verbatim, e.g. by the guest's dmesg dump, is shown once).
# Exits 1 if any was found, 0 if all logs are clean, 2 on usage errors.
set -euo pipefail

if [ $# -eq 0 ]; then
	echo "usage: $0 LOGFILE..." >&2
	exit 2
fi

# Extended regex; matched case-sensitively except "kernel panic"
# (the kernel prints "Kernel panic - not syncing"). lite says when a node
# going down waits long for its connections (a reference leaked).
pattern='BUG:|WARNING:|Oops|general protection|soft lockup|hard LOCKUP|hung task|blocked for more than|KASAN|UBSAN|[Kk]ernel panic|Call Trace|unreferenced object|suspected memory leak|connections to be released'

dirty=0
for f in "$@"; do
	if [ ! -r "$f" ]; then
		echo "$f: cannot read log" >&2
		dirty=1
		continue
	fi
	# -a: serial logs may hold stray binary bytes; strip CRs from the serial line.
	# Lines repeated by the guest's dmesg dump are reported once.
	hits=$(tr -d '\r' <"$f" | grep -a -n -E -- "$pattern" |
		awk '{ t = $0; sub(/^[0-9]+:/, "", t) } !seen[t]++' || true)
	if [ -n "$hits" ]; then
		dirty=1
		n=$(wc -l <<<"$hits")
		head -n 50 <<<"$hits" | sed "s|^|$f:|"
		[ "$n" -le 50 ] || echo "$f: ... $((n - 50)) more matching line(s)"
	fi
done
exit "$dirty"
