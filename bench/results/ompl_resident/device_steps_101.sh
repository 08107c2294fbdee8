set -uo pipefail
# Written in the twenty-fourth session. Run with the pack of call 100 (LINEINFO=1 build, OMPL=1 TESTS=""),
# carrying [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_101.sh".
# Call 101: call 99's replies say where the planners' single states go: 87 000 answered by a host
# thread in 0.051 ms, 241 000 by a lane in 0.194 ms (the two host threads 80-85 % busy, a quarter of
# their jobs single states, the rest motion probes of four). The express ring took states in ~0.14 ms
# (calls 87-93) but loaded its blocks with the motions' probes and rounds when it took requests of up to
# 16 configurations or more; x1 gives it single states only (and x4 the probes too), what no host
# thread takes, with 64 and 32 blocks; three rounds alternated against the defaults.
source bench/device_unpack.sh /tmp/p101
for r in 1 2 3; do
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:x1:xb64 gpu:x1:xb32 gpu:x4:xb64 2>&1 | tee -a $OUT/rrt_call101.txt | grep -E '^==|of them|express'
done
python3 bench/variants_table.py $OUT/rrt_call101.txt | tee $OUT/table_call101.md
echo "done at ${SECONDS}s"
