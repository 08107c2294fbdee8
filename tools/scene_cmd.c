/* `tandem scene put|list|rm`: scenes stored on a server.
 *
 *   tandem scene put (--fixed MESHID[@x,y,z,qx,qy,qz,qw] | --movable MESHID)... [--allow A,B]...
 *                    [--name NAME] [--server ADDR]
 *
 * Objects get ids 0, 1, 2... in the order they are given; --allow names two of those ids. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "remote.h"

/* "MESHID" or "MESHID@x,y,z,qx,qy,qz,qw". */
static int parse_fixed(const char *s, tdm_scene_object *o)
{
    char hex[TDM_ID_HEX];
    const char *at = strchr(s, '@');
    size_t hl = at ? (size_t)(at - s) : strlen(s);
    if (hl >= sizeof hex) hl = sizeof hex - 1; /* too long: tdm_cli_id reports it */
    memcpy(hex, s, hl);
    hex[hl] = 0;
    if (tdm_cli_id("--fixed", hex, o->mesh_id) < 0) return -1;
    if (!at) return 0;
    const char *p = at + 1;
    for (int k = 0; k < 7; k++) {
        char *end;
        errno = 0;
        o->pose[k] = strtod(p, &end);
        if (end == p || errno || !isfinite(o->pose[k]) || *end != (k < 6 ? ',' : 0)) {
            tdm_cli_error("--fixed: the pose after @ must be 7 finite numbers x,y,z,qx,qy,qz,qw, not '%s'", at + 1);
            return -1;
        }
        p = end + 1;
    }
    o->has_pose = 1;
    return 0;
}

static int parse_pair(const char *s, size_t n_objects, tdm_object_pair *pr)
{
    char *end;
    errno = 0;
    unsigned long a = strtoul(s, &end, 10), b;
    if (end == s || *end != ',' || errno) goto bad;
    const char *t = end + 1;
    b = strtoul(t, &end, 10);
    if (end == t || *end || errno || a >= n_objects || b >= n_objects || a == b) goto bad;
    pr->a = (uint32_t)a;
    pr->b = (uint32_t)b;
    return 0;
bad:
    tdm_cli_error("--allow takes two different object ids A,B below %zu (objects are numbered in the order given), "
                  "not '%s'",
                  n_objects, s);
    return -1;
}

static int scene_put(int argc, char **argv)
{
    int status = TDM_EXIT_USAGE;
    tdm_scene_object *objs = calloc((size_t)argc + 1, sizeof *objs);
    tdm_object_pair *pairs = calloc((size_t)argc + 1, sizeof *pairs);
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    const char **allow = calloc((size_t)argc + 1, sizeof *allow);
    tdm_client *c = NULL;
    size_t n_objs = 0, n_pairs = 0, n_rest = 0, n_allow = 0;
    if (!objs || !pairs || !rest || !allow) {
        tdm_cli_error("out of memory");
        status = TDM_EXIT_FAIL;
        goto done;
    }
    /* The repeatable options are taken here; the rest goes to the shared parser. */
    for (int i = 0; i < argc; i++) {
        bool fixed = !strcmp(argv[i], "--fixed"), movable = !strcmp(argv[i], "--movable");
        if (!fixed && !movable && strcmp(argv[i], "--allow")) {
            rest[n_rest++] = argv[i];
            continue;
        }
        if (i + 1 >= argc) {
            tdm_cli_error("scene put: option %s needs a value", argv[i]);
            goto done;
        }
        const char *v = argv[++i];
        if (!fixed && !movable) {
            allow[n_allow++] = v;
            continue;
        }
        tdm_scene_object *o = &objs[n_objs];
        o->object_id = (uint32_t)n_objs;
        o->movable = movable;
        if (movable ? tdm_cli_id("--movable", v, o->mesh_id) : parse_fixed(v, o)) goto done;
        n_objs++;
    }
    const char *name = NULL, *server = NULL;
    const tdm_opt opts[] = {{"--name", &name}, {"--server", &server}};
    if (tdm_cli_parse((int)n_rest, rest, opts, 2, "scene put") < 0) goto done;
    if (n_objs == 0) {
        tdm_cli_error("scene put: give the objects with --fixed MESHID[@x,y,z,qx,qy,qz,qw] and --movable MESHID");
        goto done;
    }
    for (size_t i = 0; i < n_allow; i++)
        if (parse_pair(allow[i], n_objs, &pairs[n_pairs++]) < 0) goto done;

    status = TDM_EXIT_FAIL;
    if (!(c = tdm_cli_connect(tdm_cli_server(server)))) goto done;
    uint8_t id[TDM_ID_BYTES];
    if (tdm_scene_put(c, name, objs, n_objs, pairs, n_pairs, id, NULL, NULL, 0, NULL)) {
        tdm_cli_error("scene put: %s", tdm_client_errstr(c));
        goto done;
    }
    char hex[TDM_ID_HEX];
    printf("%s\n", tdm_id_to_hex(id, hex));
    status = 0;
done:
    tdm_client_free(c);
    free(objs);
    free(pairs);
    free(rest);
    free(allow);
    return status;
}

static int scene_list(int argc, char **argv)
{
    const char *server = NULL;
    const tdm_opt opts[] = {{"--server", &server}};
    if (tdm_cli_parse(argc, argv, opts, 1, "scene list") < 0) return TDM_EXIT_USAGE;
    tdm_client *c = tdm_cli_connect(tdm_cli_server(server));
    if (!c) return TDM_EXIT_FAIL;
    tdm_scene_info *list;
    size_t n;
    int status = TDM_EXIT_FAIL;
    if (tdm_scene_list(c, &list, &n)) {
        tdm_cli_error("scene list: %s", tdm_client_errstr(c));
    } else {
        char hex[TDM_ID_HEX];
        for (size_t i = 0; i < n; i++) {
            printf("%s objects=%u movable=", tdm_id_to_hex(list[i].scene_id, hex), list[i].n_objects);
            for (size_t k = 0; k < list[i].n_movable; k++) printf(k ? ",%u" : "%u", list[i].movable[k]);
            printf(" name=%s\n", list[i].name);
        }
        tdm_scene_list_free(list);
        status = 0;
    }
    tdm_client_free(c);
    return status;
}

static int scene_rm(int argc, char **argv)
{
    if (argc < 1 || !strncmp(argv[0], "--", 2)) {
        tdm_cli_error("scene rm: a scene ID is required");
        return TDM_EXIT_USAGE;
    }
    const char *server = NULL;
    const tdm_opt opts[] = {{"--server", &server}};
    uint8_t id[TDM_ID_BYTES];
    if (tdm_cli_parse(argc - 1, argv + 1, opts, 1, "scene rm") < 0 || tdm_cli_id("scene rm: ID", argv[0], id) < 0)
        return TDM_EXIT_USAGE;
    tdm_client *c = tdm_cli_connect(tdm_cli_server(server));
    if (!c) return TDM_EXIT_FAIL;
    int status = 0;
    if (tdm_scene_delete(c, id)) {
        tdm_cli_error("scene rm %s: %s", argv[0], tdm_client_errstr(c));
        status = TDM_EXIT_FAIL;
    }
    tdm_client_free(c);
    return status;
}

int tdm_cmd_scene(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "put")) return scene_put(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "list")) return scene_list(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "rm")) return scene_rm(argc - 1, argv + 1);
    tdm_cli_error("scene: expected put, list or rm (see tandem --help)");
    return TDM_EXIT_USAGE;
}
