#!/usr/bin/env python3
"""Random robots and worlds, answered by `tandem check` and by the FCL reference.

Point 10 of issue 13 and its "any sound URDF" rule, on robots nobody tuned for. Each round
writes a robot of its own:
  - a random tree of 2-9 links, mostly a chain; revolute, continuous, prismatic, fixed and mimic
    joints with random origins and axes;
  - links of boxes, cylinders, spheres, capsules and STL meshes, scaled per axis and mirrored
    too, named by relative, package:// and file:// paths;
  - an SRDF disabling adjacent links and the pairs that collide in nearly every configuration
    (as MoveIt's set-up assistant does), and a few more;
then a planning scene around it (boxes, spheres, cylinders, cones and inline meshes at random
poses, some in a link's frame; in a third of the rounds a plane; an allowed-collision matrix with
a few entries; a robot state giving a joint's default and, in half the rounds, an object held by a
link) and random configurations within the joint limits. Every answer of `tandem check --mode
bool` (or, with --server, of `tandem query` through a tandemd, the robot's files uploaded) is
compared with `bench_robot`'s (FCL over robot/'s model).

The rule: no configuration FCL calls colliding is called free (`missed`, must be 0). The other
way (`extra`) only where a checked pair is within what Tandem's meshes allow: FCL's distance at
most 0.1 mm per curved primitive in the pair (Tandem meshes each outside its true shape by up to
0.1 mm), plus ~1 um of rounding (bench_robot --gaps-out). An extra no pair explains counts in
`extra_far` and fails its round.

Motions: pairs of the round's configurations, checked by `tandem motions` and `bench_robot
--motions` at the resolution. Tandem's first colliding state must never come after FCL's
(`motions_late`, must be 0); before it (`motions_early`) only when that state is explained as
an extra is (else `motions_early_far`, a failure).

  python3 bench/random_robots.py --tandem build/tools/tandem --reference build/bench/bench_robot \
      [--rounds 40] [--configs 2000] [--motions 200] [--resolution 0.05] [--seed 1] [--workdir DIR]
      [--backend cpu | --server ADDR] [--parallel P]

One line per round, then the totals: `rounds=N configs=.. colliding=.. missed=M extra=..
extra_far=F motions=.. motions_colliding=.. motions_late=L motions_early=.. motions_early_far=G`.
Exit status 1 when a round fails (M, F, L or G); its files are kept (in --workdir, or a
temporary folder), the others' removed unless --workdir was given. Exit status 2 when a command
fails (a robot or world either side refuses, for one), named on stderr. --parallel P runs P rounds
at once: through tandemd, P clients whose different robots' queries and motions it pools together.
"""

import argparse
import contextlib
import functools
import math
import multiprocessing
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np


def rpy(rng):
    return rng.uniform(-math.pi, math.pi, 3)


def unit(rng):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def quat(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)  # x, y, z, w


def fmt(v):
    return " ".join(f"{x:.6g}" for x in v)


def flow(v, spec=".6g"):
    """Numbers as the items of a YAML flow sequence."""
    return ", ".join(f"{x:{spec}}" for x in v)


def sample(rng, joints, k):
    """k configurations uniform in the joints' limits."""
    lo = np.array([j[1] for j in joints])
    hi = np.array([j[2] for j in joints])
    return lo + rng.random((k, len(joints))) * (hi - lo)


def write_stl(path, rng):
    """A closed, jittered octahedron-like blob (binary STL): 6 apex vertices around the origin."""
    r = rng.uniform(0.03, 0.12, 6)
    pts = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
    pts = pts * r[:, None] + rng.normal(scale=0.01, size=(6, 3)) + rng.uniform(-0.05, 0.05, 3)
    faces = [(0, 2, 4), (2, 1, 4), (1, 3, 4), (3, 0, 4), (2, 0, 5), (1, 2, 5), (3, 1, 5), (0, 3, 5)]
    with open(path, "wb") as f:
        f.write(b"tandem random robot".ljust(80, b" "))
        f.write(struct.pack("<I", len(faces)))
        for a, b, c in faces:
            n = np.cross(pts[b] - pts[a], pts[c] - pts[a])
            n = n / (np.linalg.norm(n) or 1)
            f.write(struct.pack("<12fH", *n, *pts[a], *pts[b], *pts[c], 0))


