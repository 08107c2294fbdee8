#!/usr/bin/env python3
"""Sums up bench/run_rrt_variants.sh output (one or more files, e.g. several rounds of one call) as a
Markdown table, one row per variant and planner count, in the order the variants first appear:

    python3 bench/variants_table.py rrt_callN.txt [...]

Columns: runs; problems/s of each run and their mean; a state check and a motion check as the
planners saw them (ompl_plan's state_s / state_calls, and (check_s - state_s) / the other requests,
in ms); tandemd's own time for a motion check and for a query run by a lane (its stop's trace, ms,
mean over the runs); the express ring's configurations answered and given back (summed), when the
variant ran it. A field a run did not print is left out of its mean ("-" when no run printed it).

Below the table, each variant against the first one listed (the baseline, usually the defaults), paired
by round: its k-th run against the baseline's k-th run of the same planner count (the scripts alternate
the variants' order in each round, so a pair shares the host's state), the mean of the per-round ratios
of problems/s and a 95 % interval from a bootstrap over the pairs (seeded: the same files give the same
interval; with three or four rounds only a rough guide). An interval that holds 0 is no evidence either
way: the row moves by ~5 % between rounds on one host."""
import random
import re
import sys


def num(fields, key):
    v = fields.get(key)
    return float(v) if v is not None else None


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def fmt(x, f="%.3f"):
    return "-" if x is None else f % x


def main(paths):
    rows = {}  # (variant, planners) -> lists
    order = []
    cur = None
    for path in paths:
        with open(path, errors="replace") as fh:
            for line in fh:
                m = re.match(r"== (\S+) planners=(\d+): (.*)", line)
                if m:
                    key = (m.group(1), int(m.group(2)))
                    if key not in rows:
                        rows[key] = {"pps": [], "state": [], "motion": [], "t_motion": [], "t_lane": [],
                                     "x_ans": 0, "x_back": 0, "x_seen": False}
                        order.append(key)
                    cur = rows[key]
                    f = dict(kv.split("=", 1) for kv in m.group(3).split() if "=" in kv)
                    cur["pps"].append(num(f, "problems_per_s"))
                    sc, ss, cs, rq = (num(f, "state_calls"), num(f, "state_s"), num(f, "check_s"),
                                      num(f, "requests"))
                    cur["state"].append(1e3 * ss / sc if sc and ss is not None else None)
                    other = rq - sc if rq is not None and sc is not None else None
                    cur["motion"].append(1e3 * (cs - ss) / other
                                         if other and cs is not None and ss is not None else None)
                    continue
                if cur is None:
                    continue
                m = re.search(r"of them motion checks: \d+, ([0-9.]+) ms", line)
                if m:
                    cur["t_motion"].append(float(m.group(1)))
                m = re.search(r"of them queries run by a lane: \d+, ([0-9.]+) ms", line)
                if m:
                    cur["t_lane"].append(float(m.group(1)))
                m = re.search(r"express ring: (\d+) configurations answered, (\d+) given back", line)
                if m:
                    cur["x_ans"] += int(m.group(1))
                    cur["x_back"] += int(m.group(2))
                    cur["x_seen"] = True
    print("| variant | planners | runs | problems/s | mean | state ms (planner) | motion ms (planner) "
          "| motion ms (tandemd) | lane query ms (tandemd) | ring: answered / given back |")
    print("|---|--:|--:|---|--:|--:|--:|--:|--:|---|")
    for key in order:
        r = rows[key]
        pps = ", ".join(fmt(x, "%.2f") for x in r["pps"])
        ring = "%d / %d" % (r["x_ans"], r["x_back"]) if r["x_seen"] else "-"
        print("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            key[0], key[1], len(r["pps"]), pps, fmt(mean(r["pps"]), "%.2f"), fmt(mean(r["state"])),
            fmt(mean(r["motion"])), fmt(mean(r["t_motion"])), fmt(mean(r["t_lane"])), ring))
    paired(rows, order)


def paired(rows, order, resamples=10000):
    """Each variant against the first listed of its planner count, paired by round (see the top)."""
    lines = []
    for key in order:
        base = next(k for k in order if k[1] == key[1])
        if base == key:
            continue
        pairs = [(v, b) for v, b in zip(rows[key]["pps"], rows[base]["pps"]) if v and b]
        if not pairs:
            continue
        ratios = [v / b for v, b in pairs]
        m = sum(ratios) / len(ratios)
        rng = random.Random(1)
        means = sorted(sum(rng.choice(ratios) for _ in ratios) / len(ratios) for _ in range(resamples))
        lo, hi = means[int(0.025 * (resamples - 1))], means[int(0.975 * (resamples - 1))]
        lines.append("- %s against %s (%d planners): %+.1f %% on average over %d paired rounds, 95 %% interval "
                     "%+.1f %% to %+.1f %%%s" % (key[0], base[0], key[1], 100 * (m - 1), len(pairs),
                                                100 * (lo - 1), 100 * (hi - 1),
                                                "" if lo > 1 or hi < 1 else " (holds 0)"))
    if lines:
        print()
        print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: bench/variants_table.py RRT_OUTPUT.txt [...]")
    main(sys.argv[1:])
