/* query_cube: the blocking libtandem API end to end.
 *
 *   query_cube [ADDR]      (default 127.0.0.1:7450; "unix:/path" works too)
 *
 * Uploads two generated boxes (a 2 x 2 x 2 environment cube and a 0.5-wide robot cube),
 * makes a scene with the environment fixed at the identity and the robot movable, checks a
 * few robot poses in both modes, then deletes what it stored. */
#include <stdio.h>
#include <stdlib.h>

#include <tandem/tandem.h>

/* An axis-aligned box centred at the origin: 8 vertices, 12 triangles. */
static void make_box(float half, float verts[24], uint32_t tris[36])
{
    static const uint32_t faces[36] = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                                       2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};
    for (int i = 0; i < 8; i++) {
        verts[3 * i] = i & 1 ? half : -half;
        verts[3 * i + 1] = i & 2 ? half : -half;
        verts[3 * i + 2] = i & 4 ? half : -half;
    }
    for (int i = 0; i < 36; i++) tris[i] = faces[i];
}

static int fail(tdm_client *c, const char *what)
{
    fprintf(stderr, "query_cube: %s: %s\n", what, tdm_client_errstr(c));
    tdm_client_free(c);
    return 1;
}

int main(int argc, char **argv)
{
    const char *addr = argc > 1 ? argv[1] : "127.0.0.1:7450";
    tdm_client *c = tdm_client_connect(addr, 2000);
    if (!c) {
        fprintf(stderr, "query_cube: out of memory\n");
        return 1;
    }
    if (tdm_client_err(c)) return fail(c, "connect");
    const tdm_server_info *info = tdm_client_server_info(c);
    printf("server %s, engine %s, at most %u queries per batch\n", info->server_version,
           tdm_engine_name(info->engine), info->limits.max_queries);

    float env_v[24], robot_v[24];
    uint32_t env_t[36], robot_t[36];
    make_box(1.0f, env_v, env_t);
    make_box(0.25f, robot_v, robot_t);
    uint8_t env_id[TDM_ID_BYTES], robot_id[TDM_ID_BYTES], scene_id[TDM_ID_BYTES];
    char hex[TDM_ID_HEX];
    int created;
    if (tdm_mesh_put(c, "env-cube", env_v, 8, env_t, 12, env_id, &created)) return fail(c, "mesh put");
    printf("environment mesh %s (%s)\n", tdm_id_to_hex(env_id, hex), created ? "new" : "already stored");
    if (tdm_mesh_put(c, "robot-cube", robot_v, 8, robot_t, 12, robot_id, &created)) return fail(c, "mesh put");
    printf("robot mesh       %s (%s)\n", tdm_id_to_hex(robot_id, hex), created ? "new" : "already stored");

    tdm_scene_object objs[2] = {{.object_id = 0, .movable = 0}, {.object_id = 1, .movable = 1}};
    for (int i = 0; i < TDM_ID_BYTES; i++) {
        objs[0].mesh_id[i] = env_id[i];
        objs[1].mesh_id[i] = robot_id[i];
    }
    uint32_t movable[2];
    size_t n_movable = 0;
    if (tdm_scene_put(c, "cube-in-cube", objs, 2, NULL, 0, scene_id, &created, movable, 2, &n_movable))
        return fail(c, "scene put");
    printf("scene            %s, %zu movable object(s)\n", tdm_id_to_hex(scene_id, hex), n_movable);

    /* x y z qx qy qz qw: inside without touching, crossing a face, outside, rotated on a face */
    const double poses[4][7] = {{0, 0, 0, 0, 0, 0, 1},
                                {0.9, 0, 0, 0, 0, 0, 1},
                                {3, 0, 0, 0, 0, 0, 1},
                                {0, 0, 1.0, 0, 0, 0.3826834323650898, 0.9238795325112867}};
    tdm_query_result res[4];
    if (tdm_query(c, scene_id, TDM_QUERY_BOOL, &poses[0][0], 1, 4, 0, res, NULL)) return fail(c, "query (bool)");
    for (int i = 0; i < 4; i++)
        printf("bool     pose %d (%.1f, %.1f, %.1f): %s\n", i, poses[i][0], poses[i][1], poses[i][2],
               res[i].colliding ? "colliding" : "free");

    tdm_contact pairs[256];
    tdm_pairs room = {pairs, 256, 0};
    if (tdm_query(c, scene_id, TDM_QUERY_CONTACTS, &poses[0][0], 1, 4, 1000, res, &room))
        return fail(c, "query (contacts)");
    for (int i = 0; i < 4; i++) {
        printf("contacts pose %d: %u intersecting triangle pairs%s", i, res[i].contacts,
               res[i].truncated ? " (truncated)" : "");
        if (res[i].n_pairs && res[i].first_pair < room.cap) {
            const tdm_contact *p = &pairs[res[i].first_pair];
            printf(", first: object %u triangle %u x object %u triangle %u", p->object_a, p->triangle_a, p->object_b,
                   p->triangle_b);
        }
        printf("\n");
    }

    if (tdm_scene_delete(c, scene_id)) return fail(c, "scene delete");
    /* a mesh another client also uses may be stored by it too: deleting is best effort here */
    if (tdm_mesh_delete(c, env_id) || tdm_mesh_delete(c, robot_id))
        fprintf(stderr, "query_cube: note: %s\n", tdm_client_errstr(c));
    tdm_client_free(c);
    return 0;
}
