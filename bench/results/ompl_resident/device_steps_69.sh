set -uo pipefail
# Call 69: tandemd's default engine (auto) with 64 planners: the CPU engine's lists on their caller first
# (new) against the pool woken at once (solo0); the pool threads' CPU and waits in the thread lines. Then
# the suites robotd (with the concurrent puts' fix), daemon and robot_scene.
P=/tmp/p69; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda auto auto:solo0 auto auto:solo0 2>&1 | tee $OUT/rrt_call69.txt | grep -E '^==|THREADS|WAITS'
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robotd daemon robot_scene; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "done at ${SECONDS}s"
