set -uo pipefail
# Written in the thirty-second session. Run on call 185's machine and pack (cc77616, the build with
# GCC's basic-block vectorizer off; ARCHIVE=1 OMPL=1 TESTS="" bench/device_pack.sh build .packs/new), with
# .packs/old_tandemd.tar.gz holding bin/tandemd of call 178's pack (6a6dd74, built with it on), carrying
# [".packs", ".panda"]: device run "bash bench/results/ompl_resident/device_steps_186.sh".
# Call 186: does -fno-tree-slp-vectorize slow tandemd? The goal's round, one at a time, with 6a6dd74's
# tandemd and cc77616's alternated (old, new, old, new); the FCL row runs in each round too.
source bench/device_unpack.sh /tmp/p186
mkdir -p /tmp/p186/old && tar xzf .packs/old_tandemd.tar.gz -C /tmp/p186/old
for r in 1 2; do
  for v in old new; do
    T=$([ $v = old ] && echo /tmp/p186/old/bin/tandemd || echo $P/new/bin/tandemd)
    OMPL_PLAN=$P/new/bin/ompl_plan TANDEMD=$T PANDA=.panda ROUNDS=1 THREADS=16 bash bench/run_goal_rounds.sh $OUT/goal_rounds_call186_${v}$r.md > $OUT/goal_$v$r.log 2>&1
    echo "$v $r: $(grep -E '^\| 1 ' $OUT/goal_rounds_call186_${v}$r.md)"
  done
done
echo "done at ${SECONDS}s"
