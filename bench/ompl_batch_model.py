#!/usr/bin/env python3
"""What a batch of planning problems allows: replays ompl_plan's per-problem lines.

ompl_plan's planners each take the next problem from the list (an atomic counter) until
none is left; the run's wall time is when the last one finishes. Given the per-problem
lines of a run (`scenario problem solved seconds path_states checks`), this replays that
schedule for P planners, and asks what P planners would give if each solved every problem
S times faster than in the run (unsolved problems still cost their time limit).

  bench/ompl_batch_model.py [--planners P ...] [--speedup S ...] RUN.txt [REFERENCE.txt]

RUN.txt's own planner count is given first in --planners. With REFERENCE.txt (e.g. FCL's 16
planners), ratios are taken against its measured wall time (its last line's wall_s).
"""
import argparse
import heapq
import sys


def load(path):
    rows, wall = [], None
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 6 and p[1].isdigit():
                rows.append((p[2] == "1", float(p[3])))
            for w in p:
                if w.startswith("wall_s="):
                    wall = float(w[len("wall_s="):])
    return rows, wall


def replay(times, planners):
    ends = [0.0] * planners
    for t in times:
        heapq.heappush(ends, heapq.heappop(ends) + t)
    return max(ends)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--planners", type=int, action="append")
    ap.add_argument("--speedup", type=float, action="append")
    ap.add_argument("run")
    ap.add_argument("reference", nargs="?")
    a = ap.parse_args()
    planners = a.planners or [16, 64]
    speedups = a.speedup or [1.0, 1.5, 2.0, 3.0]
    rows, wall = load(a.run)
    if not rows:
        sys.exit(f"{a.run}: no per-problem lines")
    ref_wall = load(a.reference)[1] if a.reference else None
    busy = sum(t for _, t in rows)
    print(f"run={a.run} problems={len(rows)} solved={sum(ok for ok, _ in rows)} planner_s={busy:.1f} "
          f"measured_wall_s={wall} replayed_wall_s({planners[0]})={replay([t for _, t in rows], planners[0]):.3f}")
    for p in planners:
        for s in speedups:
            w = replay([t / s if ok else t for ok, t in rows], p)
            line = (f"planners={p} speedup={s:g} wall_s={w:.3f} problems_per_s={len(rows) / w:.2f} "
                    f"idle_share={1 - sum(t / s if ok else t for ok, t in rows) / (p * w):.3f}")
            if ref_wall:
                line += f" ratio_to_reference={ref_wall / w:.2f}"
            print(line)


if __name__ == "__main__":
    main()
