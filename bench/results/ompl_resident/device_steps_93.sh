set -uo pipefail
# Run after bench/device_prepare.sh (the build at HEAD packed into .packs, the Panda into .panda), carrying
# [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_93.sh".
# Call 93 (prepared in the twenty-second session): the express ring taking a motion's later rounds
# too (TDM_SCHED_EXPRESS_MAX 64 -> 256: a planner's motion is ~80 states at 0.02 rad, its rounds after
# the probes up to the GPU window's 64 and more; the lanes' jobs averaged ~32 in call 87) with many more resident
# blocks: 192 and 384 (express_kernel is bound to 128 registers a thread, so an SM holds 4 of its
# blocks: 528 on the H200's 132 SMs; two launches overlap while the ring is busy, and the lanes' kernels
# need room too: 384 is past what leaves them any), all with xany (no learned-cost gate); 192 also without
# probes (pr0: a motion's first 64 states at once, then 128) and with two express threads (xt2: one
# finishing ~200 000 requests a second may be what bounds it), against
# the defaults and x16:xb64 (calls 86-91's best), two rounds; robot_scene (its express
# tests now send requests of up to 256 configurations; a new one replaces programs under load), robotd
# (planners through the ring with rounds of up to 256 states).
P=/tmp/p93; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene robotd; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 300 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL|express" $OUT/tests.txt
for r in 1 2; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x16:xb64 gpu:x256:xb192:xany \
    gpu:x256:xb192:xany:pr0 gpu:x256:xb192:xany:xt2 gpu:x256:xb384:xany 2>&1 | tee -a $OUT/rrt_call93.txt | grep -E '^==|express ring'
done
python3 bench/variants_table.py $OUT/rrt_call93.txt | tee $OUT/table_call93.md
echo "done at ${SECONDS}s"
