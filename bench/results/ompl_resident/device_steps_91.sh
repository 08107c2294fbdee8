set -uo pipefail
# Call 91: a new scene's program stops the express ring's launches through the stop flag's copy in device memory at
# once (call 90: a block that started after its doorbell left waited to its end of life): robot_scene, robotd;
# 64 planners at the defaults against x16:xb64, two rounds (the planners' set-up time).
P=/tmp/p91; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene robotd; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 300 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
for r in 1 2; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x16:xb64 2>&1 | tee -a $OUT/rrt_call91.txt | grep -E '^=='
done
echo "done at ${SECONDS}s"
