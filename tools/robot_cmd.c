/* `tandem robot joints`: a robot description's active joints, the order in which a
 * configuration gives their values; `tandem robot put|list|rm`: robots stored on a
 * server (libtandem's tdm_robot_put_files, tdm_robot_list, tdm_robot_delete). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../robot/urdf.h"
#include "cli.h"
#include "remote.h"

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

static int robot_put(int argc, char **argv)
{
    const char *urdf = NULL, *srdf = NULL, *name = NULL, *server = NULL;
    const tdm_opt opts[] = {{"--urdf", &urdf}, {"--srdf", &srdf}, {"--name", &name}, {"--server", &server}};
    if (tdm_cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], "robot put") < 0) return TDM_EXIT_USAGE;
    if (!urdf) {
        tdm_cli_error("robot put: --urdf is required");
        return TDM_EXIT_USAGE;
    }
    tdm_client *c = tdm_cli_connect(tdm_cli_server(server));
    if (!c) return TDM_EXIT_FAIL;
    uint8_t id[TDM_ID_BYTES];
    int created, status = TDM_EXIT_FAIL;
    if (tdm_robot_put_files(c, name, urdf, srdf, id, &created, NULL)) {
        tdm_cli_error("robot put %s: %s", urdf, tdm_client_errstr(c));
    } else {
        char hex[TDM_ID_HEX];
        printf("%s\n", tdm_id_to_hex(id, hex));
        if (!created) tdm_cli_error("note: the server already had this robot");
        status = 0;
    }
    tdm_client_free(c);
    return status;
}

static int robot_list(int argc, char **argv)
{
    const char *server = NULL;
    const tdm_opt opts[] = {{"--server", &server}};
    if (tdm_cli_parse(argc, argv, opts, 1, "robot list") < 0) return TDM_EXIT_USAGE;
    tdm_client *c = tdm_cli_connect(tdm_cli_server(server));
    if (!c) return TDM_EXIT_FAIL;
    tdm_robot_info *list;
    size_t n;
    int status = TDM_EXIT_FAIL;
    if (tdm_robot_list(c, &list, &n)) {
        tdm_cli_error("robot list: %s", tdm_client_errstr(c));
    } else {
        char hex[TDM_ID_HEX];
        for (size_t i = 0; i < n; i++)
            printf("%s joints=%zu links=%u elements=%u scenes=%u name=%s\n", tdm_id_to_hex(list[i].robot_id, hex),
                   list[i].n_joints, list[i].n_links, list[i].n_elements, list[i].scenes, list[i].name);
        tdm_robot_info_free(list);
        status = 0;
    }
    tdm_client_free(c);
    return status;
}

static int robot_rm(int argc, char **argv)
{
    if (argc < 1 || !strncmp(argv[0], "--", 2)) {
        tdm_cli_error("robot rm: a robot ID is required");
        return TDM_EXIT_USAGE;
    }
    const char *server = NULL;
    const tdm_opt opts[] = {{"--server", &server}};
    uint8_t id[TDM_ID_BYTES];
    if (tdm_cli_parse(argc - 1, argv + 1, opts, 1, "robot rm") < 0 || tdm_cli_id("robot rm: ID", argv[0], id) < 0)
        return TDM_EXIT_USAGE;
    tdm_client *c = tdm_cli_connect(tdm_cli_server(server));
    if (!c) return TDM_EXIT_FAIL;
    int status = 0;
    if (tdm_robot_delete(c, id)) {
        tdm_cli_error("robot rm %s: %s", argv[0], tdm_client_errstr(c));
        status = TDM_EXIT_FAIL;
    }
    tdm_client_free(c);
    return status;
}

int tdm_cmd_robot(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "joints")) return robot_joints(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "put")) return robot_put(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "list")) return robot_list(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "rm")) return robot_rm(argc - 1, argv + 1);
    tdm_cli_error("robot: expected joints, put, list or rm (see tandem --help)");
    return TDM_EXIT_USAGE;
}
