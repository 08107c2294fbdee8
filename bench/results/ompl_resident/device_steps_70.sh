set -uo pipefail
# Call 70: fused runs (a planner's few configurations in one kernel, gpu/configs.cu fused_kernel): the
# suites robot_scene (fused runs against the CPU engine, handing over, through global memory), gpu,
# robotd, daemon; bench_config_latency --verify with and without (TDM_GPU_CONFIG_FUSED=0); 64 planners
# gpu against gpu:fused0 with the device runs' waits (gtrace).
P=/tmp/p70; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene gpu robotd daemon; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t --verbose >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL|fail|one kernel" $OUT/tests.txt | head -40
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml $s/scene0003.yaml; done)
for f in 1 0; do
  echo "### TDM_GPU_CONFIG_FUSED=$f" >> $OUT/latency.txt
  TDM_GPU_CONFIG_FUSED=$f timeout 120 $L --verify --repeat 200 --threads 2 --lanes 2 --shapes 1:1,1:4,4:2,8:8,16:4,4:64 $worlds >> $OUT/latency.txt 2>&1
  TDM_GPU_CONFIG_FUSED=$f timeout 60 $L --repeat 400 --threads 5 --lanes 5 --shapes 1:1,1:4,8:8 $worlds >> $OUT/latency.txt 2>&1
done
grep -E "###|verify|^\| [0-9]|rror" $OUT/latency.txt
echo "tests+latency at ${SECONDS}s"
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:gtrace gpu:fused0:gtrace gpu gpu:fused0 2>&1 | tee $OUT/rrt_call70.txt | grep -E '^==|gpu configs'
echo "done at ${SECONDS}s"
