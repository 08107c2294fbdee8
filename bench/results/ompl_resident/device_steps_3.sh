set -uo pipefail
P=/tmp/p3; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/tmp/bd; mkdir -p $B/daemon $B/tools $B/bench; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd; ln -sf $P/new/bin/bench_server $B/bench/bench_server
SAVE_DIR=$OUT PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:lanes5 gpu 2>&1 | tee $OUT/rrt_eventfd.txt | grep -E '^==|replies|tandemd THREADS'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/fcl16.txt 2>$OUT/fcl16.err; tail -1 $OUT/fcl16.txt
for s in cubicles alpha-1.5 Apartment; do for L in 3 5; do
  SCENE=$s MODE=bool N_POSES=100000 BUILD_DIR=$B OMPL=.ompl CLIENTS="1 64" BATCHES="1 1024" DURATION=3 TANDEMD_ARGS="--engine-lanes $L" COMMIT=pack bash bench/run_server.sh $OUT/server_${s}_lanes$L.md > /dev/null 2>$OUT/server_${s}_lanes$L.err
  echo "## $s lanes $L"; grep -E '^\| [0-9]' $OUT/server_${s}_lanes$L.md
done; done
