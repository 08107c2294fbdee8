#!/usr/bin/env bash
# Two builds on the same host and the same poses, alternately: `tandem check` on every backend and
# tandemd under load (bench/run_server.sh), best queries/s of each, their ratio, and whether the
# answers are bit-identical. For "speed not lower": run both builds in one device call.
# Prints a Markdown report; with an argument, also writes it to that file.
#
#   BEFORE=PACK AFTER=PACK bench/compare_builds.sh [REPORT.md]
#
# PACK: a folder made by bench/device_pack.sh (PACK/bin, PACK/lib; its executables run with
# LD_LIBRARY_PATH=PACK/lib), or that folder as an archive (ARCHIVE=1 device_pack.sh: PACK.tar.gz),
# unpacked into a temporary folder first.
# Knobs from the environment:
#   OMPL (../shared/scenes/ompl: S.cfg and canonical/S.{env,robot}.obj for each scene S)
#   N_POSES (100000: random poses per scene, `tandem poses random --seed 1` of BEFORE's build)
#   CPU_POSES (20000: the CPU backend checks the first CPU_POSES of them; Apartment contacts runs at
#     ~9 000 q/s on 16 threads)
#   THREADS ($(nproc)), REPEAT (2: runs of each build, alternately BEFORE, AFTER, BEFORE, ...; the
#     best queries/s of each is kept), GPU_REPEAT (5: the same for --backend gpu, whose 100 000 poses
#     take milliseconds)
#   PART (all: check, server or all), SCENES ("alpha-1.5 Apartment cubicles"), MODES ("bool contacts"),
#   BACKENDS ("cpu hybrid gpu": `tandem check --backend`)
#   part server (bench/run_server.sh, one row): CLIENTS (64) clients x BATCH (1024) poses per
#     request, 2 requests in flight each, for DURATION (3) s, tandemd --engine ENGINE (auto) --threads
#     THREADS, over TCP, N_POSES poses from each build's own `tandem poses random --seed 1` (checked
#     to equal BEFORE's)
# Answers: each `tandem check --out` of AFTER must equal BEFORE's line for line ("same", else the
# number of lines that differ); a build's repeats must equal its first run; AFTER's hybrid and gpu
# answers must equal AFTER's cpu ones on the poses both ran. tandemd's answers are not compared here.
# Exit status: 0 when every run worked and every answer is the same, 1 otherwise, 2 usage.
# Relative paths (BEFORE, AFTER, OMPL, REPORT.md) are taken from the folder it is started in.
set -euo pipefail
out_file=${1:-}
if [[ -z ${BEFORE:-} || -z ${AFTER:-} ]]; then
    echo "usage: BEFORE=PACK AFTER=PACK [OMPL=DIR] [N_POSES=N] [CPU_POSES=N] [THREADS=N] [REPEAT=N] [GPU_REPEAT=N] [PART=check|server|all]" >&2
    echo "       [SCENES=...] [MODES=...] [BACKENDS=...] [ENGINE=...] [CLIENTS=N] [BATCH=N] [DURATION=S] bench/compare_builds.sh [REPORT.md]" >&2
    exit 2
