#!/usr/bin/env bash
# Run the lines of a job file, N at a time, each as its own process: the long reproductions split into one job
# per (split or seed, variant), on the CPU (two 1-thread lanes) or on one GPU (many processes share it).
#
#   bash benchmarks/parallel_jobs.sh JOBS_FILE N OUT_DIR [SECONDS]
#
# Each line of JOBS_FILE is `name|command`; the command runs from the current directory with $OUT_DIR/name as its
# $JOB_OUT, its output is appended to $OUT_DIR/name.log after a line `=== started DATE at COMMIT` (a job run again,
# e.g. a resumable one in the next session, keeps the log of its earlier runs), and `name rc=.. N s` is appended to
# $OUT_DIR/walltimes.txt when it ends. SECONDS, if given, is the deadline of the whole run: jobs not started by then are skipped (a job that has
# started runs to its end or until `timeout` below stops it, and then it leaves no results).
set -uo pipefail
if [[ $# -lt 3 || ! -f $1 || ! $2 =~ ^[1-9][0-9]*$ || ! ${4:-1} =~ ^[0-9]+$ ]]; then
    echo "usage: bash benchmarks/parallel_jobs.sh JOBS_FILE N OUT_DIR [SECONDS]  (JOBS_FILE an existing file," \
         "N and SECONDS whole numbers)" >&2
    exit 2
fi
jobs_file=$1; parallel=$2; out=$3; deadline=$(( $(date +%s) + ${4:-999999999} ))
mkdir -p "$out"
export out deadline
grep -v '^\s*\(#\|$\)' "$jobs_file" | xargs -d '\n' -P "$parallel" -I{} bash -c '
    line="$1"; name=${line%%|*}; command=${line#*|}
    left=$(( deadline - $(date +%s) ))
    if (( left <= 0 )); then echo "$name skipped (deadline)" >> "$out/walltimes.txt"; exit 0; fi
    t0=$(date +%s)
    echo "=== started $(date -u +%FT%TZ) at $(git rev-parse --short HEAD 2>/dev/null || echo "(no git)")" >> "$out/$name.log"
    JOB_OUT="$out/$name" timeout "$left" bash -c "$command" >> "$out/$name.log" 2>&1
    echo "$name rc=$? $(( $(date +%s) - t0 )) s" >> "$out/walltimes.txt"' _ {}
