/* `tandem robot joints`: a robot description's active joints, the order in which a
 * configuration gives their values. (put, list and rm, for robots stored on a
 * server, come with the daemon's robot store.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../robot/urdf.h"
#include "cli.h"

/* v with the fewest significant digits that read back as v (so 2.9671 prints as
 * 2.9671 and pi as 3.141592653589793). */
static void print_shortest(double v)
{
    char s[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v) break;
    }
    fputs(s, stdout);
}

static int robot_joints(int argc, char **argv)
{
    const char *urdf = NULL, *srdf = NULL;
    const tdm_opt opts[] = {{"--urdf", &urdf}, {"--srdf", &srdf}};
    if (tdm_cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], "robot joints") < 0) return TDM_EXIT_USAGE;
    if (!urdf) {
        tdm_cli_error("robot joints: --urdf is required");
        return TDM_EXIT_USAGE;
    }
    char err[1024];
    tdm_robot *r;
    if (tdm_robot_load(urdf, srdf, &r, err, sizeof err) != TDM_OK) {
        tdm_cli_error("robot joints: %s", err);
        return TDM_EXIT_FAIL;
    }
    for (uint32_t i = 0; i < r->n_active; i++) {
        const tdm_robot_joint *j = &r->joints[r->active[i]];
        fputs(j->name, stdout);
        putchar(' ');
        print_shortest(j->lower);
        putchar(' ');
        print_shortest(j->upper);
        putchar('\n');
    }
    tdm_robot_free(r);
    if (fflush(stdout) != 0) {
        tdm_cli_error("robot joints: writing the output failed");
        return TDM_EXIT_FAIL;
    }
    return 0;
}

int tdm_cmd_robot(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "joints")) return robot_joints(argc - 1, argv + 1);
    tdm_cli_error("robot: expected joints (see tandem --help)");
    return TDM_EXIT_USAGE;
}
