set -uo pipefail
# Call 34: the review commit (pooler queue_pop, configs.cu listed_in_one_pass): test_robot_scene and
# test_gpu on the H100.
P=/tmp/p34; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene gpu; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
