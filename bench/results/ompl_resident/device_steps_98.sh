set -uo pipefail
# Prepared in the twenty-third session (no device time left for it). Run after
# LINEINFO=1 bench/device_prepare.sh (device code with source lines), carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_98.sh".
# Call 98: call 97's racecheck named offsets only (fused_kernel: reads at +0x85e0 against writes at
# +0xe090 and +0xe180, "Error"; express_kernel: +0x93b0 against +0xeb20, "Warning"), and it ran
# out of time after 8 of robot_scene's 39 tests. This one names the lines, test by test group:
# fused runs, the express ring, block runs; on the build whose fused_config writes s_done and
# s_trunc with volatile stores (its readers were volatile already).
source bench/device_unpack.sh /tmp/p98
# first the two suites with GPU tests that call 99's pack had no room for (run in the twenty-fourth
# session: call 99's pack held gpu, robot_scene, robotd and daemon beside ompl_plan)
for t in scheduler pooler; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 120 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for f in "robot_scene/a_few_configurations_*:60" "robot_scene/*express*:130" "robot_scene/configs_in_block_runs_match*:130" \
         "robot_scene/configs_in_fused_runs_through_global_memory_match*:100"; do
  filt=${f%:*}; lim=${f##*:}
  echo "## racecheck $filt (limit ${lim}s)" | tee -a $OUT/racecheck.txt
  timeout $lim $CS --tool racecheck --target-processes all --print-limit 20 \
    $P/new/bin/test_robot_scene -j1 --verbose --filter "$filt" >> $OUT/racecheck.txt 2>&1
  echo "## exit $? at ${SECONDS}s" | tee -a $OUT/racecheck.txt
done
grep -E "^## |Race reported|access at|configs.cu:[0-9]+|Synthesis" $OUT/racecheck.txt | sed 's/  */ /g' | sort | uniq -c | sort -rn | head -60
echo "done at ${SECONDS}s"
