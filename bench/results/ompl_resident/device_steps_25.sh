set -uo pipefail
# Call 25: lean configs runs (TDM_GPU_CONFIG_LEAN, default on: kinematics chained in registers, tasks
# listed in one pass, block runs in shared memory). GPU suites with it on and off; the pooled device
# path against the CPU engine; a run alone, on and off; the kernels (ncu); the 64-planner row, on and
# off, twice each, interleaved; FCL's 16 planners.
P=/tmp/p25; mkdir -p $P/new
tar xzf .packs/new.tar.gz -C $P/new
export LD_LIBRARY_PATH=$P/new/lib
head -3 $P/new/PACK_INFO
W=/tmp/w; mkdir -p $W; [[ -d $W/problems ]] || tar xjf .panda/problems.tar.bz2 -C $W
B=/work/main/build; mkdir -p $B/daemon $B/tools; ln -sf $P/new/bin/tandem $B/tools/tandem; ln -sf $P/new/bin/tandemd $B/daemon/tandemd
for t in robot_scene gpu robotd daemon; do echo "## test_$t (exit code after)" >> $OUT/tests.txt; timeout 200 $P/new/bin/test_$t --verbose >> $OUT/tests.txt 2>&1; echo "## test_$t exit $?" >> $OUT/tests.txt; done
for t in robot_scene gpu; do echo "## TDM_GPU_CONFIG_LEAN=0 test_$t (exit code after)" >> $OUT/tests.txt; TDM_GPU_CONFIG_LEAN=0 timeout 200 $P/new/bin/test_$t >> $OUT/tests.txt 2>&1; echo "## TDM_GPU_CONFIG_LEAN=0 test_$t exit $?" >> $OUT/tests.txt; done
grep -E "Synthesis|^## .*exit|FAIL" $OUT/tests.txt
echo "tests done at ${SECONDS}s"
L="$P/new/bin/bench_config_latency --urdf .panda/panda.urdf --srdf .panda/panda.srdf"
worlds=$(for s in $W/problems/*; do echo $s/scene0001.yaml $s/scene0002.yaml; done)
$L --verify --repeat 20 --threads 2 --lanes 2 --shapes 1:1,8:32,5:100 $worlds > $OUT/verify_call25.txt 2>&1; grep -E "verify|differ|rror" $OUT/verify_call25.txt
for lean in 1 0 1 0; do
  echo "## TDM_GPU_CONFIG_LEAN=$lean, 1 thread 1 lane"; TDM_GPU_CONFIG_LEAN=$lean $L --threads 1 --lanes 1 --repeat 200 --shapes 1:1,5:1,5:40,5:100 $worlds
  echo "## TDM_GPU_CONFIG_LEAN=$lean, 5 threads 5 lanes"; TDM_GPU_CONFIG_LEAN=$lean $L --threads 5 --lanes 5 --repeat 200 --shapes 1:1,5:40 $worlds
done > $OUT/latency_call25.md 2>&1
grep -E '^##|^\| [0-9]' $OUT/latency_call25.md | cut -c1-60
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for sh in 1:1 5:40; do
  echo "## ncu shape $sh" >> $OUT/ncu_call25.txt
  timeout 120 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --print-units base $L --threads 1 --lanes 1 --repeat 40 --shapes $sh $worlds > $P/ncu_$sh.csv 2>$P/ncu_err.txt || tail -3 $P/ncu_err.txt >> $OUT/ncu_call25.txt
  python3 - $P/ncu_$sh.csv >> $OUT/ncu_call25.txt <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
if not rows: print("no rows"); sys.exit()
h = rows[0]; ix = {k: i for i, k in enumerate(h)}
per = collections.defaultdict(list)
for r in rows[1:]:
    if r[ix["Metric Name"]] == "gpu__time_duration.sum":
        per[r[ix["Kernel Name"]].split("(")[0]].append(float(r[ix["Metric Value"]].replace(",", "")) / 1000.0)
for k, v in sorted(per.items(), key=lambda kv: -sum(kv[1])):
    v.sort(); print(f"{k[:40]:40s} launches={len(v):5d} median_us={v[len(v)//2]:8.2f} mean_us={sum(v)/len(v):8.2f} max_us={v[-1]:8.2f}")
PY
done
cat $OUT/ncu_call25.txt
echo "ncu done at ${SECONDS}s"
mkdir -p $OUT/plans
SAVE_DIR=$OUT/plans PLANNERS=64 PER=100 bash bench/run_rrt_variants.sh $P/new/bin .panda gpu gpu:lean0 gpu gpu:lean0 2>&1 | tee $OUT/rrt_call25.txt | grep -E '^==|replies'
$P/new/bin/ompl_plan --urdf .panda/panda.urdf --srdf .panda/panda.srdf --resolution 0.02 --seed 1 --planner rrtconnect --time-limit 2 --planners 16 --checker fcl --per-scenario 100 $W/problems > $OUT/plans/fcl16.txt 2>/dev/null; tail -1 $OUT/plans/fcl16.txt
echo "done at ${SECONDS}s"
