set -uo pipefail
# Prepared in the twenty-third session. Run after bench/device_prepare.sh, carrying [".packs", ".panda"]:
# device run "bash bench/results/ompl_resident/device_steps_99.sh".
# Call 99: where a lane's batch goes now. In call 93 a lane's batch ran 0.099 ms (the pooler's count),
# 0.085-0.090 of it in the scheduler, whatever its size (22 or 154 configurations); call 70's trace had
# 0.065 ms of a 9-64 configuration run waiting for the device and the rest on the host. A lane is
# 75-78 % busy and a job waits 0.037 ms for one: the run's fixed cost is what the planners wait
# for. gtrace splits each device run into the GPU engine's time and its wait for the device; two
# rounds, against the untraced defaults. And sp0: an any-state motion's states after its probes
# first to last, against the spread order (new in the twenty-third session, measured only on the
# CPU engine there).
source bench/device_unpack.sh /tmp/p99
# first the suites with GPU tests that fit the pack beside ompl_plan (a LINEINFO=1 pack of all six is past
# the 64 MiB a call carries: call 98 runs scheduler and pooler) (the build has changes no GPU ran: the arena's eviction under load
# aside, fused_config's volatile stores, the ring's uploads outside its publishing lock and the spread
# order)
for t in gpu robot_scene robotd daemon; do
  echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 300 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt
done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
for r in 1 2; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:gtrace gpu:sp0 2>&1 | tee -a $OUT/rrt_call99.txt | grep -E '^==|gpu engine runs|thread [0-9]'
done
python3 bench/variants_table.py $OUT/rrt_call99.txt | tee $OUT/table_call99.md
echo "done at ${SECONDS}s"
