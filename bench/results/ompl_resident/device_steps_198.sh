set -uo pipefail
# Written in the thirty-fourth session. Run after a pack of b769393 (as call 196's; the rings are
# ompl_plan's default), carrying [".packs", ".panda"], on a fresh machine:
# device run "CALL=198 bash bench/results/ompl_resident/device_steps_198.sh".
# Call 198: call 196's profile with the planners on rings puts tandemd's two reply threads at 15 % of
# the machine, mostly polling (clock_gettime 5.8 %), their writes now a copy into a ring and a futex
# wake. Against the defaults, in alternated rounds over all 700 problems: no reply threads (rt0: the
# lanes and host lanes write their replies), one (rt1), the reply threads polling 50 us (rs50), and
# the loops polling 50 us (ls50). (Call 199, the same machine: V1="gpu gpu:rt1:rs50:ls50 gpu:rt0:ls50"
# V2="gpu:rt0:ls50 gpu:rt1:rs50:ls50 gpu" CALL=199 ROUNDS=4.)
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
nproc
V1=${V1:-"gpu gpu:rt0 gpu:rt1 gpu:rs50 gpu:ls50"}
V2=${V2:-"gpu:ls50 gpu:rs50 gpu:rt1 gpu:rt0 gpu"}
for r in $(seq ${ROUNDS:-3}); do
  V=$([ $((r % 2)) = 1 ] && echo "$V1" || echo "$V2")
  PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda $V >> $OUT/rrt_call$CALL.txt 2>&1
  echo "round $r done at ${SECONDS}s"
done
python3 bench/variants_table.py $OUT/rrt_call$CALL.txt > $OUT/table_call$CALL.md; cat $OUT/table_call$CALL.md
echo "done at ${SECONDS}s"
