#!/usr/bin/env python3
"""Writes a UV sphere of about N triangles as an OBJ file: a large mesh for benchmarks that put and
delete meshes (bench/run_rrt_variants.sh's CHURN).

    python3 bench/sphere_obj.py N RADIUS OUT.obj
"""
import math
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    n, radius, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    # nu segments around, nv rings: 2 nu (nv - 1) triangles
    nv = max(3, int(math.sqrt(n / 4)))
    nu = max(3, n // (2 * (nv - 1)))
    with open(out, "w") as f:
        f.write("v 0 0 %.9g\n" % radius)
        for i in range(1, nv):
            th = math.pi * i / nv
            for j in range(nu):
                ph = 2 * math.pi * j / nu
                f.write("v %.9g %.9g %.9g\n" % (radius * math.sin(th) * math.cos(ph),
                                                radius * math.sin(th) * math.sin(ph), radius * math.cos(th)))
        f.write("v 0 0 %.9g\n" % -radius)
        bottom = 2 + (nv - 1) * nu  # OBJ indices from 1

        def ring(i, j):
            return 2 + (i - 1) * nu + j % nu

        for j in range(nu):
            f.write("f 1 %d %d\n" % (ring(1, j), ring(1, j + 1)))
        for i in range(1, nv - 1):
            for j in range(nu):
                a, b, c, d = ring(i, j), ring(i, j + 1), ring(i + 1, j), ring(i + 1, j + 1)
                f.write("f %d %d %d\nf %d %d %d\n" % (a, c, b, b, c, d))
        for j in range(nu):
            f.write("f %d %d %d\n" % (bottom, ring(nv - 1, j + 1), ring(nv - 1, j)))
    print("%s: %d triangles" % (out, 2 * nu * (nv - 1)))


if __name__ == "__main__":
    main()
