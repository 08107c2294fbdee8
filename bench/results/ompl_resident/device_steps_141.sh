set -uo pipefail
# Prepared in the twenty-seventh session, run in the twenty-eighth after a pack of 4dfe2c1 (ARCHIVE=1
# TESTS="robotd pooler robot_scene" OMPL=1 bench/device_pack.sh build .packs/new), carrying
# [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_141.sh".
# Call 141: (1) the host lanes kept for motions' probe rounds (hm2, TDM_HOST_MIN_CONFIGS=2: a single
# state answers in about the same time on the ring as on a host lane, ~0.05 ms, but a probe round that
# finds no host lane free takes a pooled device run, ~0.15 ms; section 30) against the defaults, three
# alternated rounds; with them, the pooled runs of up to 128 or 256 configurations (threads 1-2's batches
# average ~160) as one fused kernel instead of the 1024-configuration graph of six launches (fc128, fc256:
# TDM_GPU_FUSED_CONFIGS; fc1024 was slower in call 71, these sizes were not tried); (2) the stages of the
# pooled device runs (prof: TDM_GPU_PROFILE, no CUDA graphs).
source bench/device_unpack.sh /tmp/p141
# (0) the tidy commit 4dfe2c1 on the GPU (its async path was built, not run, in the last session).
for t in robotd pooler robot_scene; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
for r in 1 2 3; do
  if (( r % 2 )); then vs="gpu gpu:hm2 gpu:fc128 gpu:fc256"; else vs="gpu:fc256 gpu:fc128 gpu:hm2 gpu"; fi
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $vs 2>&1 | tee -a $OUT/rrt_call141.txt | grep -E '^==|of them' | cut -c1-200
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call141.txt | tee $OUT/table_call141.md
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:prof 2>&1 | tee $OUT/prof_call141.txt | grep -v '^  tandemd\|^  ompl_plan' | cut -c1-200
echo "done at ${SECONDS}s"
