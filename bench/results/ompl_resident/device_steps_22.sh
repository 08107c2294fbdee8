set -uo pipefail
# Call 22 (host jobs only while a host thread is free, the commit before this file): test_robot_scene, and
# host lanes on and off at 3 and 5 engine lanes, each pair twice, interleaved, on one host.
P=/tmp/p22; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
timeout 100 $P/new/bin/test_robot_scene --verbose --filter "robot_scene/host*" > $OUT/tests.txt 2>&1; grep -E "Synthesis|jobs on" $OUT/tests.txt
PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu:hl0 gpu gpu:lanes5:hl0 gpu:lanes5 gpu:hl0 gpu gpu:lanes5:hl0 gpu:lanes5 2>&1 | tee $OUT/rrt_ab2.txt | grep -E '^=='
echo "done at ${SECONDS}s"
