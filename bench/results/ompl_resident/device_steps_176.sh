set -uo pipefail
# Written in the thirty-first session. Run after a pack of 89105c2 (ARCHIVE=1 MINIMAL=1 TESTS="robotd"
# bench/device_pack.sh build .packs/new; then rm -rf .packs/new), carrying [".packs"]:
# device run "bash bench/results/ompl_resident/device_steps_175.sh".
# Call 176: 89105c2 (a large MotionCheck prepared on libuv's pool, after call 175) with the
# GPU build: robotd.
source bench/device_unpack.sh /tmp/p176
echo "## test_robotd (exit code after)" >> $OUT/tests.txt; timeout 280 $P/new/bin/test_robotd >> $OUT/tests.txt 2>&1; echo "## test_robotd exit $?" >> $OUT/tests.txt
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "done at ${SECONDS}s"
