/* `tandem`: the command-line tool. One subcommand per file (check.c, poses_cmd.c,
 * demo.c, robot_cmd.c, motions_cmd.c, query_cmd.c, mesh_cmd.c, scene_cmd.c, stats_cmd.c); this file
 * dispatches and holds the shared option parser. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../client/tandem.h"
#include "cli.h"
#include "remote.h"

static const char usage[] =
    "usage: tandem <command> [options]    (tandem <command> --help: that command; tandem --version)\n"
    "\n"
    "commands:\n"
    "  check --env ENV --robot ROBOT --poses POSES --mode bool|contacts\n"
    "        [--threads N] [--out FILE] [--robot-origin raw|ompl] [--max-contacts M]\n"
    "        [--backend cpu|gpu|hybrid] [--gpu-traversal pairs|blocks|wide]\n"
    "      Checks the robot mesh at every pose against the environment mesh on the CPU\n"
    "      engine. The environment stays at identity; robot vertex v goes to R(q)v + t.\n"
    "      POSES has one pose per line, \"x y z qx qy qz qw\" (OMPL .path format).\n"
    "      --out writes one line per pose: 0/1 (bool) or the number of intersecting\n"
    "      (environment triangle, robot triangle) pairs (contacts). The last line on\n"
    "      stdout is \"queries=N seconds=S qps=Q colliding=C\", S timing the queries only.\n"
    "      --threads: 0 (default) uses every core. --max-contacts: pairs counted per\n"
    "      pose before it is reported truncated (default 1000000).\n"
    "      --robot-origin ompl moves the robot so the float mean of its vertices is the\n"
    "      origin, as OMPL.app does; raw (default) keeps the file's coordinates.\n"
    "      --backend: cpu (default) runs the CPU engine, gpu the GPU-resident engine,\n"
    "      hybrid the hybrid engine (CPU threads traverse, --threads of them; the GPU\n"
    "      tests the boxes and triangles). --gpu-traversal: how the GPU-resident\n"
    "      engine maps threads to node pairs: pairs (default, one thread each),\n"
    "      blocks (four threads per pair of sibling blocks, sharing the node loads)\n"
    "      or wide (a four-wide blocked hierarchy, sixteen threads per block pair).\n"
    "  check --urdf URDF [--srdf SRDF] --world SCENE.yaml --configs FILE --mode bool|contacts\n"
    "        [--threads N] [--out FILE] [--max-contacts M] [--backend cpu|gpu|hybrid]\n"
    "        [--gpu-streams S]\n"
    "      Joint-space queries: the robot's collision elements against the planning\n"
    "      scene's objects and each other (pairs the SRDF disables or the scene's\n"
    "      allowed-collision matrix allows are not checked). FILE: one configuration\n"
    "      per line, the active joints in `robot joints` order; # comments and blank\n"
    "      lines skipped. Same output as above; S timing the engine runs with their\n"
    "      forward kinematics (on the GPU with --backend gpu). --gpu-streams: the GPU\n"
    "      engine's runs in flight at once (1..8, default 2).\n"
    "  motions --urdf URDF [--srdf SRDF] --world SCENE.yaml --motions FILE --resolution R\n"
    "        [--out FILE] [--mode bool] [--threads N] [--backend cpu|gpu|hybrid] [--batch B]\n"
    "        [--gpu-streams S] [--any-state 0|1]\n"
    "      Motion checks in the same scene as check --urdf. FILE: one motion per line,\n"
    "      2J values: the start configuration, then the end (J active joints, in\n"
    "      `robot joints` order); # comments and blank lines skipped. A motion a -> b\n"
    "      is checked at n = max(2, ceil(max_j |b_j - a_j| / R) + 1) states\n"
    "      q_k = a + k/(n-1) (b - a), k = 0..n-1; a motion of more than 10^7 states is\n"
    "      an error naming its line. --out: one line per motion, -1 when every state\n"
    "      is free, else the smallest colliding k. The states are checked first to\n"
    "      last in rounds: each round, every motion still open gives its next states\n"
    "      (16 in the first round, then up to twice as many each round, as the batch\n"
    "      shared among the open motions allows), run in bool mode in batches of at\n"
    "      most B states (default 65536; the hybrid: about 1M state-pair tasks); a\n"
    "      motion is closed at its first colliding state. --any-state 1: any\n"
    "      colliding state answers a colliding motion (a planner's plain validity\n"
    "      check): 4 states of each motion are checked first, coarse to fine (the\n"
    "      end, the middle, the quarters), then the others in order; free motions\n"
    "      still answer -1.\n"
    "      The last stdout line is \"queries=N seconds=S qps=Q colliding=C\": N motions,\n"
    "      C of them colliding, S timing the engine runs with the states' forward\n"
    "      kinematics (on the GPU with --backend gpu; the hybrid's are made before).\n"
    "  poses random --cfg NAME.cfg --n N --seed S [--out FILE]\n"
    "      N poses uniform in the .cfg volume with uniformly random rotations.\n"
    "  poses path --path NAME.path --steps K [--out FILE]\n"
    "      K poses per path segment (linear in position, slerp in rotation), then the\n"
    "      last waypoint: (waypoints - 1) * K + 1 poses.\n"
    "  demo --dir DIR [--n N] [--seed S]\n"
    "      Writes a generated scene (env.obj, robot.obj, poses.txt) into DIR.\n"
    "  robot joints --urdf URDF [--srdf SRDF]\n"
    "      The robot's active joints (neither fixed nor mimic) in the order a\n"
    "      configuration gives their values: a depth-first walk from the root link,\n"
    "      a link's children in the order of their joints in the file. One line per\n"
    "      joint, \"NAME LOWER UPPER\"; a continuous joint, which has no limits,\n"
    "      prints -3.141592653589793 3.141592653589793. Collision meshes must exist:\n"
    "      package://PKG/PATH is looked for as D/PKG/PATH then D/PATH, D being the\n"
    "      URDF's folder, then each folder above it in turn; other paths are taken\n"
    "      relative to the URDF's folder. --srdf also reads and checks an SRDF.\n"
    "\n"
    "commands that talk to a tandemd server (--server ADDR: host:port, [v6]:port,\n"
    "tls://host:port or unix:/path; default $TANDEM_SERVER, else 127.0.0.1:7450; a\n"
    "server with an auth token gets it from $TANDEM_AUTH_TOKEN; over TLS, the\n"
    "server's certificate is checked against the CA file $TANDEM_TLS_CA (PEM), else\n"
    "the system's CA store):\n"
    "  query --env ENV --robot ROBOT --poses POSES --mode bool|contacts [--server ADDR]\n"
    "        [--batch N] [--connections C] [--inflight K] [--out FILE]\n"
    "        [--robot-origin raw|ompl] [--max-contacts M] [--ephemeral 0|1]\n"
    "      check, answered by the server: uploads both meshes, makes a scene (the\n"
    "      environment fixed at identity as object 0, the robot movable as object 1)\n"
    "      and streams the poses in batches of N (default 1024) over C connections\n"
    "      (default 1), K batches in flight on each (default 4). --out and the last\n"
    "      stdout line are as for check; S times the query streaming only.\n"
    "      --server A,B,C (several servers, libtandem's tdm_multi): the meshes and the\n"
    "      scene go to every server, and chunks of N*K queries per server are spread\n"
    "      over them; a server that fails has its part re-sent to another one, and is\n"
    "      retried later (--connections is then unused). --ephemeral 1: the scene is\n"
    "      put ephemeral (held in memory only, and only while this command runs);\n"
    "      the meshes (and robot) are stored as usual.\n"
    "  query --urdf URDF [--srdf SRDF] --world SCENE.yaml --configs FILE\n"
    "        --mode bool|contacts [--server ADDR] [--batch N] [--connections C]\n"
    "        [--inflight K] [--out FILE] [--max-contacts M] [--ephemeral 0|1]\n"
    "      check --urdf, answered by the server: stores the robot (its meshes, URDF and\n"
    "      SRDF, as robot put does) and the planning scene, then streams the\n"
    "      configurations as above. --out and the last stdout line are check --urdf's.\n"
    "      --server A,B,C: the robot and the scene on every server, the configurations\n"
    "      spread over them as the poses above.\n"
    "  motions --server ADDR --urdf URDF [--srdf SRDF] --world SCENE.yaml --motions FILE\n"
    "        --resolution R [--out FILE] [--ephemeral 0|1]\n"
    "      motions, answered by the server (MotionCheck: the same rounds, pooled with\n"
    "      every other client's queries). --out and the last stdout line as offline;\n"
    "      S times the requests. --server A,B,C: the robot and the scene on every\n"
    "      server, each request's motions spread over them.\n"
    "  robot put --urdf URDF [--srdf SRDF] [--name NAME] [--server ADDR]\n"
    "      Stores each collision mesh file the URDF names (found as robot joints finds\n"
    "      them), then the robot; prints the robot id. NAME defaults to <robot name>.\n"
    "  robot list [--server ADDR]\n"
    "      One line per robot: \"ID joints=J links=L elements=E scenes=S name=NAME\".\n"
    "  robot rm ID [--server ADDR]\n"
    "      Refused while a robot scene uses the robot.\n"
    "  mesh put FILE [--name NAME] [--origin raw|ompl] [--server ADDR]\n"
    "      Stores a mesh file's triangles; prints the mesh id (64 hex digits). NAME\n"
    "      defaults to the file's name.\n"
    "  mesh list [--server ADDR]\n"
    "      One line per mesh: \"ID vertices=V triangles=T scenes=S name=NAME\".\n"
    "  mesh rm ID [--server ADDR]\n"
    "  scene put (--fixed MESHID[@x,y,z,qx,qy,qz,qw] | --movable MESHID)...\n"
    "        [--allow A,B]... [--name NAME] [--server ADDR]\n"
    "      Stores a scene; prints its id. Objects are numbered 0, 1, ... in the order\n"
    "      given; a fixed object without @pose is at identity; --allow A,B never checks\n"
    "      objects A and B against each other. Query poses list the movable objects\n"
    "      in increasing id order.\n"
    "  scene list [--server ADDR]\n"
    "      One line per scene: \"ID objects=N movable=I,J,... name=NAME\".\n"
    "  scene rm ID [--server ADDR]\n"
    "  stats [--server ADDR]\n"
    "      The server's counters, one key=value per line.\n"
    "  bench load [--server ADDR[,ADDR...]] [--connections N] [--rate R] [--duration S]\n"
    "        [--batch Q] [--idle M] [--mode bool|contacts] [--inflight K] [--pool P]\n"
    "        [--env ENV --robot ROBOT] [--seed X] [--progress 0|1] [--drain D]\n"
    "        [--timeout-ms T] [--connect-burst B] [--threads L]\n"
    "      Load: N connections (default 16, spread over the addresses) send requests of\n"
    "      Q poses (default 4) at R requests/s in all (default 1000) for S seconds\n"
    "      (default 10), at most K in flight on each (default 8), on a generated scene\n"
    "      (a torus around a pillar and a sphere) or ENV and ROBOT, uploaded to each\n"
    "      server. Every answer is checked against this process's CPU engine (a pool\n"
    "      of P poses, default 4096, answered first) and every request counted once:\n"
    "      answered, failed, or missing after D seconds of draining (default 10).\n"
    "      --idle M more connections say Hello and then nothing, and must still be\n"
    "      open at the end; the file-descriptor limit is raised as far as the hard\n"
    "      limit allows (a message says so when that is too low). T: a request's\n"
    "      timeout (default 10000 ms, 0: none). At most B connections (default 128)\n"
    "      are in their handshake at once. --progress 1: a line a second on stderr.\n"
    "      --threads L (default 1): L event loops, each with its share of the\n"
    "      connections and of the rate (one loop tops out near one core's worth).\n"
    "      The last stdout line is \"requests=N answered=A errors=E mismatches=M\n"
    "      seconds=S rps=R p50_ms=.. p99_ms=.. p999_ms=..\" (errors include missing\n"
    "      answers; mismatches count requests whose answers differ); exit status 1\n"
    "      unless every request was answered right and every idle connection held.\n";

void tdm_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("tandem: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int tdm_cli_parse(int argc, char **argv, const tdm_opt *opts, size_t n_opts, const char *cmd)
{
    for (int i = 0; i < argc; i++) {
        size_t k = 0;
        while (k < n_opts && strcmp(argv[i], opts[k].name) != 0) k++;
        if (k == n_opts) {
            tdm_cli_error("%s: unknown option '%s' (see tandem --help)", cmd, argv[i]);
            return -1;
        }
        if (i + 1 >= argc) {
            tdm_cli_error("%s: option %s needs a value", cmd, argv[i]);
            return -1;
        }
        *opts[k].value = argv[++i];
    }
    return 0;
}

int tdm_cli_choice(const char *cmd, const char *opt, const char *value, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(value, names[i])) return i;
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (i + 1 < n) strncat(list, i + 2 == n ? " or " : ", ", sizeof list - strlen(list) - 1);
    }
    tdm_cli_error("%s: %s must be %s, not '%s'", cmd, opt, list, value);
    return -1;
}

int tdm_cli_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*s == '-' || *s == 0) goto bad;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi) goto bad;
    *out = v;
    return 0;
bad:
    tdm_cli_error("%s must be a whole number from %llu to %llu, not '%s'", opt, (unsigned long long)lo,
                  (unsigned long long)hi, s);
    return -1;
}

double tdm_cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int tdm_cli_report(FILE *out, const char *out_path, const uint32_t *answer, size_t n, double seconds,
                   size_t colliding, size_t truncated, uint64_t max_contacts)
{
    if (out) {
        for (size_t i = 0; i < n; i++) fprintf(out, "%u\n", answer[i]);
        if (fclose(out) != 0) {
            tdm_cli_error("writing %s failed", out_path);
            return -1;
        }
    }
    if (truncated)
        tdm_cli_error("warning: %zu poses have more than %llu contacts; their counts are truncated", truncated,
                      (unsigned long long)max_contacts);
    printf("queries=%zu seconds=%.6f qps=%.1f colliding=%zu\n", n, seconds, seconds > 0 ? (double)n / seconds : 0.0,
           colliding);
    return 0;
}

/* `tandem CMD --help`: the blocks of the usage text that describe CMD (a block
 * starts at a line indented by exactly two spaces; CMD is its first word). */
