set -uo pipefail
# Call 29: the loop thread at ~100 % of a core in call 28 (a request per ~8 us at ~120 000 a second): I/O threads (--io-threads), with 3, 4 and 5 engine lanes; FCL's 16 planners.
P=/tmp/p29; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
mkdir -p $OUT/plans $P/plans
SAVE_DIR=$P/plans PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:io2 gpu:lanes4:io2 gpu:lanes5:io2 gpu:io3 gpu:lanes4:io3 gpu gpu:io2 2>&1 | tee $OUT/rrt_call29.txt | grep -E '^==|replies|tandemd THREADS'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/plans/fcl16.txt 2>/dev/null; tail -1 $OUT/plans/fcl16.txt
cp $P/plans/plan_gpu_64.txt $P/plans/plan_gpu_io2_64.txt $OUT/plans/
echo "sweep done at ${SECONDS}s"
echo "done at ${SECONDS}s"
