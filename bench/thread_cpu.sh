#!/usr/bin/env bash
# CPU use of each thread of a running process over an interval, summed by thread name:
#   bench/thread_cpu.sh PID SECONDS
# prints one line, "THREADS name=PCT[xN(max M)] ...", PCT in % of one core (100 = one core busy all
# the interval), xN when N threads share the name, M the busiest of them; busiest first. Reads /proc only.
set -euo pipefail
pid=$1 secs=$2
sample() {
    for t in /proc/"$pid"/task/*; do
        # utime and stime are fields 14 and 15 of stat; the name (field 2) may hold spaces, so cut after ')'
        read -r stat < "$t/stat" || continue
        rest=${stat##*) }
        set -- $rest
        printf '%s\t%s\t%s\n' "${t##*/}" "$(( ${12} + ${13} ))" "$(tr ' ' '_' < "$t/comm")"
    done 2>/dev/null
}
a=$(sample)
sleep "$secs"
b=$(sample)
hz=$(getconf CLK_TCK)
join -t $'\t' <(sort <<< "$a") <(sort <<< "$b") |
    awk -F'\t' -v hz="$hz" -v s="$secs" '{ x = $4 - $2; d[$5] += x; n[$5]++; if (x > m[$5]) m[$5] = x }
        END { for (k in d) printf "%s %.1f %d %.1f\n", k, 100 * d[k] / hz / s, n[k], 100 * m[k] / hz / s }' |
    sort -k2,2nr | awk 'BEGIN { printf "THREADS" } { printf " %s=%s%s", $1, $2, ($3 > 1 ? "x" $3 "(max " $4 ")" : "") } END { print "" }'
