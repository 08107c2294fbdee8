/* fcl_robot: FCL models of a URDF robot in a MoveIt planning scene, the FCL
 * reference of issue 13 (point 10). Used by bench_robot (configurations from a
 * file) and by examples/ompl (an FCL checker for OMPL planners), so that both ask
 * FCL the same question.
 *
 * The model is robot/'s, so that only the collision test differs from Tandem's:
 * the URDF and SRDF (robot/urdf.h), the planning scene (robot/planning_scene.h)
 * and the robot scene (robot/robot_scene.h) are built exactly as `tandem check
 * --urdf` builds them; from that scene are taken the checked pairs (scene->checks:
 * every element against every world shape and every element of another link,
 * minus same-link pairs, SRDF-disabled pairs and ACM-allowed pairs), the world
 * shapes' poses (frames resolved as there) and the elements' poses per
 * configuration (tdm_robot_scene_poses: forward kinematics). Only the geometry
 * handed to FCL is FCL's own:
 *   - robot mesh elements: fcl::BVHModel<OBBRSS> of the file read by tools'
 *     tdm_mesh_load_file (raw origin), scaled per axis as robot_scene.c scales it;
 *   - URDF box / cylinder / sphere / capsule elements and MoveIt box / cylinder /
 *     sphere / cone primitives: fcl::Box / Cylinder / Sphere / Capsule / Cone, exact and SOLID
 *     (Tandem meshes curved primitives, containing the true shape within 0.1 mm, and
 *     treats primitives as solids too: workpile/solid.h);
 *   - world inline meshes: BVHModel<OBBRSS> of the double vertices as read.
 * Before each fcl::collide the two objects' world AABBs are compared (what a
 * broad phase would do); FCL's GJK solver is its default (libccd).
 *
 * Contacts mode. FCL is asked for up to M contacts per pair (enable_contact off);
 * what it reports, summed over the checked pairs and capped at M per configuration:
 * mesh-mesh pairs one per intersecting triangle pair (the quantity Tandem counts);
 * mesh-primitive pairs one per mesh triangle that meets the SOLID primitive (NOT
 * comparable with Tandem's count); primitive-primitive pairs 1 if they meet.
 *
 * Ownership and threads: a tdm_fcl_model shares its geometry (shared_ptr) and is
 * only read once built; a tdm_fcl_checker holds one thread's FCL collision
 * objects over a model that must outlive it. Any number of checkers may run at
 * once on one model, one thread each. */
#ifndef TDM_BENCH_FCL_ROBOT_H
#define TDM_BENCH_FCL_ROBOT_H

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <utility>
#include <vector>

#include <fcl/narrowphase/collision_object.h>

extern "C" {
#include "geom/mesh.h"
#include "robot/robot_scene.h"
#include "robot/urdf.h"
}
#include "robot/planning_scene.h"

typedef std::shared_ptr<fcl::CollisionGeometryd> tdm_fcl_geom;

/* A tdm_robot_mesh_loader (ctx: a tdm_fcl_meshes) that reads the file raw with
 * tdm_mesh_load_file and keeps a copy of each mesh, in element order, for
 * tdm_fcl_robot_geoms (once per distinct path and scale: robot/ loads a mesh once
 * for the elements that share it, tdm_robot_elems.owner). The robot scene frees the mesh it is handed; the copies
 * are the tdm_fcl_meshes' (freed by its destructor). */
struct tdm_fcl_meshes {
    std::vector<tdm_mesh *> meshes;
    tdm_fcl_meshes() = default;
    tdm_fcl_meshes(const tdm_fcl_meshes &) = delete;
    tdm_fcl_meshes &operator=(const tdm_fcl_meshes &) = delete;
    ~tdm_fcl_meshes();
};
int tdm_fcl_load_mesh(void *ctx, const char *path, tdm_mesh **out, char *err, size_t errlen);

/* FCL geometry of each collision element of r (by element index), mesh elements
 * taken in order from meshes (what tdm_fcl_load_mesh kept while a robot scene of r
 * was built), an element of the same path and scale as an earlier one sharing its
 * geometry. Depends on the robot only: build it once, use it in every scene.
 * Returns 0, or -1 with a message in err. */
int tdm_fcl_robot_geoms(const tdm_robot *r, const std::vector<tdm_mesh *> &meshes, std::vector<tdm_fcl_geom> *out,
                        char *err, size_t errlen);

/* Everything a checker needs for one robot scene, by scene object id. */
struct tdm_fcl_model {
    std::vector<tdm_fcl_geom> geoms;                      /* by object id */
    std::vector<std::pair<uint32_t, uint32_t>> checks;    /* checked pairs, as object ids */
    std::vector<uint32_t> slot_of;                        /* movable slot of each id, UINT32_MAX: fixed */
    std::vector<fcl::Transform3d> fixed_pose;             /* fixed objects' poses, by id */
    std::vector<uint8_t> plane;                           /* 1: a plane (tdm_fcl_checker::check), by id */
    size_t n_elements = 0;                                /* movable objects (poses per configuration) */
};

/* The model of robot scene rs (built from ps) with the robot's element geometry
 * robot_geoms (tdm_fcl_robot_geoms). Returns 0, or -1 with a message in err. */
int tdm_fcl_model_build(const tdm_planning_scene *ps, const tdm_robot_scene *rs,
                        const std::vector<tdm_fcl_geom> &robot_geoms, tdm_fcl_model *out, char *err, size_t errlen);

fcl::Transform3d tdm_fcl_transform(const tdm_xform &x);

/* One thread's collision objects over a model (borrowed: must outlive it). */
class tdm_fcl_checker {
public:
    explicit tdm_fcl_checker(const tdm_fcl_model &m);
    /* One configuration whose elements are at poses[0..n_elements) (scene->movable
     * order, tdm_robot_scene_poses): bool mode (contacts false) returns 1 if any
     * checked pair collides, else 0; contacts mode the count described at the top,
     * capped at max_contacts. */
    uint64_t check(const tdm_xform *poses, bool contacts = false, uint64_t max_contacts = 1);

private:
    const tdm_fcl_model &model_;
    std::vector<std::unique_ptr<fcl::CollisionObjectd>> objs_;
};

#endif
