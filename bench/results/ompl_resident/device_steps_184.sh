set -uo pipefail
# Written in the thirty-second session. Run after a pack of the build with GCC's basic-block
# vectorizer off (fcfc86e; ARCHIVE=1 MINIMAL=1 TESTS="scheduler engine motions pooler"
# bench/device_pack.sh build .packs/new; then rm -rf .packs/new), carrying [".packs"]:
# device run "bash bench/results/ompl_resident/device_steps_184.sh".
# Call 184: the GPU build with -fno-tree-slp-vectorize on every C, C++ and CUDA host file: scheduler, engine, motions, pooler.
source bench/device_unpack.sh /tmp/p184
nproc
for t in scheduler engine motions pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
  echo "$t done at ${SECONDS}s"
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
