/* Harness: the MoveIt YAML parser (robot/planning_scene.c over yaml_read.c),
 * which tandemd runs on every RobotScenePut's text and on stored robot scenes at
 * start-up.
 *
 * Input: one flag byte, then the YAML. Flag bit 0 clear: a planning scene, and
 * one that parses is built into a robot scene for the fixture robot
 * (fixture.h), as the daemon's writer builds it (primitives tessellated, inline
 * meshes and the robot's mesh element into trees, the ACM and the robot state
 * applied), then its poses computed at the zero configuration. Bit 0 set: a
 * motion-planning request (the CLI's `tandem motions` input). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fixture.h"
#include "geom/primitive.h"
#include "robot/planning_scene.h"
#include "robot/robot_scene.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tdm_robot *robot;

static int resolve(void *ctx, const char *uri, char **path, char *why, size_t whylen)
{
    (void)ctx;
    (void)why;
    (void)whylen;
    *path = strdup(uri);
    return *path ? TDM_OK : TDM_ENOMEM;
}

static int load_mesh(void *ctx, const char *path, tdm_mesh **out, char *err, size_t errlen)
{
    (void)ctx;
    (void)path;
    return tdm_mesh_create(FIXTURE_MESH_VERTS, FIXTURE_MESH_NV, FIXTURE_MESH_TRIS, FIXTURE_MESH_NT, NULL, out, err,
                           errlen);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tdm_robot_source src = {FIXTURE_URDF, strlen(FIXTURE_URDF), "urdf", FIXTURE_SRDF, strlen(FIXTURE_SRDF), "srdf",
                            resolve, NULL};
    char err[512];
    if (tdm_robot_parse(&src, &robot, err, sizeof err) != TDM_OK) {
        fprintf(stderr, "fixture robot: %s\n", err);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int motion = data[0] & 1;
    char err[512];
    /* the text is not terminated: the parser must take its length as given */
    if (motion) {
        tdm_motion_request *m = NULL;
        if (tdm_motion_request_parse((const char *)data + 1, size - 1, "request", &m, err, sizeof err) == TDM_OK)
            tdm_motion_request_free(m);
        return 0;
    }
    tdm_planning_scene *ps = NULL;
    if (tdm_planning_scene_parse((const char *)data + 1, size - 1, "scene", &ps, err, sizeof err) != TDM_OK) return 0;
    tdm_robot_scene *rs = NULL;
    if (tdm_robot_scene_create(robot, ps, load_mesh, NULL, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err) == TDM_OK) {
        double q[2] = {0, 0};
        tdm_xform links[3], poses[4];
        if (robot->n_active != 2 || robot->n_links != 3 || rs->n_elements != 4) abort();
        if (tdm_robot_scene_poses(rs, q, 2, links, poses) != TDM_OK) abort();
        tdm_robot_scene_destroy(rs);
    }
    tdm_planning_scene_free(ps);
    return 0;
}
