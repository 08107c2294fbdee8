set -uo pipefail
# Written in the twenty-sixth session. Run after call 119's pack, carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_122.sh".
# Call 122: whether the planners queue behind each other because no core looks idle to the scheduler
# while tandemd's threads poll: tandemd's threads under SCHED_IDLE (a core running only those counts
# as idle when a planner wakes, and the planner takes it at once): every thread, the polling ones but
# the loops, the loops only; against the defaults, three alternated rounds.
source bench/device_unpack.sh /tmp/p122
W=/tmp/w122; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
S=$P/t.sock
idle_threads() { # PID PATTERN
    python3 -c "
import os, re, sys
pid, pat = sys.argv[1], sys.argv[2]
for t in os.listdir(f'/proc/{pid}/task'):
    c = open(f'/proc/{pid}/task/{t}/comm').read().strip()
    if re.match(pat, c): os.sched_setscheduler(int(t), os.SCHED_IDLE, os.sched_param(0))
" "$@"; }
run() { # NAME
    local name=$1
    rm -rf $S $P/data
    $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn --engine gpu --threads 16 2>$P/td.err & pid=$!
    for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
    case $name in idle-all) idle_threads $pid '.';; idle-pollers) idle_threads $pid '^tdm-(dispatch|host|reply)';; idle-loops) idle_threads $pid '^tdm-io';; esac
    $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems > $P/plan.txt 2>/dev/null &
    local plan=$!
    ( sleep 2; bash bench/thread_cpu.sh $pid 1.5 > $P/th.txt ) & local s1=$!
    ( sleep 2; bash bench/thread_wait.sh $pid 1.5 > $P/tw.txt ) & local s2=$!
    ( sleep 2; for q in $(pgrep -f "ompl_plan --urdf" | head -1); do bash bench/thread_wait.sh $q 1.5; done > $P/pw.txt ) & local s3=$!
    wait $plan; wait $s1 $s2 $s3
    kill $pid; wait $pid
    { echo "== $name: $(tail -1 $P/plan.txt | sed 's/ setup_s.*//')"; echo "  tandemd $(cat $P/th.txt)"; echo "  tandemd $(cat $P/tw.txt)"; echo "  ompl_plan $(cat $P/pw.txt)"; } | tee -a $OUT/rrt_call122.txt
}
for r in 1 2 3; do
  if (( r % 2 )); then for v in defaults idle-all idle-pollers idle-loops; do run $v; done
  else for v in idle-loops idle-pollers idle-all defaults; do run $v; done; fi
done
echo "done at ${SECONDS}s"
