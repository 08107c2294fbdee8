#!/usr/bin/env bash
# A soak longer than one device call (the device tool stops a command at 10 minutes): the
# soak runs in its own process session, which outlives the call that starts it while the
# machine stays held, and a second call, made at once, waits for it and collects its files.
#
#   bench/device_soak_detached.sh start PACK WORKDIR   starts STEP=soak bench/device_issue14.sh on
#                                                      PACK (SOAK_S etc. from the environment),
#                                                      then waits up to HOLD_S seconds (default 580)
#   bench/device_soak_detached.sh collect WORKDIR OUT  waits for it to end, copies its files to OUT
set -uo pipefail
cd "$(dirname "$0")/.."
case ${1:-} in
start)
    pack=${2:?PACK} work=${3:?WORKDIR}
    mkdir -p "$work"
    setsid nohup bash -c "bash bench/device_issue14.sh '$pack' '$work/out' > '$work/soak.log' 2>&1; echo \$? > '$work/rc'" \
        < /dev/null > /dev/null 2>&1 &
    end=$((SECONDS + ${HOLD_S:-580}))
    while [[ ! -f $work/rc && $SECONDS -lt $end ]]; do sleep 5; done
    tail -5 "$work/soak.log"
    ;;
collect)
    work=${2:?WORKDIR} out=${3:?OUT}
    while [[ ! -f $work/rc ]]; do sleep 5; done
    echo "soak exit $(cat "$work/rc")"
    mkdir -p "$out"
    cp "$work/soak.log" "$out/"
    cp -r "$work/out/load" "$out/" 2>/dev/null
    tail -20 "$work/soak.log"
    ;;
*)
    echo "usage: bench/device_soak_detached.sh start PACK WORKDIR | collect WORKDIR OUT" >&2
    exit 2
    ;;
esac
