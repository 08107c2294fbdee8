#!/usr/bin/env python3
"""Pools bench/run_goal_rounds.sh reports, one report per host (a device call on a fresh machine), into
one Markdown summary of issue 13's many-planner goal:

    python3 bench/goal_stats.py [--goal 4] [--resamples 20000] [--seed 1] REPORT.md[,REPORT.md...] [...]

For each report: its rounds, the FCL and Tandem rows' ranges (problems/s), its ratios' least, median and
largest. Over all of them: the rounds' median ratio, how many rounds reach the goal, the hosts' medians
and their median, and a 95 % interval for the median ratio from a two-level bootstrap (hosts drawn with
replacement, then each drawn host's rounds drawn with replacement), since the rounds of one host are not
independent of each other: a host's FCL speed moves all its rounds together. Reads only the rounds'
table rows ("| round | order | FCL ... | Tandem ... | ratio× |"); a report without any is an error. Where the
rows say how many problems each side solved, a last line reads the same rounds as solved problems per
second, for comparison only (the goal counts every problem over the wall time). Reports
joined by commas are one host's (several calls on one machine, not given back between them)."""
import argparse
import random
import re
import statistics
import sys

ROW = re.compile(r"^\|\s*(\d+)\s*\|[^|]*\|\s*([0-9.]+)\s*\([^|]*\|\s*([0-9.]+)\s*\([^|]*\|\s*([0-9.]+)×\s*\|\s*$")
SOLVED = re.compile(r"\((\d+) of (\d+) solved\)")


def read_report(path):
    rounds = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line.strip())
            if m:
                solved = SOLVED.findall(line)
                share = (int(solved[0][0]) / int(solved[0][1]), int(solved[1][0]) / int(solved[1][1])) \
                    if len(solved) == 2 and int(solved[0][1]) and int(solved[1][1]) else None
                rounds.append((float(m.group(2)), float(m.group(3)), float(m.group(4)), share))
    if not rounds:
        raise ValueError(f"{path}: no rounds (rows of bench/run_goal_rounds.sh's table) found")
    return rounds


def bootstrap_median(hosts, resamples, rng):
    """The 2.5th and 97.5th percentiles of the median ratio over two-level resamples."""
    meds = []
    for _ in range(resamples):
        drawn = [hosts[rng.randrange(len(hosts))] for _ in hosts]
        sample = [h[rng.randrange(len(h))] for h in drawn for _ in h]
        meds.append(statistics.median(sample))
    meds.sort()
    return meds[int(0.025 * (resamples - 1))], meds[int(0.975 * (resamples - 1))]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--goal", type=float, default=4.0, help="the ratio the goal asks for (default 4)")
    ap.add_argument("--resamples", type=int, default=20000, help="bootstrap resamples (default 20000)")
    ap.add_argument("--seed", type=int, default=1, help="the bootstrap's random seed (default 1)")
    ap.add_argument("reports", nargs="+", help="bench/run_goal_rounds.sh reports, one host each (A.md,B.md: one host's)")
    a = ap.parse_args(argv)
    if a.resamples < 100:
        ap.error("--resamples must be at least 100")
    try:
        reports = [(arg, [r for p in arg.split(",") for r in read_report(p)]) for arg in a.reports]
    except (OSError, ValueError) as e:
        print(f"goal_stats.py: {e}", file=sys.stderr)
        return 1

    print("| report | rounds | FCL (problems/s) | Tandem (problems/s) | ratio, least to largest | median |")
    print("|---|--:|---|---|---|--:|")
    hosts = []
    for path, rounds in reports:
        fcl = [r[0] for r in rounds]
        tdm = [r[1] for r in rounds]
        ratio = [r[2] for r in rounds]
        hosts.append(ratio)
        name = " + ".join(p.rsplit("/", 1)[-1] for p in path.split(","))
        print(f"| {name} | {len(rounds)} | {min(fcl):.1f}-{max(fcl):.1f} | {min(tdm):.1f}-{max(tdm):.1f} | "
              f"{min(ratio):.2f}-{max(ratio):.2f}× | {statistics.median(ratio):.2f}× |")
    every = [x for h in hosts for x in h]
    host_medians = [statistics.median(h) for h in hosts]
    lo, hi = bootstrap_median(hosts, a.resamples, random.Random(a.seed))
    reach = sum(x >= a.goal for x in every)
    hosts_reach = sum(m >= a.goal for m in host_medians)
    print()
    print(f"- Rounds: {len(every)} on {len(hosts)} hosts; median ratio **{statistics.median(every):.2f}×**; "
          f"{reach} of {len(every)} rounds at {a.goal:g}× or more (least {min(every):.2f}×, largest {max(every):.2f}×).")
    print(f"- Hosts' medians: {', '.join(f'{m:.2f}' for m in host_medians)}; their median "
          f"{statistics.median(host_medians):.2f}×; {hosts_reach} of {len(hosts)} hosts at {a.goal:g}× or more.")
    print(f"- The median ratio's 95 % interval (two-level bootstrap, hosts then rounds, {a.resamples} resamples, "
          f"seed {a.seed}): {lo:.2f}-{hi:.2f}×: "
          + (f"above {a.goal:g}×." if lo >= a.goal else
             f"below {a.goal:g}×." if hi < a.goal else f"it contains {a.goal:g}×: the goal is neither met nor missed "
             "beyond the spread of hosts and rounds."))
    # the same rounds read as solved problems per second (each row's rate times its solved share):
    # not the goal's measure (every problem over the wall time), printed for comparison only
    solved = [r[1] * r[3][1] / (r[0] * r[3][0]) for _, rounds in reports for r in rounds if r[3] and r[3][0] > 0]
    if solved:
        print(f"- Not the goal's measure, for comparison: read as solved problems per second, {len(solved)} rounds "
              f"give a median of {statistics.median(solved):.2f}×, {sum(x >= a.goal for x in solved)} of them at "
              f"{a.goal:g}× or more.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
