#!/usr/bin/env python3
"""Random robot configurations for the benchmarks: N lines of the active joints' values, each
uniform within its limits, reproducible for a seed (Python's random.Random).

    tandem robot joints --urdf URDF > joints.txt
    python3 bench/robot_configs.py joints.txt N SEED > configs.txt

joints.txt: `NAME LOWER UPPER` per line, as `tandem robot joints` prints it."""
import random
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    limits = [tuple(map(float, line.split()[1:3])) for line in open(sys.argv[1]) if line.strip()]
    rng = random.Random(int(sys.argv[3]))
    out = sys.stdout
    for _ in range(int(sys.argv[2])):
        out.write(" ".join("%.17g" % rng.uniform(lo, hi) for lo, hi in limits) + "\n")


if __name__ == "__main__":
    main()
