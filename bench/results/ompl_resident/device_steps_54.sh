set -uo pipefail
# Call 54: the CPU engine skips a bool query's checks after its first colliding one (tdm_task.group;
# TDM_ENGINE_SKIP_ANSWERED=0 turns it off): robotd's suite on the GPU engine (answers against the
# offline reference), then the 64-planner row with and without it, interleaved, and FCL 16.
P=/tmp/p54; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
timeout 120 $P/new/bin/test_robotd > $OUT/tests_call54.txt 2>&1; echo "## test_robotd exit $?" >> $OUT/tests_call54.txt
grep -E "Synthesis|^## |FAIL" $OUT/tests_call54.txt
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:skip0 gpu gpu:skip0 2>&1 | grep -v "^  thread" | tee $OUT/rrt_call54.txt | grep -E '^==|of them'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems 2>/dev/null | tail -1 | sed 's/^/== fcl16: /' | tee -a $OUT/rrt_call54.txt
echo "done at ${SECONDS}s"
