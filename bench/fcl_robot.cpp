/* fcl_robot: FCL models of a URDF robot in a MoveIt planning scene (fcl_robot.h). */
#include "fcl_robot.h"

#include <stdio.h>

#include <fcl/geometry/bvh/BVH_model.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/geometry/shape/capsule.h>
#include <fcl/geometry/shape/cone.h>
#include <fcl/geometry/shape/plane.h>
#include <fcl/geometry/shape/cylinder.h>
#include <fcl/geometry/shape/sphere.h>
#include <fcl/math/bv/OBBRSS.h>
#include <fcl/narrowphase/collision.h>

#include "tools/io.h"

namespace {

typedef fcl::BVHModel<fcl::OBBRSSd> fcl_model;

tdm_fcl_geom bvh_of(const std::vector<fcl::Vector3d> &pts, const std::vector<fcl::Triangle> &tris)
{
    auto model = std::make_shared<fcl_model>();
    if (model->beginModel((int)tris.size(), (int)pts.size()) != fcl::BVH_OK ||
        model->addSubModel(pts, tris) != fcl::BVH_OK || model->endModel() != fcl::BVH_OK)
        return nullptr;
    model->computeLocalAABB();
    return model;
}

} // namespace

tdm_fcl_meshes::~tdm_fcl_meshes()
{
    for (tdm_mesh *m : meshes) tdm_mesh_free(m);
}

int tdm_fcl_load_mesh(void *ctx, const char *path, tdm_mesh **out, char *err, size_t errlen)
{
    int rc = tdm_mesh_load_file(path, TDM_ORIGIN_RAW, out, err, errlen);
    if (rc) return rc;
    tdm_mesh *copy = NULL;
    rc = tdm_mesh_create((*out)->verts, (*out)->n_verts, (*out)->tris, (*out)->n_tris, NULL, &copy, err, errlen);
    if (rc) {
        tdm_mesh_free(*out);
        *out = NULL;
        return rc;
    }
    static_cast<tdm_fcl_meshes *>(ctx)->meshes.push_back(copy);
    return 0;
}

fcl::Transform3d tdm_fcl_transform(const tdm_xform &x)
{
    fcl::Matrix3d r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) r(i, j) = x.r.m[i][j];
    fcl::Transform3d t = fcl::Transform3d::Identity();
    t.linear() = r;
    t.translation() = fcl::Vector3d(x.t.x, x.t.y, x.t.z);
    return t;
}

int tdm_fcl_robot_geoms(const tdm_robot *robot, const std::vector<tdm_mesh *> &meshes, std::vector<tdm_fcl_geom> *out,
                        char *err, size_t errlen)
{
    std::vector<tdm_fcl_geom> geoms(robot->n_collisions);
    std::vector<uint32_t> owner(robot->n_collisions);
    if (tdm_robot_elem_owners(robot, owner.data()) != TDM_OK) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t next_mesh = 0;
    for (uint32_t e = 0; e < robot->n_collisions; e++) {
        const tdm_robot_collision &c = robot->collisions[e];
        tdm_fcl_geom g;
        switch (c.shape) {
        case TDM_SHAPE_MESH: {
            /* robot/robot_scene.c loads a mesh once for the elements of one path and scale
               (tdm_robot_elems.owner): the first such element's geometry serves the others */
            uint32_t k = owner[e];
            if (k != e) {
                g = geoms[k];
                break;
            }
            if (next_mesh >= meshes.size()) {
                snprintf(err, errlen, "collision element %u: no mesh loaded for it", e);
                return -1;
            }
            tdm_mesh *m = meshes[next_mesh++];
            const double s[3] = {c.scale.x, c.scale.y, c.scale.z};
            std::vector<fcl::Vector3d> pts(m->n_verts);
            std::vector<fcl::Triangle> tris(m->n_tris);
            for (uint32_t i = 0; i < m->n_verts; i++) {
                double v[3];
                for (int k = 0; k < 3; k++) {
                    v[k] = m->verts[3 * i + k];
                    if (s[k] != 1) v[k] = (float)(v[k] * s[k]); /* as robot_scene.c */
                }
                pts[i] = fcl::Vector3d(v[0], v[1], v[2]);
            }
            for (uint32_t i = 0; i < m->n_tris; i++)
                tris[i] = fcl::Triangle(m->tris[3 * i], m->tris[3 * i + 1], m->tris[3 * i + 2]);
            g = bvh_of(pts, tris);
            break;
        }
        case TDM_SHAPE_BOX: g = std::make_shared<fcl::Boxd>(c.size[0], c.size[1], c.size[2]); break;
        case TDM_SHAPE_CYLINDER: g = std::make_shared<fcl::Cylinderd>(c.size[0], c.size[1]); break;
        case TDM_SHAPE_SPHERE: g = std::make_shared<fcl::Sphered>(c.size[0]); break;
        case TDM_SHAPE_CAPSULE: g = std::make_shared<fcl::Capsuled>(c.size[0], c.size[1]); break;
        }
        if (!g) {
            snprintf(err, errlen, "FCL could not build collision element %u", e);
            return -1;
        }
        geoms[e] = g;
    }
    *out = std::move(geoms);
    return 0;
}

