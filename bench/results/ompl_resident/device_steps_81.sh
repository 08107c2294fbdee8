set -uo pipefail
# Call 81: bench/run_ompl.sh's whole table at tandemd's defaults with LOG_DIR (new): every ompl_plan run's
# per-problem lines kept, for bench/ompl_batch_model.py's replay of the 64 planners' own times; then a second
# FCL 16 and Tandem 64 pair, per-problem lines kept too.
P=/tmp/p81; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
env OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd BUILD_DIR=build PANDA=/work/main/.panda ENGINES=gpu THREADS=16 TIME_LIMIT=2 SINGLE_PER_SCENARIO=3 MANY=64 FCL_PLANNERS=16 MANY_PER_SCENARIO=0 RESOLUTION=0.02 PRM_SAMPLES=10000 PRM_K=10 PRM_PER_SCENARIO=1 FCL_THREADS=16 SEED=1 LOG_DIR=$OUT/logs bash bench/run_ompl.sh $OUT/ompl_call81.md > $OUT/run_ompl.log 2>&1; tail -14 $OUT/ompl_call81.md
echo "table at ${SECONDS}s"
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B="$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --per-scenario 100"
$B --planners 16 --checker fcl $W/problems > $OUT/logs/fcl16_round2.txt 2>&1; tail -1 $OUT/logs/fcl16_round2.txt
$P/new/bin/tandemd --listen unix:/tmp/t81.sock --data-dir /tmp/d81 --threads 16 --engine gpu --log-level warn 2> $OUT/tandemd2.log &
T=$!; for _ in $(seq 300); do [[ -S /tmp/t81.sock ]] && break; sleep 0.1; done
$B --planners 64 --checker tandem --server unix:/tmp/t81.sock $W/problems > $OUT/logs/tandem64_round2.txt 2>&1; tail -1 $OUT/logs/tandem64_round2.txt
kill $T; wait $T
echo "done at ${SECONDS}s"
