/* Harness: the URDF and SRDF parser (robot/urdf.c, tdm_robot_parse), which
 * tandemd runs on every RobotPut's texts and on stored robots at start-up.
 *
 * Input: the URDF, then optionally a zero byte and the SRDF (as a RobotPut
 * carries them: two strings). Mesh filenames resolve to themselves, except
 * those starting with "missing", which fail as a name outside the mesh table
 * does. A robot that parses is then moved: forward kinematics at the zero
 * configuration and at every joint's limits, and the collision frames. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robot/kinematics.h"
#include "robot/urdf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int resolve(void *ctx, const char *uri, char **path, char *why, size_t whylen)
{
    (void)ctx;
    if (!strncmp(uri, "missing", 7)) {
        snprintf(why, whylen, "not in the mesh table");
        return TDM_EINDEX;
    }
    *path = strdup(uri);
    return *path ? TDM_OK : TDM_ENOMEM;
}

static void move(const tdm_robot *r)
{
    size_t J = r->n_active;
    double *q = calloc(J ? J : 1, sizeof *q);
    tdm_xform *links = malloc(sizeof *links * r->n_links);
    tdm_xform *coll = malloc(sizeof *coll * (r->n_collisions ? r->n_collisions : 1));
    if (q && links && coll) {
        tdm_xform base = tdm_xform_identity();
        for (int pass = 0; pass < 3; pass++) {
            for (size_t k = 0; k < J; k++) {
                const tdm_robot_joint *j = &r->joints[r->active[k]];
                q[k] = pass == 0 ? 0 : pass == 1 ? j->lower : j->upper;
            }
            if (tdm_robot_fk(r, q, J, &base, links) == TDM_OK) tdm_robot_collision_world(r, links, coll);
        }
        if (J > 0) tdm_robot_fk(r, q, J - 1, &base, links); /* the wrong count: refused, not read past */
    }
    free(q);
    free(links);
    free(coll);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t ulen = nul ? (size_t)(nul - data) : size;
    char *urdf = malloc(ulen + 1);
    char *srdf = NULL;
    size_t slen = 0;
    if (!urdf) return 0;
    memcpy(urdf, data, ulen);
    urdf[ulen] = 0;
    if (nul) {
        slen = size - ulen - 1;
        srdf = malloc(slen + 1);
        if (!srdf) {
            free(urdf);
            return 0;
        }
        memcpy(srdf, nul + 1, slen);
        srdf[slen] = 0;
    }
    tdm_robot_source src = {urdf, ulen, "urdf", srdf, slen, "srdf", resolve, NULL};
    tdm_robot *r = NULL;
    char err[512];
    if (tdm_robot_parse(&src, &r, err, sizeof err) == TDM_OK) {
        move(r);
        tdm_robot_free(r);
    } else if (r != NULL || !err[0]) {
        abort(); /* a failure sets *out to NULL and says why */
    }
    free(urdf);
    free(srdf);
    return 0;
}
