set -uo pipefail
# Written in the twenty-fourth session. Run after LINEINFO=1 OMPL=1 TESTS="" bench/device_prepare.sh,
# carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_100.sh".
# Call 100: call 99 put a lane's 0.1 ms batch mostly on the device (runs of 1-8 configurations 0.056 ms
# in the GPU engine, 0.043 of it waiting for the device; 9-64: 0.076 and 0.063), and a job waits
# 0.035-0.055 ms for one of the three lanes (75-78 % busy). More lanes shorten that wait if their
# threads do not take the planners' cores: --engine-lanes 4 and 5 against the default 3 (last measured
# on the H100, before host lanes, fused runs and reply threads), and 4 lanes with a third host lane.
source bench/device_unpack.sh /tmp/p100
for r in 1 2; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:lanes4 gpu:lanes5 gpu:lanes4:hl3 2>&1 | tee -a $OUT/rrt_call100.txt | grep -E '^==|thread [0-9]'
done
python3 bench/variants_table.py $OUT/rrt_call100.txt | tee $OUT/table_call100.md
echo "done at ${SECONDS}s"
