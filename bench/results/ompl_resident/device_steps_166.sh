set -uo pipefail
# Written in the thirty-first session. Run after a pack of 342a4e5 (ARCHIVE=1 MINIMAL=1
# TESTS="gpu robotd limits robot_scene" bench/device_pack.sh build .packs/new; then
# rm -rf .packs/new, carrying only the archive), carrying [".packs"]:
# device run "bash bench/results/ompl_resident/device_steps_166.sh".
# Call 166: the arena_reap tidy (every empty chunk given back through arena_trim once no tree is
# left) and the daemon's large frames decoded and large URDFs parsed on libuv's pool, none of which
# had run on a GPU: the suites that upload and free trees, and the daemon suites that send large
# frames and URDFs.
source bench/device_unpack.sh /tmp/p166
for t in gpu robot_scene robotd limits; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL|chunks at most|large trees:" $OUT/tests.txt
$P/new/bin/test_gpu --verbose --filter 'gpu/large_trees*' 2>&1 | grep -E "large trees|Synthesis"
$P/new/bin/test_gpu --verbose --filter 'gpu/tree_arena*' 2>&1 | grep -E "arena|Synthesis"
echo "done at ${SECONDS}s"