def element(rng, folder, name):
    """One <collision> element's geometry, its STL written when it is a mesh."""
    kind = rng.choice(["box", "cylinder", "sphere", "capsule", "mesh", "mesh"])
    if kind == "box":
        geom = f'<box size="{fmt(rng.uniform(0.02, 0.2, 3))}"/>'
    elif kind == "cylinder":
        geom = f'<cylinder radius="{rng.uniform(0.01, 0.08):.6g}" length="{rng.uniform(0.02, 0.25):.6g}"/>'
    elif kind == "sphere":
        geom = f'<sphere radius="{rng.uniform(0.01, 0.1):.6g}"/>'
    elif kind == "capsule":
        geom = f'<capsule radius="{rng.uniform(0.01, 0.06):.6g}" length="{rng.uniform(0.02, 0.2):.6g}"/>'
    else:
        path = os.path.join(folder, "meshes", name + ".stl")
        write_stl(path, rng)
        filename = [f"meshes/{name}.stl", f"package://robot/meshes/{name}.stl", "file://" + path][rng.integers(3)]
        scale = rng.uniform(0.6, 1.6, 3) * rng.choice([1, 1, 1, -1], 3)
        geom = f'<mesh filename="{filename}" scale="{fmt(scale)}"/>'
    origin = f'<origin xyz="{fmt(rng.uniform(-0.08, 0.08, 3))}" rpy="{fmt(rpy(rng))}"/>'
    return f"<collision>{origin}<geometry>{geom}</geometry></collision>"


def write_robot(rng, folder):
    """URDF and SRDF in folder; returns the link names and the SRDF's disabled pairs."""
    os.makedirs(os.path.join(folder, "meshes"), exist_ok=True)
    n = int(rng.integers(2, 10))
    links = [f"l{i}" for i in range(n)]
    out = ['<?xml version="1.0"?>', '<robot name="random">']
    for i, link in enumerate(links):
        elems = "".join(element(rng, folder, f"{link}_{k}") for k in range(int(rng.integers(1, 4))))
        out.append(f'<link name="{link}">{elems}</link>')
    movers = []  # joints a mimic may follow
    adjacent = []  # (parent, child) pairs: disabled in the SRDF, as MoveIt's set-up assistant does
    for i in range(1, n):
        parent = links[i - 1 if rng.random() < 0.7 else int(rng.integers(0, i))]  # mostly a chain
        kind = rng.choice(["revolute", "revolute", "continuous", "prismatic", "fixed", "mimic"])
        if kind == "mimic" and not movers:
            kind = "revolute"
        origin = f'<origin xyz="{fmt(unit(rng) * rng.uniform(0.12, 0.35))}" rpy="{fmt(rpy(rng))}"/>'
        adjacent.append((parent, links[i]))
        body = f'<parent link="{parent}"/><child link="{links[i]}"/>{origin}<axis xyz="{fmt(unit(rng))}"/>'
        if kind == "mimic":
            src, src_kind = movers[int(rng.integers(len(movers)))]
            kind = "prismatic" if src_kind == "prismatic" and rng.random() < 0.5 else "revolute"
            body += '<limit lower="-3" upper="3" effort="1" velocity="1"/>'
            mult, offset = rng.uniform(-1.5, 1.5), rng.uniform(-0.3, 0.3)
            body += f'<mimic joint="{src}" multiplier="{mult:.6g}" offset="{offset:.6g}"/>'
        elif kind == "revolute":
            lo = rng.uniform(-2.5, 0)
            body += f'<limit lower="{lo:.6g}" upper="{lo + rng.uniform(0.5, 3):.6g}" effort="1" velocity="1"/>'
            movers.append((f"j{i}", kind))
        elif kind == "prismatic":
            lo = rng.uniform(-0.2, 0)
            body += f'<limit lower="{lo:.6g}" upper="{lo + rng.uniform(0.05, 0.3):.6g}" effort="1" velocity="1"/>'
            movers.append((f"j{i}", kind))
        elif kind == "continuous":
            movers.append((f"j{i}", kind))
        out.append(f'<joint name="j{i}" type="{kind}">{body}</joint>')
    out.append("</robot>")
    with open(os.path.join(folder, "robot.urdf"), "w") as f:
        f.write("\n".join(out) + "\n")
    pairs = {(min(a, b), max(a, b)) for a, b in adjacent}
    for _ in range(int(rng.integers(0, 3))):
        a, b = rng.choice(n, 2, replace=False)
        pairs.add((min(links[a], links[b]), max(links[a], links[b])))
    write_srdf(folder, pairs)
    return links, pairs


