set -uo pipefail
# Call 79 (run twice: the first without the CLI's link, so cli_check_urdf could not find tandem): robot_scene with the chains of 40 joints (~900 checks: fused runs) and 50 (more than 1 024: graph runs).
P=/tmp/p79; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
timeout 240 $P/new/bin/test_robot_scene --verbose > $OUT/tests.txt 2>&1; echo "## test_robot_scene exit $?" >> $OUT/tests.txt
grep -E "Synthesis|exit|FAIL|chain" $OUT/tests.txt
echo "done at ${SECONDS}s"
