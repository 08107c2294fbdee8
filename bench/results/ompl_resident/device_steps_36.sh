set -uo pipefail
# Call 36: Query and MotionCheck handled holding the server's lock shared, so that --io-threads
# loops take requests at once (daemon/io.h), with MotionCheck's any_state: test_robotd and
# test_daemon on the GPU engine, with and without 2 I/O threads; the 64-planner row with 0, 2 and 3
# I/O threads (and 4 host lanes), interleaved, against the first-state motions (any0) of call 35;
# FCL's 16 planners.
P=/tmp/p36; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for io in 0 2; do for t in robotd daemon; do echo "## test_$t io-threads $io (exit code after)" >> $OUT/tests.txt; TDM_TEST_IO_THREADS=$io timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t io-threads $io exit $?" >> $OUT/tests.txt; done; done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
mkdir -p $OUT/plans $P/plans
SAVE_DIR=$P/plans PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:io2 gpu:io3 gpu:io2:hl4 gpu:io3:hl4 gpu:any0 gpu:io2 gpu gpu:io3:hl4 2>&1 | tee $OUT/rrt_call36.txt | grep -E '^==|replies|tandemd THREADS'
cp $P/plans/plan_gpu_64.txt $P/plans/plan_gpu_io2_64.txt $OUT/plans/
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/plans/fcl16.txt 2>/dev/null; tail -1 $OUT/plans/fcl16.txt
echo "done at ${SECONDS}s"
