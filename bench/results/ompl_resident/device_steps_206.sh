set -uo pipefail
# Written in the thirty-sixth session. Run after a pack of the session's code (removed trees freed by
# idle pooler threads, TDM_POOLER_RECLAIM=0 the old way): OMPL=1 ARCHIVE=1 TESTS="scheduler pooler
# daemon robotd ops" bench/device_pack.sh build .packs/new; then rm -rf .packs/new; carrying
# [".packs", ".panda"], on a fresh one-GPU machine:
# device run "CALL=206 bash bench/results/ompl_resident/device_steps_206.sh".
# Call 206: the suites on one GPU (scheduler's new test), then 64 planners at the defaults against
# rc0 (TDM_POOLER_RECLAIM=0), alternated over all 700 problems: each problem's scene put and deleted,
# its trees' removals now wake a sleeping lane thread that frees them.
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
if [[ ${TESTS:-1} == 1 ]]; then
  for t in scheduler pooler daemon robotd ops; do
    echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 240 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
  done
  grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
fi
V1=${V1:-"gpu gpu:rc0"}
V2=${V2:-"gpu:rc0 gpu"}
for r in $(seq ${ROUNDS:-3}); do
  V=$([ $((r % 2)) = 1 ] && echo "$V1" || echo "$V2")
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $V >> $OUT/rrt_call$CALL.txt 2>&1
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call$CALL.txt > $OUT/table_call$CALL.md; cat $OUT/table_call$CALL.md
echo "done at ${SECONDS}s"
