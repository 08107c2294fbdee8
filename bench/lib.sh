# Helpers the benchmark scripts that start tandemd and run ompl_plan share (sourced):
#   field LOG KEY          a value of the last line of LOG (ompl_plan's summary: KEY=VALUE words)
#   wait_listening WHO SOCK PID LOG
#                          waits up to 60 s for tandemd (PID, its stderr in LOG) to listen on the
#                          Unix socket SOCK; exits the script naming WHO, with LOG's last lines, if
#                          tandemd ends or does not listen in time
field() { tail -1 "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

wait_listening() {
    local who=$1 sock=$2 pid=$3 log=$4
    for _ in $(seq 600); do
        [[ -S $sock ]] && return 0
        kill -0 "$pid" 2>/dev/null || { echo "$who: tandemd did not start:" >&2; tail -5 "$log" >&2; exit 1; }
        sleep 0.1
    done
    echo "$who: tandemd did not listen on $sock within 60 s" >&2
    exit 1
}