static void command_help(const char *cmd)
{
    size_t len = strlen(cmd);
    int in_block = 0, printed = 0;
    for (const char *line = usage; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
        if (n > 2 && line[0] == ' ' && line[1] == ' ' && line[2] != ' ')
            in_block = n > 2 + len && !strncmp(line + 2, cmd, len) && (line[2 + len] == ' ' || line[2 + len] == '\n');
        else if (n > 0 && line[0] != ' ')
            in_block = 0; /* a heading */
        if (in_block) {
            fwrite(line, 1, n, stdout);
            printed = 1;
        }
        line += n;
    }
    if (!printed) fputs(usage, stdout);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return TDM_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("tandem %d.%d.%d (protocol %d)\n", TANDEM_VERSION_MAJOR, TANDEM_VERSION_MINOR, TANDEM_VERSION_PATCH,
               TDM_PROTOCOL_VERSION);
        return 0;
    }
    static const struct {
        const char *name;
        int (*run)(int argc, char **argv);
    } commands[] = {{"check", tdm_cmd_check}, {"poses", tdm_cmd_poses},     {"demo", tdm_cmd_demo},
                    {"robot", tdm_cmd_robot}, {"motions", tdm_cmd_motions}, {"query", tdm_cmd_query},
                    {"mesh", tdm_cmd_mesh},   {"scene", tdm_cmd_scene},     {"stats", tdm_cmd_stats},
                    {"bench", tdm_cmd_bench}};
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
        if (strcmp(cmd, commands[c].name)) continue;
        for (int i = 2; i < argc; i++)
            if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                command_help(cmd);
                return 0;
            }
        return commands[c].run(argc - 2, argv + 2);
    }
    tdm_cli_error("unknown command '%s'", cmd);
    fputs(usage, stderr);
    return TDM_EXIT_USAGE;
}
