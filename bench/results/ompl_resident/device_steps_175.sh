set -uo pipefail
# Written in the thirty-first session. Run after a pack of 9c43e8b (ARCHIVE=1 MINIMAL=1 TESTS="robotd"
# bench/device_pack.sh build .packs/new; then rm -rf .packs/new), carrying [".packs"]:
# device run "bash bench/results/ompl_resident/device_steps_175.sh".
# Call 175: 2471b4c (a large RobotPut's UTF-8 check on libuv's pool, after call 171's pack) with the
# GPU build: robotd.
source bench/device_unpack.sh /tmp/p175
echo "## test_robotd (exit code after)" >> $OUT/tests.txt; timeout 280 $P/new/bin/test_robotd >> $OUT/tests.txt 2>&1; echo "## test_robotd exit $?" >> $OUT/tests.txt
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "done at ${SECONDS}s"
