set -uo pipefail
# Written in the twenty-sixth session. Run after a pack of the build with TDM_POLL_YIELD (ARCHIVE=1
# TESTS="" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_119.sh".
# Call 119: the machine is ~98 % busy in a 64-planner run (call 118) and a loop that loses its core
# stalls its ~21 planners: the polling threads yielding their cores (TDM_POLL_YIELD=1: the pooler's
# and reply threads' polling, a loop's idle turns, the driver's waits with cudaDeviceScheduleYield),
# the loops' threads at nice -10, every tandemd thread at nice -5; three alternated rounds; then the
# legs of the first two.
source bench/device_unpack.sh /tmp/p119
W=/tmp/w119; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
S=$P/t.sock
renice_threads() { # PID PATTERN NICE
    python3 -c "
import os, re, sys
pid, pat, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for t in os.listdir(f'/proc/{pid}/task'):
    c = open(f'/proc/{pid}/task/{t}/comm').read().strip()
    if re.match(pat, c): os.setpriority(os.PRIO_PROCESS, int(t), n)
" "$@"; }
run() { # NAME TRACE(0|1)
    local name=$1 tr=$2 envs=(X=1) cenv=()
    rm -rf $S $P/data $P/server.txt $P/client.txt
    [[ $tr == 1 ]] && envs+=(TDM_REQUEST_TRACE=$P/server.txt) cenv=(TDM_OMPL_TRACE=$P/client.txt)
    [[ $name == yield ]] && envs+=(TDM_POLL_YIELD=1)
    env "${envs[@]}" $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn --engine gpu --threads 16 2>$P/td.err & pid=$!
    for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
    case $name in io-10) renice_threads $pid '^(tdm-io|tandemd$)' -10;; td-5) renice_threads $pid '.' -5;; esac
    env "${cenv[@]}" $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems > $P/plan.txt 2>/dev/null &
    local plan=$!
    ( sleep 2; bash bench/thread_cpu.sh $pid 1.5 > $P/th.txt ) & local s1=$!
    wait $plan; wait $s1
    kill $pid; wait $pid
    { echo "== $name: $(tail -1 $P/plan.txt | sed 's/ setup_s.*//')"; echo "  tandemd $(cat $P/th.txt)"
      [[ $tr == 1 ]] && python3 bench/request_legs.py $P/client.txt $P/server.txt | tail -5; } | tee -a $OUT/rrt_call119.txt
}
for r in 1 2 3; do
  if (( r % 2 )); then for v in defaults yield io-10 td-5; do run $v 0; done
  else for v in td-5 io-10 yield defaults; do run $v 0; done; fi
done
run yield 1; run io-10 1
echo "done at ${SECONDS}s"
