set -uo pipefail
# Written in the thirty-third session. Run on call 187's machine and pack (672c75f), carrying
# [".packs", ".panda"]: device run "CALL=188 bash bench/results/ompl_resident/device_steps_188.sh".
# Call 188: the goal's round, one at a time, at the defaults and with each Tandem planner's frames
# through shared-memory rings (PLAN_ARGS="--ring on"), alternated (def, ring, def, ring, ...); the FCL
# row runs in each round too. (Call 189: the same, three more pairs; each report into one file.)
CALL=${CALL:?CALL}
source bench/device_unpack.sh /tmp/p$CALL
for r in $(seq ${PAIRS:-3}); do
  for v in def ring; do
    A=$([ $v = ring ] && echo "--ring on" || echo "")
    OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$P/new/bin/tandemd PANDA=.panda ROUNDS=1 THREADS=16 PLAN_ARGS="$A" \
      bash bench/run_goal_rounds.sh $OUT/goal_rounds_call${CALL}_${v}$r.md > $OUT/goal_$v$r.log 2>&1
    echo "$v $r: $(grep -E '^\| 1 ' $OUT/goal_rounds_call${CALL}_${v}$r.md)"
    # one file back for all (a call returns 8 files at most): each report, then its log
    { echo "# ---- $v, pair $r"; cat $OUT/goal_rounds_call${CALL}_${v}$r.md; } >> $OUT/goal_rounds_call${CALL}_all.md
    rm -f $OUT/goal_rounds_call${CALL}_${v}$r.md $OUT/goal_$v$r.log
  done
done
echo "done at ${SECONDS}s"