fi
OMPL=${OMPL:-../shared/scenes/ompl}
N_POSES=${N_POSES:-100000}
CPU_POSES=${CPU_POSES:-20000}
THREADS=${THREADS:-$(nproc)}
REPEAT=${REPEAT:-2}
GPU_REPEAT=${GPU_REPEAT:-5}
PART=${PART:-all}
SCENES=${SCENES:-alpha-1.5 Apartment cubicles}
MODES=${MODES:-bool contacts}
BACKENDS=${BACKENDS:-cpu hybrid gpu}
ENGINE=${ENGINE:-auto}
CLIENTS=${CLIENTS:-64}
BATCH=${BATCH:-1024}
DURATION=${DURATION:-3}
abs() { if [[ $1 == /* ]]; then echo "$1"; else echo "$PWD/$1"; fi; }
before_src=$(abs "$BEFORE") after_src=$(abs "$AFTER") ompl_src=$(abs "$OMPL") out_path=${out_file:+$(abs "$out_file")}
cd "$(dirname "$0")/.."
case $PART in check | server | all) ;; *) echo "compare_builds.sh: PART is check, server or all" >&2; exit 2 ;; esac
do_check=0 do_server=0
[[ $PART == check || $PART == all ]] && do_check=1
[[ $PART == server || $PART == all ]] && do_server=1

command_line="BEFORE=$BEFORE AFTER=$AFTER OMPL=$OMPL N_POSES=$N_POSES"
((do_check)) && command_line+=" CPU_POSES=$CPU_POSES"
command_line+=" THREADS=$THREADS REPEAT=$REPEAT"
((do_check)) && command_line+=" GPU_REPEAT=$GPU_REPEAT"
command_line+=" PART=$PART SCENES=\"$SCENES\" MODES=\"$MODES\""
((do_check)) && command_line+=" BACKENDS=\"$BACKENDS\""
((do_server)) && command_line+=" ENGINE=$ENGINE CLIENTS=$CLIENTS BATCH=$BATCH DURATION=$DURATION"
command_line+=" bench/compare_builds.sh${out_file:+ $out_file}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
t_start=$(date +%s)

# A pack's folder, absolute; an archive is unpacked under $work first.
unpack() {
    local src=$1 name=$2 dir
    if [[ -d $src ]]; then
        dir=$(cd "$src" && pwd)
    elif [[ -f $src ]]; then
        dir=$work/$name
        mkdir -p "$dir"
        # GNU tar needs gzip for .tar.gz; python3's tarfile does without
        tar xf "$src" -C "$dir" 2>/dev/null ||
            python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$src" "$dir"
    else
        echo "compare_builds.sh: $name pack $src does not exist" >&2
        exit 2
    fi
    if [[ -f $dir/bin/tandem && ! -x $dir/bin/tandem ]]; then
        # a copy that lost the executable bits
        mkdir -p "$work/$name"
        cp -r "$dir/." "$work/$name/"
        dir=$work/$name
        chmod +x "$dir"/bin/*
    fi
    if [[ ! -x $dir/bin/tandem ]]; then
        echo "compare_builds.sh: $src has no bin/tandem: not a pack made by bench/device_pack.sh" >&2
        exit 2
    fi
    echo "$dir"
}
declare -A pack=()
pack[before]=$(unpack "$before_src" before)
pack[after]=$(unpack "$after_src" after)
ompl=$(cd "$ompl_src" 2>/dev/null && pwd) || { echo "compare_builds.sh: OMPL=$OMPL is not a folder" >&2; exit 2; }
info() { sed -n "s/^$2=//p" "${pack[$1]}/PACK_INFO" 2>/dev/null | head -1; }

# run SIDE EXE ARGS...: a packed executable with its own libraries (and nothing else given them)
run() {
    local side=$1 exe=$2
    shift 2
    LD_LIBRARY_PATH=${pack[$side]}/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "${pack[$side]}/bin/$exe" "$@"
}
qps_of() { sed -n 's/.* qps=\([0-9.]*\).*/\1/p; s/^qps=\([0-9.]*\).*/\1/p' <<<"$1" | head -1; }
max() { awk -v a="$1" -v b="$2" 'BEGIN { print (b + 0 > a + 0 ? b : a) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", b / a; else print "-" }'; }
fmt() { awk -v a="$1" 'BEGIN { if (a > 0) printf "%.0f", a; else print "failed" }'; }

raw=""
bad=0          # answers that differ, runs that failed
check_rows=() server_rows=()
worst=""       # lowest after/before: "ratio what"
note_ratio() {
    local r=$1 what=$2
    [[ $r == - ]] && return
    if [[ -z $worst ]] || awk -v a="$r" -v b="${worst%% *}" 'BEGIN { exit !(a < b) }'; then worst="$r $what"; fi
}

# Both builds must start on this host (missing libraries, too old a glibc: say so once, here).
for side in before after; do
    if ! msg=$(run "$side" tandem 2>&1 >/dev/null) && grep -qiE 'error while loading|not found|GLIBC' <<<"$msg"; then
        echo "compare_builds.sh: ${side^^}'s tandem does not start here: $msg" >&2
        exit 1
    fi
done

# The poses of a scene: BEFORE's generator; AFTER's must give the same file.
declare -A poses_note=()
make_poses() {
    local s=$1
    [[ -f $work/$s.poses ]] && return 0
    if ! run before tandem poses random --cfg "$ompl/$s.cfg" --n "$N_POSES" --seed 1 --out "$work/$s.poses" \
        >/dev/null 2>"$work/err"; then
        raw+="$s: BEFORE's tandem poses random FAILED: $(tail -3 "$work/err")"$'\n'
        return 1
    fi
    if run after tandem poses random --cfg "$ompl/$s.cfg" --n "$N_POSES" --seed 1 --out "$work/$s.poses.after" \
        >/dev/null 2>"$work/err" && cmp -s "$work/$s.poses" "$work/$s.poses.after"; then
        poses_note[$s]=same
    else
        poses_note[$s]="AFTER's differ ($(paste -d'|' "$work/$s.poses" "$work/$s.poses.after" 2>/dev/null | awk -F'|' '$1 != $2' | wc -l) lines)"
    fi
    raw+="$s: $N_POSES poses (seed 1); AFTER's tandem poses random gives the same file: ${poses_note[$s]}"$'\n'
    head -n "$CPU_POSES" "$work/$s.poses" >"$work/$s.cpu.poses"
}

scene_ok() {
    local s=$1 f
    for f in "$ompl/$s.cfg" "$ompl/canonical/$s.env.obj" "$ompl/canonical/$s.robot.obj"; do
        if [[ ! -f $f ]]; then
            raw+="$s: SKIPPED: $f is missing"$'\n'
            bad=1
            return 1
        fi
    done
}

# ---- part check: tandem check, every backend ----
t0=$(date +%s)
if ((do_check)); then
    for s in $SCENES; do
        scene_ok "$s" || continue
        make_poses "$s" || { bad=1; continue; }
        for mode in $MODES; do
            for backend in $BACKENDS; do
                poses=$work/$s.poses
                [[ $backend == cpu ]] && poses=$work/$s.cpu.poses
                n=$(wc -l <"$poses")
                reps=$REPEAT
                [[ $backend == gpu ]] && reps=$GPU_REPEAT
                echo "compare_builds.sh: $(($(date +%s) - t_start)) s: check $s $mode $backend ($n poses, $reps runs each)" >&2
                declare -A best=([before]=0 [after]=0) failed=([before]=0 [after]=0)
                for ((r = 1; r <= reps; r++)); do
                    for side in before after; do
                        o=$work/$side.$r.out
                        if ! run "$side" tandem check --env "$ompl/canonical/$s.env.obj" --robot "$ompl/canonical/$s.robot.obj" \
                            --poses "$poses" --mode "$mode" --backend "$backend" --threads "$THREADS" --out "$o" \
                            >"$work/stdout" 2>"$work/err"; then
                            raw+="$s $mode $backend ${side^^} run $r: FAILED: $(tail -3 "$work/err" | tr '\n' ' ')"$'\n'
                            failed[$side]=1
                            continue
                        fi
                        line=$(tail -1 "$work/stdout")
                        raw+="$s $mode $backend ${side^^} run $r: $line"$'\n'
                        v=$(qps_of "$line")
                        [[ -n $v ]] && best[$side]=$(max "${best[$side]}" "$v")
                        if ((r > 1)) && [[ -f $work/$side.1.out ]] && ! cmp -s "$work/$side.1.out" "$o"; then
                            raw+="## $s $mode $backend: ${side^^} run $r answered differently from its run 1"$'\n'
                            bad=1
                        fi
                    done
                done
                if ((failed[before] || failed[after])) || [[ ! -f $work/before.1.out || ! -f $work/after.1.out ]]; then
                    answers="run failed"
                    bad=1
                else
                    d=$(paste -d' ' "$work/before.1.out" "$work/after.1.out" | awk '$1 != $2' | wc -l)
                    nb=$(wc -l <"$work/before.1.out") na=$(wc -l <"$work/after.1.out")
                    if ((d == 0 && nb == n && na == n)); then
                        answers=same
                    else
                        answers="$d of $n differ"
                        ((nb != n || na != n)) && answers+=" (lines: before $nb, after $na)"
                        bad=1
                        raw+="## $s $mode $backend: BEFORE and AFTER differ on $d poses; the first:"$'\n'
                        raw+="$(paste -d' ' "$work/before.1.out" "$work/after.1.out" | awk '$1 != $2 { print "  pose " NR - 1 ": before " $1 ", after " $2 }' | head -10)"$'\n'
                    fi
                    # AFTER's engines against each other, on the poses both ran
                    if [[ $backend == cpu ]]; then
                        cp "$work/after.1.out" "$work/$s.$mode.cpu.after"
                    elif [[ -f $work/$s.$mode.cpu.after ]]; then
                        m=$(wc -l <"$work/$s.$mode.cpu.after")
                        dc=$(head -n "$m" "$work/after.1.out" | paste -d' ' "$work/$s.$mode.cpu.after" - | awk '$1 != $2' | wc -l)
                        if ((dc > 0)); then
                            answers+="; AFTER's $backend differs from its cpu on $dc of $m"
                            bad=1
                        fi
                    fi
                fi
                r_ab=$(ratio "${best[before]}" "${best[after]}")
                note_ratio "$r_ab" "check $s $mode $backend"
                check_rows+=("| $s | $mode | $backend | $(fmt "${best[before]}") | $(fmt "${best[after]}") | $r_ab | $answers |")
                rm -f "$work"/before.*.out "$work"/after.*.out
                unset best failed
            done
        done
    done
fi
t_check=$(($(date +%s) - t0))

# ---- part server: tandemd under load, through bench/run_server.sh ----
# run_server.sh wants a build tree: a fake one per build, of wrappers that give each packed
# executable its own libraries (LD_LIBRARY_PATH for them alone, not for run_server's shell tools).
t0=$(date +%s)
if ((do_server)); then
    for side in before after; do
        for rel in tools/tandem daemon/tandemd bench/bench_server; do
            exe=${pack[$side]}/bin/$(basename "$rel")
            if [[ ! -x $exe ]]; then
                echo "compare_builds.sh: ${side^^} has no $(basename "$rel"); part server needs tandem, tandemd and bench_server" >&2
                exit 1
            fi
            mkdir -p "$work/tree-$side/$(dirname "$rel")"
            printf '#!/bin/sh\nLD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\nexport LD_LIBRARY_PATH\nexec %q "$@"\n' \
                "${pack[$side]}/lib" "$exe" >"$work/tree-$side/$rel"
            chmod +x "$work/tree-$side/$rel"
        done
    done
    for s in $SCENES; do
        scene_ok "$s" || continue
        make_poses "$s" || { bad=1; continue; }
        for mode in $MODES; do
            echo "compare_builds.sh: $(($(date +%s) - t_start)) s: server $s $mode ($CLIENTS clients x $BATCH)" >&2
            declare -A best=([before]=0 [after]=0)
            for ((r = 1; r <= REPEAT; r++)); do
                for side in before after; do
                    if ! BUILD_DIR=$work/tree-$side SCENE=$s MODE=$mode N_POSES=$N_POSES CLIENTS=$CLIENTS BATCHES=$BATCH \
                        DURATION=$DURATION THREADS=$THREADS ENGINE=$ENGINE SOCKET=tcp PROFILE_THREADS=0 INFLIGHT=2 \
                        TANDEMD_ARGS="" OMPL=$ompl COMMIT="$(info "$side" commit | cut -d' ' -f1)" \
                        bench/run_server.sh >"$work/srv.out" 2>"$work/srv.err"; then
                        raw+="server $s $mode ${side^^} run $r: FAILED: $(tail -5 "$work/srv.err" | tr '\n' ' ')"$'\n'
                        bad=1
                        continue
                    fi
                    line=$(grep -m1 '^RESULT' "$work/srv.err" || true)
                    raw+="server $s $mode ${side^^} run $r: ${line:-no RESULT line} | $(grep -m1 'engine alone' "$work/srv.err" | sed 's/^bench_server: //' || true)"$'\n'
                    if [[ -z $line || $line == *FAILED* ]]; then
                        bad=1
                        raw+="$(grep -v '^RESULT' "$work/srv.err" | tail -5)"$'\n'
                        continue
                    fi
                    v=$(qps_of "$line")
                    [[ -n $v ]] && best[$side]=$(max "${best[$side]}" "$v")
                    if ((r == 1)); then
                        # which engines answered: tandem stats after the run, its main lines
                        raw+="  ${side^^} stats: $(sed -n '/^Server stats/,$p' "$work/srv.out" |
                            grep -E '^(engine|engine_detail|batches|mean_batch_queries|cpu_queries|gpu_queries|hybrid_queries|dispatch_threshold)=' |
                            paste -sd' ')"$'\n'
                    fi
                done
            done
            r_ab=$(ratio "${best[before]}" "${best[after]}")
            note_ratio "$r_ab" "server $s $mode"
            answers="not compared (poses: ${poses_note[$s]:-?})"
            [[ ${poses_note[$s]:-} != same ]] && bad=1
            server_rows+=("| $s | $mode | tandemd --engine $ENGINE, $CLIENTS × $BATCH | $(fmt "${best[before]}") | $(fmt "${best[after]}") | $r_ab | $answers |")
            unset best
        done
    done
fi
t_server=$(($(date +%s) - t0))

report() {
    local cpu gpu
    cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //' || echo unknown)
    gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
    echo "# Previous build against this one, same host, same poses"
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $cpu, nproc $(nproc); GPU: ${gpu:-none found}; $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}"), $(getconf GNU_LIBC_VERSION 2>/dev/null || echo "glibc ?")"
    echo "- Command: \`$command_line\`"
    local side
    for side in before after; do
        echo "- ${side^^}: $([[ $side == before ]] && echo "$BEFORE" || echo "$AFTER"): commit $(info "$side" commit | cut -d' ' -f1)," \
             "$(info "$side" build_type), CUDA $(info "$side" cuda), packed $(info "$side" packed | cut -d' ' -f1-3) from $(info "$side" build_dir)"
    done
    echo "- Poses: per scene, $N_POSES random poses (\`tandem poses random --cfg \$OMPL/S.cfg --n $N_POSES --seed 1\`, BEFORE's build)$(
        ((do_check)) && echo "; the CPU backend checks the first $CPU_POSES of them")."
    echo "  Each figure is the best of $REPEAT run(s)$( ((do_check)) && echo " ($GPU_REPEAT for --backend gpu)"), the two builds alternately (BEFORE, AFTER, BEFORE, ...); after/before > 1: faster."
    local walls=()
    ((do_check)) && walls+=("part check ${t_check} s")
    ((do_server)) && walls+=("part server ${t_server} s")
    echo "- Wall time: $(printf '%s, ' "${walls[@]}" | sed 's/, $//')."
    if ((do_check)); then
        echo
        echo "## \`tandem check\`"
        echo
        echo "\`tandem check --env \$OMPL/canonical/S.env.obj --robot \$OMPL/canonical/S.robot.obj --poses P --mode M --backend B"
        echo "--threads $THREADS --out F\`; queries/s from its last line (engine runs only). Answers: AFTER's \`--out\` against BEFORE's."
        echo
        echo "| scene | mode | backend | before q/s | after q/s | after/before | answers |"
        echo "|---|---|---|--:|--:|--:|---|"
        printf '%s\n' "${check_rows[@]}"
    fi
    if ((do_server)); then
        echo
        echo "## tandemd"
        echo
        echo "\`BUILD_DIR=(the pack) SCENE=S MODE=M N_POSES=$N_POSES CLIENTS=$CLIENTS BATCHES=$BATCH DURATION=$DURATION THREADS=$THREADS"
        echo "ENGINE=$ENGINE SOCKET=tcp OMPL=\$OMPL bench/run_server.sh\`: $CLIENTS client threads, each on its own connection with"
        echo "2 requests of $BATCH poses in flight, for $DURATION s; queries/s from bench_server's RESULT line. Each build runs its own"
        echo "tandemd, bench_server (client library) and pose generator."
        echo
        echo "| scene | mode | backend | before q/s | after q/s | after/before | answers |"
        echo "|---|---|---|--:|--:|--:|---|"
        printf '%s\n' "${server_rows[@]}"
    fi
    echo
    if ((bad)); then
        echo "**Result: some answers differ or some runs failed (see the tables and the raw output).**"
    else
        echo "Result: every answer the same."
    fi
    [[ -n $worst ]] && echo "Lowest after/before: ${worst%% *} (${worst#* })."
    echo
    echo "<details><summary>Raw output</summary>"
    echo
    echo '```'
    printf '%s' "$raw"
    echo '```'
    echo "</details>"
}

if [[ -n $out_file ]]; then report | tee "$out_path"; else report; fi
exit "$bad"
