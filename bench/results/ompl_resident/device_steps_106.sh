set -uo pipefail
# Written in the twenty-fourth session. Run after a pack of 110d957's build (ARCHIVE=1 TESTS="gpu
# robot_scene" OMPL=1 bench/device_pack.sh build .packs/new; a LINEINFO build: the same code), carrying
# [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_106.sh".
# Call 106: block_run_kernel's widest level now read by thread 0 alone (call 98's racecheck): gpu and
# robot_scene, and racecheck over the block runs again; then the new defaults (--express-configs auto:
# 1 here, --express-blocks 16) against the old (x0: no ring), four rounds alternated.
source bench/device_unpack.sh /tmp/p106
for t in gpu robot_scene; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 300 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 90 $CS --tool racecheck --target-processes all --print-limit 20 \
  $P/new/bin/test_robot_scene -j1 --verbose --filter "robot_scene/configs_in_block_runs_match*" > $OUT/racecheck.txt 2>&1
echo "## racecheck exit $? at ${SECONDS}s" >> $OUT/racecheck.txt
grep -E "^## |Race reported|RACECHECK SUMMARY|Synthesis" $OUT/racecheck.txt | sed 's/  */ /g' | sort | uniq -c | sort -rn | head -20
for r in 1 2 3 4; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x0 2>&1 | tee -a $OUT/rrt_call106.txt | grep -E '^==|of them|express'
done
python3 bench/variants_table.py $OUT/rrt_call106.txt | tee $OUT/table_call106.md
echo "done at ${SECONDS}s"
