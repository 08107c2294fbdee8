set -uo pipefail
# Written in the thirtieth session. Run after a pack of the tree with spare large chunks (ARCHIVE=1 MINIMAL=1
# TESTS="gpu scheduler robot_scene" bench/device_pack.sh build .packs/new: two packs, since all the suites
# and OMPL's libraries do not fit in one call's 64 MiB), carrying [".packs"]:
# device run "bash bench/results/ompl_resident/device_steps_156.sh".
# Call 156: e75c773 (not yet run on a GPU) and the tree arena's spare chunks for large trees: the suites
# that upload and free trees on the GPU, the express ring's among them.
# Call 157 (device_steps_157.sh) then runs robotd, pooler and the goal rounds.
source bench/device_unpack.sh /tmp/p156
for t in gpu scheduler robot_scene; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 280 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL|chunks at most|large trees:" $OUT/tests.txt
echo "done at ${SECONDS}s"
# Call 156 failed gpu's two_engines_upload_is_all_or_nothing (engine 0 kept the refused upload's
# chunk as a spare); the rollback now discards (tdm_gpu_mesh_discard) and the same steps ran again
# as call 156b. The new test's log line:
$P/new/bin/test_gpu --verbose --filter 'gpu/large_trees*' 2>&1 | grep -E "large trees|Synthesis"