int tdm_fcl_model_build(const tdm_planning_scene *ps, const tdm_robot_scene *rs,
                        const std::vector<tdm_fcl_geom> &robot_geoms, tdm_fcl_model *out, char *err, size_t errlen)
{
    tdm_fcl_model m;
    m.geoms.resize(rs->n_objects);
    for (uint32_t id = 0; id < rs->n_objects; id++) {
        const tdm_robot_scene_obj &o = rs->objs[id];
        tdm_fcl_geom g;
        if (o.movable && !o.attached) {
            if (o.index < robot_geoms.size()) g = robot_geoms[o.index];
        } else { /* a world shape, or an attached object's (in its link's frame: the scene's poses place it) */
            const tdm_ps_object &wo = o.attached ? ps->attached[o.index].object : ps->objects[o.index];
            if (o.shape < wo.n_primitives) {
                const tdm_ps_primitive &p = wo.primitives[o.shape];
                switch (p.type) {
                case TDM_PS_BOX: g = std::make_shared<fcl::Boxd>(p.dims[0], p.dims[1], p.dims[2]); break;
                case TDM_PS_SPHERE: g = std::make_shared<fcl::Sphered>(p.dims[0]); break;
                case TDM_PS_CYLINDER: g = std::make_shared<fcl::Cylinderd>(p.dims[1], p.dims[0]); break; /* (r, h) */
                case TDM_PS_CONE: g = std::make_shared<fcl::Coned>(p.dims[1], p.dims[0]); break;         /* (r, h) */
                }
            } else if (o.shape >= wo.n_primitives + wo.n_meshes) { /* a plane, as MoveIt hands it to FCL */
                const double *c = wo.planes[o.shape - wo.n_primitives - wo.n_meshes].coef;
                g = std::make_shared<fcl::Planed>(c[0], c[1], c[2], c[3]);
            } else {
                const tdm_ps_mesh &pm = wo.meshes[o.shape - wo.n_primitives];
                std::vector<fcl::Vector3d> pts(pm.n_verts);
                std::vector<fcl::Triangle> tris(pm.n_tris);
                for (uint32_t i = 0; i < pm.n_verts; i++)
                    pts[i] = fcl::Vector3d(pm.verts[3 * i], pm.verts[3 * i + 1], pm.verts[3 * i + 2]);
                for (uint32_t i = 0; i < pm.n_tris; i++)
                    tris[i] = fcl::Triangle(pm.tris[3 * i], pm.tris[3 * i + 1], pm.tris[3 * i + 2]);
                g = bvh_of(pts, tris);
            }
        }
        if (!g) {
            snprintf(err, errlen, "FCL could not build object %u", id);
            return -1;
        }
        m.geoms[id] = g;
    }
    /* Checked pairs as ids; the movable slot of each id (scene->slot). */
    const tdm_scene *sc = rs->scene;
    m.checks.resize(sc->n_checks);
    for (uint32_t k = 0; k < sc->n_checks; k++)
        m.checks[k] = {sc->objects[sc->checks[k].lo].id, sc->objects[sc->checks[k].hi].id};
    m.slot_of.assign(rs->n_objects, UINT32_MAX);
    m.fixed_pose.assign(rs->n_objects, fcl::Transform3d::Identity());
    for (uint32_t i = 0; i < sc->n_objects; i++) {
        m.slot_of[sc->objects[i].id] = sc->slot[i];
        m.fixed_pose[sc->objects[i].id] = tdm_fcl_transform(sc->objects[i].pose);
    }
    m.plane.assign(rs->n_objects, 0);
    for (uint32_t id = 0; id < rs->n_objects; id++) m.plane[id] = m.geoms[id]->getNodeType() == fcl::GEOM_PLANE;
    m.n_elements = rs->n_movable;
    *out = std::move(m);
    return 0;
}

tdm_fcl_checker::tdm_fcl_checker(const tdm_fcl_model &m) : model_(m), objs_(m.geoms.size())
{
    for (size_t id = 0; id < m.geoms.size(); id++) {
        objs_[id].reset(new fcl::CollisionObjectd(m.geoms[id]));
        if (m.slot_of[id] == UINT32_MAX) {
            objs_[id]->setTransform(m.fixed_pose[id]);
            objs_[id]->computeAABB();
        }
    }
}

uint64_t tdm_fcl_checker::check(const tdm_xform *x, bool contacts, uint64_t max_contacts)
{
    for (size_t id = 0; id < objs_.size(); id++)
        if (model_.slot_of[id] != UINT32_MAX) {
            objs_[id]->setTransform(tdm_fcl_transform(x[model_.slot_of[id]]));
            objs_[id]->computeAABB();
        }
    fcl::CollisionRequestd req(contacts ? (size_t)max_contacts : 1, false);
    /* A plane against a cylinder: FCL's test without contacts (cylinderPlaneIntersect in
     * narrowphase/detail/primitive_shape_algorithm/plane-inl.h, FCL 0.7) takes the
     * cylinder's whole length where half of it belongs, and calls apart cylinders colliding;
     * its test with contacts measures it right. Plane pairs take that one. */
    fcl::CollisionRequestd req_plane(contacts ? (size_t)max_contacts : 1, true);
    fcl::CollisionResultd res;
    uint64_t total = 0;
    for (const auto &pr : model_.checks) {
        fcl::CollisionObjectd *a = objs_[pr.first].get(), *b = objs_[pr.second].get();
        if (!a->getAABB().overlap(b->getAABB())) continue;
        res.clear();
        fcl::collide(a, b, model_.plane[pr.first] || model_.plane[pr.second] ? req_plane : req, res);
        if (!contacts) {
            if (res.isCollision()) return 1;
        } else {
            total += res.numContacts();
            if (total >= max_contacts) return max_contacts;
        }
    }
    return total;
}
