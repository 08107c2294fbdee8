set -uo pipefail
# Call 26: configs runs past 65 536 (configuration, check) entries went to the levels (a run of 500
# configurations: 351 us alone against 114 for 200 in a block run, call 25). Block runs for larger runs
# (TDM_GPU_BLOCK_CONFIG_ENTRIES): the suites with it, the pooled path against the CPU engine, a run
# alone, and the 64-planner row; the new long-chain test at the defaults.
P=/tmp/p26; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
echo "## test_robot_scene (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_robot_scene --verbose >> $OUT/tests.txt 2>&1; echo "## test_robot_scene exit $?" >> $OUT/tests.txt
for t in robot_scene gpu; do echo "## TDM_GPU_BLOCK_CONFIG_ENTRIES=1048576 test_$t (exit code after)" >> $OUT/tests.txt; TDM_GPU_BLOCK_CONFIG_ENTRIES=1048576 timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## TDM_GPU_BLOCK_CONFIG_ENTRIES=1048576 test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL|long_chain|colliding, " $OUT/tests.txt
echo "tests done at ${SECONDS}s"
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml; done)
TDM_GPU_BLOCK_CONFIG_ENTRIES=1048576 $L --verify --repeat 10 --threads 2 --lanes 2 --shapes 5:100,8:128,10:100 $worlds > $OUT/verify_call26.txt 2>&1; grep -E "verify|differ|rror" $OUT/verify_call26.txt
for bce in 65536 262144 1048576; do
  echo "## TDM_GPU_BLOCK_CONFIG_ENTRIES=$bce, 1 thread 1 lane"; TDM_GPU_BLOCK_CONFIG_ENTRIES=$bce $L --threads 1 --lanes 1 --repeat 100 --shapes 5:40,5:100,8:128,10:100 $worlds
  echo "## TDM_GPU_BLOCK_CONFIG_ENTRIES=$bce, 3 threads 3 lanes"; TDM_GPU_BLOCK_CONFIG_ENTRIES=$bce $L --threads 3 --lanes 3 --repeat 100 --shapes 5:100,10:100 $worlds
done > $OUT/latency_call26.md 2>&1
grep -E '^##|^\| [0-9]' $OUT/latency_call26.md | cut -c1-80
echo "latency done at ${SECONDS}s"
mkdir -p $OUT/plans
SAVE_DIR=$OUT/plans PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:bce262144 gpu:bce1048576 gpu gpu:bce1048576 2>&1 | tee $OUT/rrt_call26.txt | grep -E '^==|replies|thread [0-9]'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/plans/fcl16.txt 2>/dev/null; tail -1 $OUT/plans/fcl16.txt
echo "done at ${SECONDS}s"
