#!/usr/bin/env bash
# Time the threads of a running process spent waiting for a core (runnable, not running) over an
# interval, summed by thread name, beside their time on a core:
#   bench/thread_wait.sh PID SECONDS
# prints one line, "WAITS name=WAIT/RUN[xN] ...", both in ms summed over the threads of that name, busiest
# waiters first. Reads /proc/PID/task/*/schedstat (on a core, waiting on a run queue, in ns), which the
# kernel keeps with CONFIG_SCHEDSTATS (or CONFIG_SCHED_INFO); without it, prints "WAITS none".
set -euo pipefail
pid=$1 secs=$2
sample() {
    for t in /proc/"$pid"/task/*; do
        read -r run wait _ < "$t/schedstat" || continue
        printf '%s\t%s\t%s\t%s\n' "${t##*/}" "$run" "$wait" "$(tr ' ' '_' < "$t/comm")"
    done 2>/dev/null
}
[[ -r /proc/$pid/schedstat || -r /proc/self/schedstat ]] || { echo "WAITS none"; exit 0; }
a=$(sample)
sleep "$secs"
b=$(sample)
join -t $'\t' <(sort <<< "$a") <(sort <<< "$b") |
    awk -F'\t' '{ r[$7] += ($5 - $2) / 1e6; w[$7] += ($6 - $3) / 1e6; n[$7]++ }
        END { for (k in r) printf "%s %.1f %.1f %d\n", k, w[k], r[k], n[k] }' |
    sort -k2,2nr | awk 'BEGIN { printf "WAITS" } { printf " %s=%s/%s%s", $1, $2, $3, ($4 > 1 ? "x" $4 : "") } END { print "" }'
