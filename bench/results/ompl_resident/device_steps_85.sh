set -uo pipefail
# Call 85: the express ring with a doorbell block (one thread reads the ring across the bus, the others wait
# on its copy in device memory: call 84 polled host memory from every block). robot_scene and robotd suites;
# bench_config_latency lanes against the ring; 64 planners: gpu, gpu with the ring, the ring without host lanes.
P=/tmp/p85; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene robotd; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t --verbose >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL|express" $OUT/tests.txt | grep -v "^\[RUN" | head -30
echo "tests at ${SECONDS}s"
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do ls $s/scene00*.yaml | sed -n '10p;20p;30p;40p;50p'; done)
for th in 1 8; do
  echo "### threads $th: lanes" >> $OUT/latency.txt
  timeout 100 $L --verify --repeat 300 --threads $th --lanes 2 --shapes 1:1,1:4,1:16,1:64 $worlds >> $OUT/latency.txt 2>&1
  echo "### threads $th: express 32" >> $OUT/latency.txt
  timeout 100 $L --verify --express 32 --repeat 300 --threads $th --lanes 2 --shapes 1:1,1:4,1:16,1:64 $worlds >> $OUT/latency.txt 2>&1
done
grep -v "^|---" $OUT/latency.txt | grep -v "^| groups"
echo "latency at ${SECONDS}s"
for r in 1; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x64 gpu:x64:hl0 2>&1 | tee -a $OUT/rrt_call85.txt | grep -E '^==|thread'
done
echo "done at ${SECONDS}s"
