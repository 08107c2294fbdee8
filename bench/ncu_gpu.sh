#!/usr/bin/env bash
# Nsight Compute on the GPU-resident engine: every launch of its two kernels
# during `tandem check --backend gpu` on one OMPL scene, with the SM and memory
# throughput Nsight Compute reports as a share of the H100's peak. Prints, per
# kernel: launches, summed duration, the duration-weighted mean of both shares,
# and the busiest launch's. Raw per-launch CSV goes to $OUT_DIR when given.
#
#   SCENE=alpha-1.5 MODE=bool N_POSES=100000 BUILD_DIR=build [TRAVERSAL=pairs|blocks|wide] bench/ncu_gpu.sh
#
# Needs ncu (CUDA toolkit) and the scenes in ../shared/scenes/ompl.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
SCENE=${SCENE:-alpha-1.5}
MODE=${MODE:-bool}
N_POSES=${N_POSES:-100000}
LAUNCHES=${LAUNCHES:-2000}
TRAVERSAL=${TRAVERSAL:-pairs} # tandem check --gpu-traversal
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
ompl=../shared/scenes/ompl
tandem=$BUILD_DIR/tools/tandem
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tandem" poses random --cfg "$ompl/$SCENE.cfg" --n "$N_POSES" --seed 1 --out "$work/poses" >/dev/null
metrics=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
cmd=("$tandem" check --env "$ompl/canonical/$SCENE.env.obj" --robot "$ompl/canonical/$SCENE.robot.obj"
     --poses "$work/poses" --mode "$MODE" --backend gpu --gpu-traversal "$TRAVERSAL")
echo "\$ $NCU --metrics $metrics -k regex:'traverse_kernel|traverse_blocks_kernel|traverse_wide_kernel|tri_filter_kernel|tri_exact_kernel' --launch-count $LAUNCHES --csv ${cmd[*]}"
"$NCU" --metrics "$metrics" -k regex:'traverse_kernel|traverse_blocks_kernel|traverse_wide_kernel|tri_filter_kernel|tri_exact_kernel' --launch-count "$LAUNCHES" --csv "${cmd[@]}" \
    >"$work/raw.csv" 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
[[ -n ${OUT_DIR:-} ]] && cp "$work/raw.csv" "$OUT_DIR/ncu_${SCENE}_${MODE}.csv"
# CSV rows: "ID","Process ID","Process Name","Host Name","Kernel Name",...,"Metric Name","Metric Unit","Metric Value"
python3 - "$work/raw.csv" "$SCENE" "$MODE" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
head = rows[0]; rows = rows[1:]
ix = {k: i for i, k in enumerate(head)}
launch = collections.defaultdict(dict)
for r in rows:
    name = r[ix["Kernel Name"]].split("(")[0]
    val = float(r[ix["Metric Value"]].replace(",", ""))
    unit = r[ix["Metric Unit"]]
    if r[ix["Metric Name"]] == "gpu__time_duration.sum":
        val = val / 1000.0 if unit in ("ns", "nsecond") else (val * 1000.0 if unit in ("ms", "msecond") else val)
    launch[(r[ix["ID"]], name)][r[ix["Metric Name"]]] = val
per = collections.defaultdict(list)
for (i, name), m in launch.items():
    per[name].append((m["gpu__time_duration.sum"], m["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
                      m["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]))
total = sum(t for v in per.values() for t, _, _ in v)
for name, v in sorted(per.items(), key=lambda kv: -sum(t for t, _, _ in kv[1])):
    t = sum(x[0] for x in v)
    sm = sum(x[0] * x[1] for x in v) / t
    mem = sum(x[0] * x[2] for x in v) / t
    b = max(v, key=lambda x: x[0])
    print(f"NCU scene={sys.argv[2]} mode={sys.argv[3]} kernel={name} launches={len(v)} time_us={t:.0f} "
          f"share_of_kernel_time={100 * t / total:.0f}% sm_pct_weighted={sm:.1f} mem_pct_weighted={mem:.1f} "
          f"busiest_launch_us={b[0]:.1f} busiest_sm_pct={b[1]:.1f} busiest_mem_pct={b[2]:.1f}")
PY
