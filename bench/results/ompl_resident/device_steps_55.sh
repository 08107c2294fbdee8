set -uo pipefail
# Call 55: the session's last build (large frames' buffers mapped; the CPU engine's skipped checks;
# the shared lock with its I/O-thread default): the GPU suites robotd and daemon, and limits (the
# partial frames' resident memory), at the defaults and daemon with --io-threads 0.
P=/tmp/p55; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robotd daemon limits daemon:0; do n=${t%%:*}; io=; [[ $t == *:0 ]] && io=0; echo "## test_$n io-threads ${io:-default} (exit code after)" >> $OUT/tests.txt; TDM_TEST_IO_THREADS=$io timeout 150 $P/new/bin/test_$n >> $OUT/tests.txt 2>&1; echo "## test_$n io-threads ${io:-default} exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL|RSS 20" $OUT/tests.txt
echo "done at ${SECONDS}s"
