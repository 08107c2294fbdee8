set -uo pipefail
# Written in the thirty-seventh session. Run after a CUDA pack of the session's code (attached objects):
# MINIMAL=1 TESTS="attached robot_scene motions" ARCHIVE=1 bench/device_pack.sh build .packs/new;
# rm -rf .packs/new; and .att/att.tgz made here: after `PANDA=.panda WORK=DIR bench/run_attached.sh build-f
# 20000 1 cpu`, (cd DIR && tar czf att.tgz *_panda.yaml *_panda.fcl.out *_panda.tandem.out configs.txt) (the 7
# scenes with objects attached, the configurations, the FCL reference's and the CPU engine's --out files); carrying
# [".packs", ".panda", ".att"], on a one-GPU machine: device run "CALL=213 bash bench/results/attached/device_steps_213.sh".
# The suites on the GPU, then `tandem check --backend gpu` on the attached scenes against the FCL
# reference's answers and the CPU engine's (both computed here: neither depends on the machine).
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
(cd .att && tar xzf att.tgz) # packed here: tar czf att.tgz of the files above
nproc; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in ${SUITES:-attached robot_scene motions}; do
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
} | tee $OUT/attached_gpu.md
cat $OUT/*.gpu.summary
echo "done at ${SECONDS}s"
