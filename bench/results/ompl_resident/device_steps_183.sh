set -uo pipefail
# Written in the thirty-second session. Run after a pack of the build with GCC's basic-block
# vectorizer off (fcfc86e; ARCHIVE=1 MINIMAL=1 TESTS="gpu robot_scene robotd geom"
# bench/device_pack.sh build .packs/new; then rm -rf .packs/new), carrying [".packs"]:
# device run "bash bench/results/ompl_resident/device_steps_183.sh".
# Call 183: the GPU build with -fno-tree-slp-vectorize on every C, C++ and CUDA host file: geom (its
# new float_round_trips_are_kept), gpu, robot_scene, robotd.
source bench/device_unpack.sh /tmp/p183
nproc
for t in geom gpu robot_scene robotd; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
  echo "$t done at ${SECONDS}s"
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
