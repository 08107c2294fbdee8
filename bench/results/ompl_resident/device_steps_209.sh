set -uo pipefail
# Written in the thirty-sixth session. Run after a pack of the session's code (ephemeral scenes:
# ompl_plan --ephemeral-scenes 1 by default): OMPL=1 ARCHIVE=1 TESTS="robotd tenants"
# bench/device_pack.sh build .packs/new; then rm -rf .packs/new; carrying [".packs", ".panda"], on a
# fresh one-GPU machine: device run "CALL=209 bash bench/results/ompl_resident/device_steps_209.sh".
# Call 209: SUITES (robotd tenants: the ephemeral scenes' tests) on the GPU, then 64 planners at the
# defaults (each problem's scene ephemeral) against eph0 (stored, as before), alternated over all
# 700 problems, ROUNDS rounds.
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in ${SUITES:-robotd tenants}; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
[[ -s $OUT/tests.txt ]] && grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
V1=${V1:-"gpu gpu:eph0"}
V2=${V2:-"gpu:eph0 gpu"}
for r in $(seq ${ROUNDS:-3}); do
  V=$([ $((r % 2)) = 1 ] && echo "$V1" || echo "$V2")
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $V >> $OUT/rrt_call$CALL.txt 2>&1
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call$CALL.txt > $OUT/table_call$CALL.md; cat $OUT/table_call$CALL.md
echo "done at ${SECONDS}s"
