#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make mr-data: the MapReduce benchmark's inputs, made natively on the host
# (fast) and read by the guests over the host share. Deterministic: fixed
# seeds and Debian's word list (wamerican), so every run of make bench maps
# the same bytes. A file already there is kept.
#
#   text-{16m,64m,256m}.txt   Zipf text over /usr/share/dict/words
#   bytes-256m.bin            skewed random bytes (histogram)
#   docs-32m/                 64 text files, 32 MiB (inverted index)
#   gcide.txt                 Debian's GCIDE dictionary (dict-gcide), the
#                             real corpus
set -euo pipefail
mr=${1:?usage: mr-data.sh LITE_MR DIR}
dir=${2:?usage: mr-data.sh LITE_MR DIR}
mkdir -p "$dir"

gen() { # NAME KIND SIZE [ARGS...]
	local name=$1 kind=$2 size=$3
	shift 3
	[ -e "$dir/$name" ] && return 0
	echo "mr-data: $dir/$name ($kind, $size)"
	"$mr" gen "$kind" "$dir/$name.part" --size "$size" "$@"
	mv "$dir/$name.part" "$dir/$name"
}

gen text-16m.txt text 16M --seed 1
gen text-64m.txt text 64M --seed 1
gen text-256m.txt text 256M --seed 1
gen bytes-256m.bin bytes 256M --seed 2
gen docs-32m text 32M --seed 3 --files 64
if [ ! -e "$dir/gcide.txt" ]; then
	src=/usr/share/dictd/gcide.dict.dz
	[ -r "$src" ] || { echo "mr-data: $src missing (apt-get install dict-gcide)" >&2; exit 1; }
	echo "mr-data: $dir/gcide.txt (GCIDE, $src)"
	zcat "$src" >"$dir/gcide.txt.part"
	mv "$dir/gcide.txt.part" "$dir/gcide.txt"
fi
