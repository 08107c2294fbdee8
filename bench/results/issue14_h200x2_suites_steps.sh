set -uo pipefail
# Thirty-fifth session: the GPU build's suites on a host with two GPUs, where tandemd and the engine
# use both by default (robots' scene programs, motions, tenants and limits have only run on one GPU).
# Pack (what fits beside the tree in 64 MiB): MINIMAL=1 ARCHIVE=1 TESTS="daemon robotd robot_scene motions gpu"
# bench/device_pack.sh build .packs/new, bin/bench_server taken out of the archive, carrying [".packs"]:
# device run --kind nvidia-h200-x2 "bash bench/results/issue14_h200x2_suites_steps.sh".
source bench/device_unpack.sh /tmp/px
nproc; nvidia-smi --query-gpu=index,name --format=csv,noheader
for t in ${SUITES:-gpu robot_scene motions robotd daemon}; do
  echo "## test_$t" >> $OUT/tests_h200x2.txt
  timeout 200 $P/new/bin/test_$t >> $OUT/tests_h200x2.txt 2>&1; echo "## test_$t exit $? at ${SECONDS}s" >> $OUT/tests_h200x2.txt
done
grep -E "Synthesis|^## .*exit|FAIL|Assert|expression" $OUT/tests_h200x2.txt
echo "done at ${SECONDS}s"
