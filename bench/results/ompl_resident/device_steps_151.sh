set -uo pipefail
# Written in the twenty-ninth session. Run after a pack of the tree arena's tree (ARCHIVE=1 MINIMAL=1
# TESTS="gpu scheduler robot_scene" bench/device_pack.sh build .packs/new: two packs, since all the suites
# and OMPL's libraries do not fit in one call's 64 MiB), carrying [".packs"]:
# device run "bash bench/results/ompl_resident/device_steps_151.sh".
# Call 151: the suites that upload and free trees on the GPU, the express ring's among them, with the
# tree arena (gpu/resident.h: trees' arrays as extents of cudaMalloc chunks, freed without cudaFree).
# Call 152 (device_steps_152.sh) then runs the planners.
source bench/device_unpack.sh /tmp/p151
for t in gpu scheduler robot_scene; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 280 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL|chunks at most" $OUT/tests.txt
echo "done at ${SECONDS}s"
