set -uo pipefail
# Call 82: trees' device arrays from the stream-ordered pool (TDM_GPU_MESH_POOLED=1, new) against cudaMalloc and
# cudaFree (which synchronise the device): the gpu and robot_scene suites with the pool; 64 planners on the 700
# problems with each tree's upload and free timed (mtrace), and without the trace, two rounds alternated.
P=/tmp/p82; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in gpu robot_scene; do
  TDM_GPU_MESH_POOLED=1 timeout 300 $P/new/bin/test_$t > $OUT/tests_$t.txt 2>&1; echo "## test_$t (pooled) exit $?" >> $OUT/tests_$t.txt; grep -E "Synthesis|exit" $OUT/tests_$t.txt
done
echo "tests at ${SECONDS}s"
for r in 1 2; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:mp0:mtrace gpu:mp1:mtrace gpu:mp0 gpu:mp1 2>&1 | tee -a $OUT/rrt_call82.txt | grep -E '^==|gpu mesh'
done
echo "done at ${SECONDS}s"
