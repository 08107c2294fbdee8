set -uo pipefail
# Written in the twenty-fifth session and NOT RUN there (its device time was spent): the next
# session's first call. Run after a pack of the current build with ompl_plan (ARCHIVE=1 TESTS="robotd"
# OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_117.sh".
# Call 117: where the planners lose what x4 saves in tandemd (section 26: a motion 0.1 ms shorter in
# tandemd, the planners' side only 0.03; ~0.05-0.1 ms more a request between the two): each request's
# legs (TDM_OMPL_TRACE joined with TDM_REQUEST_TRACE by bench/request_legs.py: before the frame, split
# at the loop's read; inside tandemd; after the write) at the defaults, with x4, and the old way
# (the ring's own thread, two reply threads), two rounds; tandemd's threads and their waits for a core.
source bench/device_unpack.sh /tmp/p117
W=/tmp/w117; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
S=$P/t.sock
run() { # NAME ENV... -- TANDEMD_ARGS...
    local name=$1; shift
    local envs=()
    while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    rm -rf $S $P/data $P/server.txt $P/client.txt
    env "${envs[@]}" TDM_REQUEST_TRACE=$P/server.txt $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn --engine gpu "$@" 2>$P/td.err & pid=$!
    for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
    TDM_OMPL_TRACE=$P/client.txt $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems > $P/plan.txt 2>/dev/null & plan=$!
    ( sleep 2; bash bench/thread_cpu.sh $pid 1.5 > $P/th.txt ) & s1=$!
    ( sleep 2; bash bench/thread_wait.sh $pid 1.5 > $P/tw.txt ) & s2=$!
    wait $plan; wait $s1 $s2
    kill $pid; wait $pid
    { echo "== $name (${envs[*]} $*): $(tail -1 $P/plan.txt | sed 's/ setup_s.*//')"; echo "tandemd $(cat $P/th.txt)"; echo "tandemd $(cat $P/tw.txt)"
      python3 bench/request_legs.py $P/client.txt $P/server.txt | tail -8; } | tee -a $OUT/legs_call117.txt
}
for r in 1 2; do
  run defaults --
  run x4 -- --express-configs 4 --express-blocks 64
  run thread TDM_EXPRESS_ON_LOOP=0 -- --reply-threads 2
done
echo "done at ${SECONDS}s"
