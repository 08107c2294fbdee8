set -uo pipefail
# Call 67: host threads write their own replies, the reply threads the lanes' (new default), against
# every reply to the reply threads (rhost, call 66's build) and none (rt0), two rounds; the suites robotd,
# daemon, limits.
P=/tmp/p67; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:rhost gpu:rt0 gpu gpu:rhost gpu:rt0 2>&1 | tee $OUT/rrt_call67.txt | grep -E '^==|of them'
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robotd daemon limits; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL|RSS 20" $OUT/tests.txt
echo "done at ${SECONDS}s"
