/* `tandem mesh put|list|rm`: meshes stored on a server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "io.h"
#include "remote.h"

static int mesh_put(int argc, char **argv)
{
    if (argc < 1 || !strncmp(argv[0], "--", 2)) {
        tdm_cli_error("mesh put: a mesh FILE is required");
        return TDM_EXIT_USAGE;
    }
    const char *path = argv[0], *name = NULL, *server = NULL, *origin_s = "raw";
    const tdm_opt opts[] = {{"--name", &name}, {"--server", &server}, {"--origin", &origin_s}};
    if (tdm_cli_parse(argc - 1, argv + 1, opts, sizeof opts / sizeof opts[0], "mesh put") < 0) return TDM_EXIT_USAGE;
    tdm_origin origin;
    if (!strcmp(origin_s, "raw")) origin = TDM_ORIGIN_RAW;
    else if (!strcmp(origin_s, "ompl")) origin = TDM_ORIGIN_OMPL;
    else {
        tdm_cli_error("mesh put: --origin must be raw or ompl, not '%s'", origin_s);
        return TDM_EXIT_USAGE;
    }
    if (!name) {
        const char *base = strrchr(path, '/');
        name = base ? base + 1 : path;
    }
    char err[512];
    tdm_mesh *m;
    if (tdm_mesh_load_file(path, origin, &m, err, sizeof err) != TDM_OK) {
        tdm_cli_error("mesh put: %s", err);
        return TDM_EXIT_FAIL;
    }
    tdm_client *c = tdm_cli_connect(tdm_cli_server(server));
    if (!c) {
        tdm_mesh_free(m);
        return TDM_EXIT_FAIL;
    }
    uint8_t id[TDM_ID_BYTES];
    int created, status = TDM_EXIT_FAIL;
    if (tdm_mesh_put(c, name, m->verts, m->n_verts, m->tris, m->n_tris, id, &created)) {
        tdm_cli_error("mesh put %s: %s", path, tdm_client_errstr(c));
    } else {
        char hex[TDM_ID_HEX];
        printf("%s\n", tdm_id_to_hex(id, hex));
        if (!created) tdm_cli_error("note: the server already had this mesh");
        status = 0;
    }
    tdm_client_free(c);
    tdm_mesh_free(m);
    return status;
}

static int mesh_list(int argc, char **argv)
{
    const char *server = NULL;
    const tdm_opt opts[] = {{"--server", &server}};
    if (tdm_cli_parse(argc, argv, opts, 1, "mesh list") < 0) return TDM_EXIT_USAGE;
    tdm_client *c = tdm_cli_connect(tdm_cli_server(server));
    if (!c) return TDM_EXIT_FAIL;
    tdm_mesh_info *list;
    size_t n;
    int status = TDM_EXIT_FAIL;
    if (tdm_mesh_list(c, &list, &n)) {
        tdm_cli_error("mesh list: %s", tdm_client_errstr(c));
    } else {
        char hex[TDM_ID_HEX];
        for (size_t i = 0; i < n; i++)
            printf("%s vertices=%u triangles=%u scenes=%u name=%s\n", tdm_id_to_hex(list[i].mesh_id, hex),
                   list[i].n_vertices, list[i].n_triangles, list[i].scenes, list[i].name);
        tdm_mesh_list_free(list);
        status = 0;
    }
    tdm_client_free(c);
    return status;
}

static int mesh_rm(int argc, char **argv)
{
    if (argc < 1 || !strncmp(argv[0], "--", 2)) {
        tdm_cli_error("mesh rm: a mesh ID is required");
        return TDM_EXIT_USAGE;
    }
    const char *server = NULL;
    const tdm_opt opts[] = {{"--server", &server}};
    uint8_t id[TDM_ID_BYTES];
    if (tdm_cli_parse(argc - 1, argv + 1, opts, 1, "mesh rm") < 0 || tdm_cli_id("mesh rm: ID", argv[0], id) < 0)
        return TDM_EXIT_USAGE;
    tdm_client *c = tdm_cli_connect(tdm_cli_server(server));
    if (!c) return TDM_EXIT_FAIL;
    int status = 0;
    if (tdm_mesh_delete(c, id)) {
        tdm_cli_error("mesh rm %s: %s", argv[0], tdm_client_errstr(c));
        status = TDM_EXIT_FAIL;
    }
    tdm_client_free(c);
    return status;
}

int tdm_cmd_mesh(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "put")) return mesh_put(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "list")) return mesh_list(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "rm")) return mesh_rm(argc - 1, argv + 1);
    tdm_cli_error("mesh: expected put, list or rm (see tandem --help)");
    return TDM_EXIT_USAGE;
}
