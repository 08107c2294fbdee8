set -uo pipefail
# Call 71: fused runs after the room fix (a pair past a block's room handed over before it goes to shared
# memory), and fused runs up to 1 024 configurations (TDM_GPU_FUSED_CONFIGS): robot_scene;
# bench_config_latency --verify at 64 (default), 1024 and none; 64 planners at each, two rounds; FCL 16.
P=/tmp/p71; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
timeout 240 $P/new/bin/test_robot_scene --verbose > $OUT/tests.txt 2>&1; echo "## test_robot_scene exit $?" >> $OUT/tests.txt
grep -E "Synthesis|^## .*exit|FAIL|one kernel|differ" $OUT/tests.txt | head -40
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml $s/scene0003.yaml; done)
for v in "TDM_GPU_FUSED_CONFIGS=64" "TDM_GPU_FUSED_CONFIGS=1024" "TDM_GPU_CONFIG_FUSED=0"; do
  echo "### $v" >> $OUT/latency.txt
  env $v timeout 150 $L --verify --repeat 200 --threads 2 --lanes 2 --shapes 1:1,1:4,8:8,16:8,16:16,8:64,16:64 $worlds >> $OUT/latency.txt 2>&1
  env $v timeout 60 $L --repeat 300 --threads 5 --lanes 5 --shapes 1:4,8:8,16:16,8:64 $worlds >> $OUT/latency.txt 2>&1
done
grep -E "###|verify|^\| [0-9]|rror" $OUT/latency.txt
echo "tests+latency at ${SECONDS}s"
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:fc1024 gpu:fused0 gpu gpu:fc1024 gpu:fused0 2>&1 | tee $OUT/rrt_call71.txt | grep -E '^=='
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems 2>&1 | tail -1 | tee $OUT/fcl16.txt
echo "done at ${SECONDS}s"