def write_srdf(folder, pairs, name="robot.srdf"):
    srdf = ['<?xml version="1.0"?>', '<robot name="random">']
    srdf += [f'<disable_collisions link1="{a}" link2="{b}" reason="random"/>' for a, b in sorted(pairs)]
    srdf.append("</robot>")
    with open(os.path.join(folder, name), "w") as f:
        f.write("\n".join(srdf) + "\n")


def disable_always_colliding(a, folder, links, pairs, joints, rng):
    """What MoveIt's set-up assistant does: link pairs that collide in (nearly) every sampled
    configuration are disabled too. Each pair alone (every other one disabled), empty world."""
    with open(os.path.join(folder, "empty.yaml"), "w") as f:
        f.write("world:\n  collision_objects: []\n")
    np.savetxt(os.path.join(folder, "sample.txt"), sample(rng, joints, 200), fmt="%.17g")
    every = {(min(x, y), max(x, y)) for i, x in enumerate(links) for y in links[i + 1 :]}

    def colliding(disabled):
        write_srdf(folder, disabled, "sample.srdf")
        out = run([a.tandem, "check", "--urdf", os.path.join(folder, "robot.urdf"), "--srdf",
                   os.path.join(folder, "sample.srdf"), "--world", os.path.join(folder, "empty.yaml"),
                   "--configs", os.path.join(folder, "sample.txt"), "--mode", "bool"])  # fmt: skip
        return int(out.strip().splitlines()[-1].split("colliding=")[1])

    if colliding(pairs) >= 190:  # else no pair alone collides in 190 of the 200
        for pair in sorted(every - pairs):
            if colliding(every - {pair}) >= 190:
                pairs.add(pair)
    write_srdf(folder, pairs)


def pose_yaml(rng, spread):
    p = unit(rng) * rng.uniform(0.3, 1.0) * spread  # not on the root link, which never moves
    return f"{{position: [{flow(p)}], orientation: [{flow(quat(rng), '.9g')}]}}"


