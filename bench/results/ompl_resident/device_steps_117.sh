set -uo pipefail
# Written in the twenty-sixth session. Run after a pack of 6cf34dc's build (ARCHIVE=1 TESTS="robotd
# daemon pooler" OMPL=1 bench/device_pack.sh build .packs/new), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_117.sh".
# Call 117: robotd, daemon, pooler on the twenty-fifth session's last commits (none run on a GPU);
# whether the planners wait for halted cores: 64 planners at the defaults against the same with every
# core kept awake at the lowest priority (bench/idle_spinners.py), and the one-request goal-tree
# extension (rrtconnect-fused), three alternated rounds; FCL 16 with and without the spinners; the
# request legs (bench/request_legs.py) with and without them.
source bench/device_unpack.sh /tmp/p117
for t in robotd daemon pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
W=/tmp/w117; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
S=$P/t.sock
spin=""
spin_on() { python3 bench/idle_spinners.py & spin=$!; sleep 0.5; }
spin_off() { kill $spin; wait $spin 2>/dev/null; spin=""; }
run() { # NAME SPIN(0|1) PLANNER TRACE(0|1)
    local name=$1 sp=$2 planner=$3 tr=$4 envs=() cenv=()
    rm -rf $S $P/data $P/server.txt $P/client.txt
    [[ $tr == 1 ]] && envs=(TDM_REQUEST_TRACE=$P/server.txt) cenv=(TDM_OMPL_TRACE=$P/client.txt)
    env "${envs[@]}" $P/new/bin/tandemd --listen unix:$S --data-dir $P/data --log-level warn --engine gpu --threads 16 2>$P/td.err & pid=$!
    for _ in $(seq 300); do [[ -S $S ]] && break; sleep 0.1; done
    [[ $sp == 1 ]] && spin_on
    env "${cenv[@]}" $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner $planner --time-limit 2 --planners 64 --checker tandem --server unix:$S --per-scenario 100 $W/problems > $P/plan.txt 2>/dev/null
    [[ $sp == 1 ]] && spin_off
    kill $pid; wait $pid
    { echo "== $name: $(tail -1 $P/plan.txt | sed 's/ setup_s.*//')"
      [[ $tr == 1 ]] && python3 bench/request_legs.py $P/client.txt $P/server.txt | tail -6; } | tee -a $OUT/rrt_call117.txt
}
fcl() { # NAME SPIN
    [[ $2 == 1 ]] && spin_on
    $P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $P/fcl.txt 2>/dev/null
    [[ $2 == 1 ]] && spin_off
    echo "== $1: $(tail -1 $P/fcl.txt)" | tee -a $OUT/rrt_call117.txt
}
for r in 1 2 3; do
  if (( r % 2 )); then run defaults 0 rrtconnect 0; run idlespin 1 rrtconnect 0; run fused 0 rrtconnect-fused 0
  else run fused 0 rrtconnect-fused 0; run idlespin 1 rrtconnect 0; run defaults 0 rrtconnect 0; fi
done
fcl fcl16 0; fcl fcl16:idlespin 1
run legs 0 rrtconnect 1; run legs:idlespin 1 rrtconnect 1
echo "done at ${SECONDS}s"
