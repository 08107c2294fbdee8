/* Robots and robot scenes built from their stored text: what RobotPut and
 * RobotScenePut (request_robot.c, writer.c) and the start-up loader (loader.c)
 * share, so that a robot read back from the data directory is built exactly as
 * the put that stored it.
 *
 * A robot's mesh filenames resolve through its mesh table (RobotPut.meshes) to
 * stored meshes: each collision element's mesh_path becomes the mesh id in hex.
 * A robot scene's mesh elements are then read (vertices as uploaded) from the
 * meshes' files in the data directory and scaled and built into trees by
 * robot/robot_scene.c, as `tandem check --urdf` builds them from the mesh files,
 * so answers through tandemd equal the offline CLI's. */
#ifndef TDM_DAEMON_ROBOT_BUILD_H
#define TDM_DAEMON_ROBOT_BUILD_H

#include <stddef.h>

#include "catalog.h"
#include "datadir.h"

/* How a robot failed to build: the wire's error code (ErrorCode numbers), the
 * field and index it is about, and a one-line message. */
typedef struct tdm_robot_fail {
    int code;          /* Tandem__V1__ErrorCode */
    const char *field; /* static */
    int64_t index;
    char msg[600];
} tdm_robot_fail;

/* Parses a robot's URDF (and SRDF, srdf NULL when none) with mesh filenames looked up
 * in refs[0..n) (sorted by tdm_canon_mesh_ref_cmp, distinct), each naming a mesh
 * listed in the catalogue and, unless tenant is -1, owned by that tenant (another
 * tenant's mesh fails as an unknown one): meshes[i] receives refs[i]'s (borrowed). Every reference
 * must be used by the URDF. On success *out is the robot (the caller's). Loop
 * thread (catalogue lookups), or the loader before the loop runs. 0, or a negative
 * TDM_E* code with *f filled. */
int tdm__robot_build(tdm_catalog *cat, int64_t tenant, const char *urdf, size_t urdf_len, const char *srdf, size_t srdf_len,
                     const tdm_canon_mesh_ref *refs, uint32_t n, tdm_stored_mesh **meshes, tdm_robot **out,
                     tdm_robot_fail *f);
/* tdm__robot_build's two halves: the catalogue lookups (loop thread), and the parse, which reads
 * nothing but its arguments (any thread: a large URDF is parsed on libuv's pool, request_robot.c). */
int tdm__robot_meshes(tdm_catalog *cat, int64_t tenant, const tdm_canon_mesh_ref *refs, uint32_t n,
                      tdm_stored_mesh **meshes, tdm_robot_fail *f);
int tdm__robot_parse_refs(const char *urdf, size_t urdf_len, const char *srdf, size_t srdf_len,
                          const tdm_canon_mesh_ref *refs, uint32_t n, tdm_robot **out, tdm_robot_fail *f);
/* What a RobotPut can tell of max_robot_triangles before anything is built: the triangles of
 * robot's distinct collision meshes (a stored mesh at a scale counted once, as the element trees
 * share them: robot/robot_scene.h), a lower bound of what its first scene builds (primitives are
 * counted there, as tessellated). robot was parsed with refs[0..n) (tdm__robot_parse_refs) and
 * meshes[i] is refs[i]'s. 0 when within max (0: no limit), else TDM_ERANGE with *f filled
 * (ERROR_LIMIT, field "meshes") or TDM_ENOMEM. O(elements log elements): the elements' owners are
 * tdm_robot_elem_owners'. */
int tdm__robot_mesh_budget(const tdm_robot *robot, const tdm_canon_mesh_ref *refs, uint32_t n,
                           tdm_stored_mesh *const *meshes, uint32_t max, tdm_robot_fail *f);

/* Reads the planning scene in yaml[0..len) and builds robot's scene in it. The
 * robot's element trees are built once, by its first scene (mesh elements read
 * from dir), kept in robot->elems and shared by its later scenes, which then
 * build only their world's trees (tdm_robot_scene_create_shared): *rs borrows
 * them, so robot must outlive it (a stored scene holds a reference to its robot).
 * On success *rs and *ps are the caller's. Any thread (the writer's, the
 * loader's): reads only files and the robot, and publishes robot->elems with an
 * atomic compare-and-swap (two threads building at once: one set is kept). 0, or
 * a negative TDM_E* code with *f filled. A scene of more than max_objects objects
 * (robot elements, attached and world shapes; 0: no limit) is refused once parsed,
 * before anything is built (TDM_ERANGE, field "world"), so that the limit also
 * bounds the work and memory of a put over it. One whose attached and world shapes
 * have more than max_triangles triangles (0: no limit) is refused while they are
 * built (tdm_robot_scene_create_limited: TDM_ERANGE, field "world"), having cost
 * at most that and one shape. The robot's elements, built by its first scene, are
 * refused likewise when their distinct trees have more than max_robot_triangles
 * (tdm_robot_elems_create_limited; 0: no limit); no trees are kept, and the
 * refusal is (robot->elems_refused: any TDM_ERANGE of the elements, which lasts as
 * long as the robot), so that a later scene of the robot is refused at once with
 * the same message instead of building up to the limit again. */
int tdm__robot_scene_build(tdm_datadir *dir, tdm_stored_robot *robot, const char *yaml, size_t len,
                           uint32_t max_objects, uint32_t max_triangles, uint32_t max_robot_triangles,
                           tdm_robot_scene **rs, tdm_planning_scene **ps, tdm_robot_fail *f);

#endif