def write_world(rng, folder, links, joints):
    """A planning scene: world objects around the robot, a few ACM entries, a joint default."""
    lines = ["world:", "  collision_objects:"]
    for k in range(int(rng.integers(3, 12))):
        frame = links[int(rng.integers(len(links)))] if rng.random() < 0.2 else "world"
        lines += [f"    - id: obj{k}", f"      header: {{frame_id: {frame}}}"]
        if rng.random() < 0.25:
            v = rng.uniform(-0.15, 0.15, (5, 3))
            tris = [[0, 1, 2], [0, 2, 3], [0, 3, 4], [1, 2, 4], [2, 3, 4]]
            verts = ", ".join(f"[{flow(p)}]" for p in v)
            lines += [
                f"      meshes: [{{vertices: [{verts}], triangles: {tris}}}]",
                f"      mesh_poses: [{pose_yaml(rng, 0.8)}]",
            ]
            continue
        kind = rng.choice(["box", "sphere", "cylinder", "cone"])
        dims = {
            "box": rng.uniform(0.02, 0.4, 3),
            "sphere": rng.uniform(0.02, 0.15, 1),
            "cylinder": [rng.uniform(0.02, 0.4), rng.uniform(0.01, 0.12)],
            "cone": [rng.uniform(0.02, 0.4), rng.uniform(0.01, 0.15)],
        }[kind]
        lines += [
            f"      primitives: [{{type: {kind}, dimensions: [{flow(dims)}]}}]",
            f"      primitive_poses: [{pose_yaml(rng, 0.8)}]",
        ]
    if rng.random() < 0.3:  # a plane (two-sided, as MoveIt hands it to FCL) away from the root link
        n, d = unit(rng), rng.uniform(0.25, 0.8) * rng.choice([-1, 1])
        lines += [
            "    - id: plane",
            f"      planes: [{{coef: [{n[0]:.9g}, {n[1]:.9g}, {n[2]:.9g}, {d:.6g}]}}]",
            f"      plane_poses: [{pose_yaml(rng, 0.1)}]",
        ]
    allowed = [(links[int(rng.integers(len(links)))], f"obj{int(rng.integers(3))}") for _ in range(2)]
    names = sorted({n for pair in allowed for n in pair})
    rows = []
    for a in names:
        row = ("true" if (a, b) in allowed or (b, a) in allowed else "false" for b in names)
        rows.append("    - [" + ", ".join(row) + "]")
    lines += ["allowed_collision_matrix:", f"  entry_names: [{', '.join(names)}]", "  entry_values:", *rows]
    lines.append("robot_state:")
    if joints:
        j = joints[int(rng.integers(len(joints)))]
        lines += ["  joint_state:", f"    name: [{j[0]}]", f"    position: [{(j[1] + j[2]) / 2:.6g}]"]
    if len(links) > 1 and rng.random() < 0.5:  # an object held by a link, touching it
        link = links[int(rng.integers(1, len(links)))]
        kind = rng.choice(["box", "sphere", "cylinder"])
        dims = {"box": rng.uniform(0.02, 0.12, 3), "sphere": rng.uniform(0.02, 0.06, 1),
                "cylinder": [rng.uniform(0.02, 0.15), rng.uniform(0.01, 0.05)]}[kind]  # fmt: skip
        lines += [
            "  attached_collision_objects:",
            f"    - link_name: {link}",
            f"      touch_links: [{link}]",
            "      object:",
            "        id: held",
            f"        header: {{frame_id: {link}}}",
            f"        primitives: [{{type: {kind}, dimensions: [{flow(dims)}]}}]",
            f"        primitive_poses: [{pose_yaml(rng, 0.2)}]",
        ]
    with open(os.path.join(folder, "world.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")


# What Tandem's meshes allow (workpile/solid.h): each curved primitive's mesh lies outside the
# true shape by at most its margin (0.1 mm); a solid's reach adds ~1 um of rounding slack.
MARGIN, SLACK = 1e-4, 3e-6


def unexplained(a, scene_args, folder, name):
    """How many configurations of NAME.txt (called colliding by Tandem, free by FCL) have no checked
    pair within what Tandem's meshes allow: FCL's distances by the pair's curved sides."""
    gaps = os.path.join(folder, name + "_gaps.txt")
    run([a.reference, *scene_args, "--configs", os.path.join(folder, name + ".txt"), "--mode", "bool",
         "--gaps-out", gaps])  # fmt: skip
    g = np.loadtxt(gaps, ndmin=2)
    allowed = np.array([SLACK, MARGIN + SLACK, 2 * MARGIN + SLACK])
    return int((~(g <= allowed).any(axis=1)).sum())


def ask(a, offline, served, args, folder, suffix):
    """One question (args, ending in --out) to Tandem, offline (`tandem OFFLINE`, --backend) or
    through tandemd (`tandem SERVED --server`, the scene ephemeral), and to FCL; their answers."""
    got, want = os.path.join(folder, f"tandem{suffix}.txt"), os.path.join(folder, f"fcl{suffix}.txt")
    if a.server:
        run([a.tandem, served, *args, got, "--server", a.server, "--ephemeral", "1"])
    else:
        run([a.tandem, offline, *args, got, "--backend", a.backend])
    run([a.reference, *args, want])
    return np.loadtxt(got, dtype=int, ndmin=1), np.loadtxt(want, dtype=int, ndmin=1)


class Failed(Exception):
    """A command failed: its command line and output."""


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise Failed(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return p.stdout


COUNTS = ("configs", "colliding", "missed", "extra", "extra_far", "motions", "motions_colliding", "motions_late",
          "motions_early", "motions_early_far")


def one_round(a, work, r):
    """Round r: its robot, world, configurations and motions asked of both. Returns its line, its
    counts and whether it failed; its files are removed unless it failed or --workdir was given."""
    counts = dict.fromkeys(COUNTS, 0)
    rng = np.random.default_rng([a.seed, r])
    folder = os.path.join(work, f"round{r:03d}", "robot")
    os.makedirs(folder, exist_ok=True)
    links, pairs = write_robot(rng, folder)
    urdf, srdf = os.path.join(folder, "robot.urdf"), os.path.join(folder, "robot.srdf")
    listed = run([a.tandem, "robot", "joints", "--urdf", urdf]).splitlines()
    joints = [(w[0], float(w[1]), float(w[2])) for w in (ln.split() for ln in listed)]
    if joints:
        disable_always_colliding(a, folder, links, pairs, joints, rng)
    write_world(rng, folder, links, joints)
    if not joints:  # fixed joints only: nothing moves, nothing to ask
        return f"round {r}: links={len(links)} joints=0 skipped", counts, False
    world = os.path.join(folder, "world.yaml")
    configs = os.path.join(folder, "configs.txt")
    q = sample(rng, joints, a.configs)
    np.savetxt(configs, q, fmt="%.17g")
    common = ["--urdf", urdf, "--srdf", srdf, "--world", world, "--configs", configs, "--mode", "bool", "--out"]
    t, f = ask(a, "check", "query", common, folder, "")
    missed, extra = int(((f == 1) & (t == 0)).sum()), int(((f == 0) & (t == 1)).sum())
    far = 0  # extras no checked pair explains
    if extra:
        np.savetxt(os.path.join(folder, "extra.txt"), q[(f == 0) & (t == 1)], fmt="%.17g")
        far = unexplained(a, common[:6], folder, "extra")
    counts.update(configs=len(f), colliding=int(f.sum()), missed=missed, extra=extra, extra_far=far)
    # motions between random configurations: the first colliding state, Tandem's never after FCL's
    m_late = 0
    if a.motions:
        motions = os.path.join(folder, "motions.txt")
        pick = rng.integers(0, len(q), (a.motions, 2))
        ends = np.hstack([q[pick[:, 0]], q[pick[:, 1]]])  # start, then end
        np.savetxt(motions, ends, fmt="%.17g")
        mcommon = ["--urdf", urdf, "--srdf", srdf, "--world", world, "--motions", motions, "--resolution",
                   str(a.resolution), "--out"]  # fmt: skip
        tk, fk = ask(a, "motions", "motions", mcommon, folder, "_motions")
        m_late = int(((fk >= 0) & ((tk < 0) | (tk > fk))).sum())
        early = (tk >= 0) & ((fk < 0) | (tk < fk))
        counts.update(motions=len(fk), motions_colliding=int((fk >= 0).sum()), motions_late=m_late,
                      motions_early=int(early.sum()))  # fmt: skip
        if early.any():  # the states Tandem calls colliding first, explained as extras are
            ab = ends[early]
            d = ab[:, len(joints) :] - ab[:, : len(joints)]
            n = np.maximum(2, np.ceil(np.abs(d).max(axis=1) / a.resolution) + 1)
            states = ab[:, : len(joints)] + (tk[early] / (n - 1))[:, None] * d
            np.savetxt(os.path.join(folder, "early.txt"), states, fmt="%.17g")
            counts["motions_early_far"] = unexplained(a, common[:6], folder, "early")
            m_late += counts["motions_early_far"]
    line = (f"round {r}: links={len(links)} joints={len(joints)} configs={len(f)} fcl_colliding={int(f.sum())} "
            f"missed={missed} extra={extra} extra_far={far} motions_late={m_late}")  # fmt: skip
    failed = bool(missed or far or m_late)
    if not failed and not a.workdir:
        shutil.rmtree(os.path.join(work, f"round{r:03d}"))
    return line, counts, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tandem", required=True)
    ap.add_argument("--reference", required=True, help="bench_robot (FCL)")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--configs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--server", help="ask a tandemd at this address instead (tandem query / motions --server)")
    ap.add_argument("--parallel", type=int, default=1, help="rounds at once (with --server: clients at once)")
    ap.add_argument("--motions", type=int, default=200, help="motions per round (0: none)")
    ap.add_argument("--resolution", type=float, default=0.05)
    a = ap.parse_args()
    work = a.workdir or tempfile.mkdtemp(prefix="tandem-random-robots-")
    totals = dict.fromkeys(COUNTS, 0)
    failed = []
    try:
        with multiprocessing.Pool(a.parallel) if a.parallel > 1 else contextlib.nullcontext() as pool:
            rounds = range(a.rounds)
            answers = pool.imap(functools.partial(one_round, a, work), rounds) if pool else (
                one_round(a, work, r) for r in rounds)  # fmt: skip
            for r, (line, counts, bad) in zip(rounds, answers):
                print(line, flush=True)
                for k in COUNTS:
                    totals[k] += counts[k]
                if bad:
                    failed.append(r)
    except Failed as e:
        print(e, file=sys.stderr)
        print(f"its files are in {work}", file=sys.stderr)
        return 2
    if failed:
        print(f"rounds with a miss or a far extra, kept in {work}: {failed}")
    elif not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    print(" ".join(f"{k}={v}" for k, v in [("rounds", a.rounds), *totals.items()]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
