set -uo pipefail
# Call 23 (0c8b754): the GPU suites after the last pooler changes (cb10a8f, 4fe7f6e, --dispatch-poll-us).
P=/tmp/p23; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in gpu robotd daemon; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 150 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "done at ${SECONDS}s"
