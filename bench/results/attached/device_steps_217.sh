set -uo pipefail
# Written in the thirty-eighth session. Run after a pack of the session's code (cones):
# ARCHIVE=1 OMPL=1 TESTS="solid attached" bench/device_pack.sh build .packs/new; rm -rf .packs/new;
# and .att/att.tgz made here: after `CONE=1 PANDA=.panda WORK=DIR bench/run_attached.sh build-f 20000 1 cpu`,
# (cd DIR && tar czf att.tgz *_panda.yaml *_panda.fcl.out *_panda.tandem.out configs.txt) (the 7 scenes with the
# attached objects and the cones of bench/attached_scene.py --cone, the configurations, the FCL reference's and the
# CPU engine's --out files); carrying [".packs", ".panda", ".att"], on a fresh one-GPU machine:
# device run "CALL=217 bash bench/results/attached/device_steps_217.sh".
# The suites on the GPU; `tandem check --backend gpu` on the cone scenes against the FCL reference's answers and the
# CPU engine's (neither depends on the machine); then the goal's eight rounds at the defaults.
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
(cd .att && tar xzf att.tgz)
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in ${SUITES:-solid attached}; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 300 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL|SKIP" $OUT/tests.txt
{
echo "| scenario | configurations | GPU colliding | FCL colliding | GPU only | FCL only | GPU vs CPU engine: differences |"
echo "|---|--:|--:|--:|--:|--:|--:|"
for y in .att/*_panda.yaml; do
  sc=$(basename $y .yaml)
  $P/new/bin/tandem check --urdf .panda/panda.urdf --srdf .panda/panda.srdf --world $y --configs .att/configs.txt \
    --mode bool --backend gpu --out $OUT/$sc.gpu.out > $OUT/$sc.gpu.summary
  paste $OUT/$sc.gpu.out .att/$sc.fcl.out .att/$sc.tandem.out | awk -v sc=$sc '{n++; g += $1 > 0; f += $2 > 0;
    go += ($1 > 0 && $2 == 0); fo += ($1 == 0 && $2 > 0); d += ($1 > 0) != ($3 > 0)}
    END {printf "| %s | %d | %d | %d | %d | %d | %d |\n", sc, n, g, f, go, fo, d}'
done
} | tee $OUT/cone_gpu.md
cat $OUT/*.gpu.summary
rm -f $OUT/*.gpu.out
if [[ ${GOAL:-1} == 1 ]]; then
  OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=${ROUNDS:-8} THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call$CALL.md > $OUT/goal.log 2>&1; echo "goal exit $?"
  grep -E "^\\| [0-9]|median|busy" $OUT/goal_rounds_call$CALL.md
fi
echo "done at ${SECONDS}s"
