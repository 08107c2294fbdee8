/* examples/ompl's checkers (checker.h): the Tandem checker against a real tandemd
 * (CPU engine, with small max_queries and max_motion_states so that batches are
 * split) and the FCL checker in process, on the arm of tests/arm_oracle.h, against
 * that oracle: configurations in batches, motions in batches (first colliding k and
 * the last free state), and OMPL's faces, the StateValidityChecker and both
 * checkMotion calls of the MotionValidator (lastValid's state and fraction). Random
 * configurations and motions, the seed printed. Built only when OMPL is present. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <vector>

#include <ompl/base/SpaceInformation.h>
#include <ompl/base/spaces/RealVectorStateSpace.h>

extern "C" {
#include "arm_oracle.h"
#include "daemon_util.h"
#include "gen.h"
#include "geom/primitive.h"
}
#include "bench/fcl_robot.h"
#include "checker.h"
#include "fcl_checker.h"
#include "tandem_checker.h"

namespace ob = ompl::base;

static dmn D;
static uint64_t seed;

static const char *path(const char *name)
{
    static char buf[8][600];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 600, "%s/%s", D.root, name);
    return p;
}

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(path(name), "w");
    cr_assert_not_null(f, "cannot write %s", path(name));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

static void suite_init(void)
{
    seed = gen_seed(0x0b1c4ec4ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
    dmn_init(&D, "ompl_checker");
    write_file("arm.urdf", arm_urdf_text);
    write_file("arm.srdf", arm_srdf_text);
    write_file("scene.yaml", arm_scene_text);
    std::string other = std::string(arm_scene_text) + "# another scene, by one comment\n";
    write_file("other.yaml", other.c_str());
}

static void suite_fini(void) { dmn_cleanup(&D); }

TestSuite(ompl_checker, .init = suite_init, .fini = suite_fini, .timeout = 240);

#define RES 0.01

/* Both checkers over the arm: the Tandem one on a tandemd of its own, the FCL one on
 * a local model. */
struct both {
    tdm_client *c = NULL;
    uint8_t scene_id[TDM_ID_BYTES]; /* the stored scene's */
    tdm_robot *robot = NULL;
    tdm_planning_scene *ps = NULL;
    tdm_robot_scene *rs = NULL;
    tdm_fcl_model model;
    std::unique_ptr<tandem_checker> tdm;
    std::unique_ptr<fcl_plan_checker> fcl;
    both()
    {
        const char *const flags[] = {"--engine", "cpu", "--max-queries", "64", "--max-motion-states", "3000", NULL};
        dmn_start(&D, flags);
        c = tdm_client_connect(D.unix_addr, 10000);
        cr_assert(c && !tdm_client_err(c), "connect: %s", c ? tdm_client_errstr(c) : "");
        uint8_t robot_id[TDM_ID_BYTES];
        cr_assert_eq(tdm_robot_put_files(c, "arm", path("arm.urdf"), path("arm.srdf"), robot_id, NULL, NULL), 0, "%s",
                     tdm_client_errstr(c));
        cr_assert_eq(tdm_robot_scene_put_file(c, "post", robot_id, path("scene.yaml"), scene_id, NULL, NULL), 0, "%s",
                     tdm_client_errstr(c));
        tdm.reset(new tandem_checker(c, scene_id, 2));
        char err[512];
        tdm_fcl_meshes meshes;
        std::vector<tdm_fcl_geom> geoms;
        cr_assert_eq(tdm_robot_load(path("arm.urdf"), path("arm.srdf"), &robot, err, sizeof err), 0, "%s", err);
        cr_assert_eq(tdm_planning_scene_read(path("scene.yaml"), &ps, err, sizeof err), 0, "%s", err);
        cr_assert_eq(tdm_robot_scene_create(robot, ps, tdm_fcl_load_mesh, &meshes, TDM_PRIMITIVE_TOLERANCE, &rs, err,
                                            sizeof err),
                     0, "%s", err);
        cr_assert_eq(tdm_fcl_robot_geoms(robot, meshes.meshes, &geoms, err, sizeof err), 0, "%s", err);
        cr_assert_eq(tdm_fcl_model_build(ps, rs, geoms, &model, err, sizeof err), 0, "%s", err);
        fcl.reset(new fcl_plan_checker(rs, &model, 2));
    }
    ~both()
    {
        tdm.reset();
        fcl.reset();
        tdm_client_free(c);
        tdm_robot_scene_destroy(rs);
        tdm_planning_scene_free(ps);
        tdm_robot_free(robot);
    }
};

static void random_config(gen_rng *g, double q[2])
{
    q[0] = gen_range(g, -3.14, 3.14);
    q[1] = gen_range(g, -2.6, 2.6);
}

/* libtandem's local engine and its copy of a world (scene.yaml: the stored one's) */
struct local_copy {
    tdm_local *l = tdm_local_create();
    tdm_local_robot *r = NULL;
    tdm_local_scene *s = NULL;
    explicit local_copy(const char *world = "scene.yaml")
    {
        cr_assert_not_null(l);
        cr_assert_eq(tdm_local_robot_load(l, path("arm.urdf"), path("arm.srdf"), &r), 0, "%s", tdm_local_errstr(l));
        cr_assert_eq(tdm_local_scene_create_file(l, r, path(world), &s), 0, "%s", tdm_local_errstr(l));
    }
    ~local_copy()
    {
        tdm_local_scene_free(s);
        tdm_local_robot_free(r);
        tdm_local_free(l);
    }
};

Test(ompl_checker, states_in_batches_equal_the_oracle)
{
    both b;
    gen_rng g = {seed};
    const size_t n = 300; /* five requests of at most 64 */
    std::vector<double> q(2 * n);
    for (size_t i = 0; i < n; i++) random_config(&g, &q[2 * i]);
    std::vector<uint8_t> vt(n, 7), vf(n, 7);
    cr_assert_eq(b.tdm->states(q.data(), n, vt.data()), 0, "%s", b.tdm->error().c_str());
    cr_assert_eq(b.fcl->states(q.data(), n, vf.data()), 0, "%s", b.fcl->error().c_str());
    size_t colliding = 0;
    for (size_t i = 0; i < n; i++) {
        int want = !arm_oracle_collides(&q[2 * i]);
        colliding += !want;
        cr_assert_eq(vt[i], want, "seed=%llu config %zu (%.17g %.17g): tandem %d, oracle %d", (unsigned long long)seed, i,
                     q[2 * i], q[2 * i + 1], vt[i], want);
        cr_assert_eq(vf[i], want, "seed=%llu config %zu: fcl %d, oracle %d", (unsigned long long)seed, i, vf[i], want);
    }
    cr_assert(colliding > 10 && colliding < n - 10, "a test that means something: %zu of %zu colliding", colliding, n);
    cr_assert_eq(b.tdm->checks, n);
    cr_assert_eq(b.fcl->checks, n);
    cr_assert_eq(b.tdm->requests, 5, "300 configurations at max_queries 64: 5 requests, not %llu",
                 (unsigned long long)b.tdm->requests);
}

/* tandem_checker's local states (answer_states_locally): batches of at most 4 answered by
 * a CPU engine in process over the same robot scene, with no request to tandemd; a larger
 * batch still goes to tandemd; every answer the oracle's. */
Test(ompl_checker, local_states_equal_the_oracle)
{
    both b;
    /* a copy of another world is refused: its answers would be that world's */
    local_copy other("other.yaml"), lc;
    cr_assert_eq(b.tdm->answer_states_locally(other.l, other.s, 4), -1);
    cr_assert(strstr(b.tdm->error().c_str(), "is not the stored one"), "%s", b.tdm->error().c_str());
    b.tdm.reset(new tandem_checker(b.c, b.scene_id, 2));
    cr_assert_eq(b.tdm->answer_states_locally(lc.l, lc.s, 4), 0, "%s", b.tdm->error().c_str());
    gen_rng g = {seed ^ 0x10ca1ull};
    const size_t n = 300;
    std::vector<double> q(2 * n);
    for (size_t i = 0; i < n; i++) random_config(&g, &q[2 * i]);
    std::vector<uint8_t> v(n, 7), vbig(n, 7);
    size_t colliding = 0, batches = 0;
    for (size_t lo = 0; lo < n; batches++) { /* batches of 1, 2, 3, 4, 1, ... */
        size_t m = std::min(n - lo, batches % 4 + 1);
        cr_assert_eq(b.tdm->states(&q[2 * lo], m, &v[lo]), 0, "%s", b.tdm->error().c_str());
        lo += m;
    }
    cr_assert_eq(b.tdm->requests, 0, "batches of at most 4 answered in process, not %llu requests",
                 (unsigned long long)b.tdm->requests);
    cr_assert_eq(b.tdm->local_batches, batches);
    cr_assert_eq(b.tdm->states(q.data(), n, vbig.data()), 0, "%s", b.tdm->error().c_str());
    cr_assert_eq(b.tdm->requests, 5, "300 configurations go to tandemd in 5 requests, not %llu",
                 (unsigned long long)b.tdm->requests);
    for (size_t i = 0; i < n; i++) {
        int want = !arm_oracle_collides(&q[2 * i]);
        colliding += !want;
        cr_assert_eq(v[i], want, "seed=%llu config %zu (%.17g %.17g): local %d, oracle %d", (unsigned long long)seed, i,
                     q[2 * i], q[2 * i + 1], v[i], want);
        cr_assert_eq(vbig[i], want, "seed=%llu config %zu: tandemd %d, oracle %d", (unsigned long long)seed, i, vbig[i],
                     want);
    }
    cr_assert(colliding > 10 && colliding < n - 10, "a test that means something: %zu of %zu colliding", colliding, n);
    cr_assert_eq(b.tdm->checks, 2 * n);
    /* a non-finite configuration: an error, as tandemd's */
    double bad[2] = {NAN, 0};
    uint8_t vb = 7;
    cr_assert_eq(b.tdm->states(bad, 1, &vb), -1);
    cr_assert(strstr(b.tdm->error().c_str(), "local engine"), "%s", b.tdm->error().c_str());
}

/* tandem_checker's local probes: an any-state motion whose first 4 states of the
 * any-state order collide in one is answered locally with that state; the others go to
 * tandemd; motions asked for their first colliding state all go to tandemd. */
Test(ompl_checker, local_probes_answer_as_the_oracle)
{
    both b;
    local_copy lc;
    cr_assert_eq(b.tdm->answer_states_locally(lc.l, lc.s, 0, 4), 0, "%s", b.tdm->error().c_str());
    gen_rng g = {seed ^ 0x9b0bull};
    const size_t n = 200;
    std::vector<double> ab(4 * n);
    for (size_t i = 0; i < n; i++) {
        random_config(&g, &ab[4 * i]);
        if (i % 2) random_config(&g, &ab[4 * i + 2]);
        else
            for (int j = 0; j < 2; j++) ab[4 * i + 2 + j] = ab[4 * i + j] + gen_range(&g, -0.3, 0.3);
    }
    std::vector<int64_t> fany(n), one(1), ffirst(n);
    /* in batches of 1 (a planner's) and one batch of the rest */
    for (size_t i = 0; i < n / 2; i++) {
        cr_assert_eq(b.tdm->motions(&ab[4 * i], 1, RES, false, one.data(), NULL), 0, "%s", b.tdm->error().c_str());
        fany[i] = one[0];
    }
    cr_assert_eq(b.tdm->motions(&ab[4 * (n / 2)], n - n / 2, RES, false, &fany[n / 2], NULL), 0, "%s",
                 b.tdm->error().c_str());
    uint64_t states = 0, local = b.tdm->local_motions, requests = b.tdm->requests;
    size_t colliding = 0;
    for (size_t i = 0; i < n; i++) {
        const double *a = &ab[4 * i], *e = a + 2;
        long nk = 0;
        long k = arm_oracle_motion(a, e, RES, &nk);
        states += (uint64_t)nk;
        colliding += k >= 0;
        cr_assert_eq(fany[i] >= 0, k >= 0, "seed=%llu motion %zu: tandem (any) %lld, oracle %ld",
                     (unsigned long long)seed, i, (long long)fany[i], k);
        if (fany[i] >= 0) {
            cr_assert_lt(fany[i], nk);
            double t = (double)fany[i] / (double)(nk - 1), q[2] = {a[0] + t * (e[0] - a[0]), a[1] + t * (e[1] - a[1])};
            cr_assert(arm_oracle_collides(q), "motion %zu: state %lld is free", i, (long long)fany[i]);
        }
    }
    cr_assert(colliding > 10 && colliding < n - 10, "%zu of %zu motions colliding", colliding, n);
    cr_assert(local > 0 && local < colliding, "%llu of %zu colliding motions answered by their probes",
              (unsigned long long)local, colliding);
    cr_assert(requests < n / 2 + 1, "the probes' motions sent nothing: %llu requests", (unsigned long long)requests);
    cr_assert_eq(b.tdm->checks, states, "checks count every state of every motion");
    /* first colliding states: tandemd's, none local */
    cr_assert_eq(b.tdm->motions(ab.data(), n, RES, true, ffirst.data(), NULL), 0, "%s", b.tdm->error().c_str());
    cr_assert_eq(b.tdm->local_motions, local);
    for (size_t i = 0; i < n; i++) {
        long nk = 0;
        cr_assert_eq(ffirst[i], arm_oracle_motion(&ab[4 * i], &ab[4 * i + 2], RES, &nk), "motion %zu", i);
    }
}

Test(ompl_checker, motions_in_batches_equal_the_oracle)
{
    both b;
    gen_rng g = {seed ^ 0x5eedull};
    const size_t n = 200;
    std::vector<double> ab(4 * n), lt(2 * n, NAN), lf(2 * n, NAN);
    for (size_t i = 0; i < n; i++) {
        random_config(&g, &ab[4 * i]);
        /* ends near the start as often as far, so that short free motions occur */
        if (i % 2) random_config(&g, &ab[4 * i + 2]);
        else
            for (int j = 0; j < 2; j++) ab[4 * i + 2 + j] = ab[4 * i + j] + gen_range(&g, -0.3, 0.3);
    }
    std::vector<int64_t> ft(n), ff(n), fany(n);
    cr_assert_eq(b.tdm->motions(ab.data(), n, RES, true, ft.data(), lt.data()), 0, "%s", b.tdm->error().c_str());
    cr_assert_eq(b.fcl->motions(ab.data(), n, RES, true, ff.data(), lf.data()), 0, "%s", b.fcl->error().c_str());
    cr_assert_eq(b.fcl->motions(ab.data(), n, RES, false, fany.data(), NULL), 0);
    uint64_t states = 0;
    size_t free_motions = 0, start_colliding = 0;
    for (size_t i = 0; i < n; i++) {
        const double *a = &ab[4 * i], *e = a + 2;
        long nk = 0;
        long k = arm_oracle_motion(a, e, RES, &nk);
        states += (uint64_t)nk;
        free_motions += k < 0;
        start_colliding += k == 0;
        cr_assert_eq(ft[i], k, "seed=%llu motion %zu: tandem %lld, oracle %ld", (unsigned long long)seed, i,
                     (long long)ft[i], k);
        cr_assert_eq(ff[i], k, "seed=%llu motion %zu: fcl %lld, oracle %ld", (unsigned long long)seed, i,
                     (long long)ff[i], k);
        /* any order: colliding exactly when the oracle says, at a state that collides */
        cr_assert_eq(fany[i] >= 0, k >= 0, "motion %zu: fcl (any order) %lld, oracle %ld", i, (long long)fany[i], k);
        if (fany[i] >= 0) {
            double t = (double)fany[i] / (double)(nk - 1), q[2] = {a[0] + t * (e[0] - a[0]), a[1] + t * (e[1] - a[1])};
            cr_assert(arm_oracle_collides(q), "motion %zu: fcl's state %lld is free", i, (long long)fany[i]);
        }
        /* the last free state: k - 1, the end when free, untouched when k = 0 */
        for (int j = 0; j < 2; j++) {
            double want = k < 0 ? e[j] : a[j] + (double)(k - 1) / (double)(nk - 1) * (e[j] - a[j]);
            if (k == 0) {
                cr_assert(isnan(lt[2 * i + j]) && isnan(lf[2 * i + j]), "motion %zu: k = 0 leaves last_free", i);
            } else {
                cr_assert_float_eq(lt[2 * i + j], want, 1e-12, "motion %zu joint %d: tandem last free", i, j);
                cr_assert_float_eq(lf[2 * i + j], want, 1e-12, "motion %zu joint %d: fcl last free", i, j);
            }
        }
    }
    cr_assert(free_motions > 10 && free_motions < n - 10, "%zu of %zu motions free", free_motions, n);
    cr_assert(start_colliding > 0 && start_colliding < n / 2);
    cr_assert_eq(b.tdm->checks, states, "checks count every state of every motion");
    cr_assert_eq(b.fcl->checks, 2 * states);
    cr_assert(b.tdm->requests > 1, "max_motion_states 3000 must split the batch");
}

Test(ompl_checker, ompl_faces_equal_the_oracle)
{
    both b;
    gen_rng g = {seed ^ 0xfaceull};
    auto space = std::make_shared<ob::RealVectorStateSpace>(2);
    ob::RealVectorBounds bounds(2);
    bounds.setLow(0, -3.14);
    bounds.setHigh(0, 3.14);
    bounds.setLow(1, -2.6);
    bounds.setHigh(1, 2.6);
    space->setBounds(bounds);
    auto si = std::make_shared<ob::SpaceInformation>(space);
    plan_checker *checkers[2] = {b.tdm.get(), b.fcl.get()};
    const char *names[2] = {"tandem", "fcl"};
    ob::State *s1 = si->allocState(), *s2 = si->allocState(), *last = si->allocState();
    auto v = [](ob::State *s) { return s->as<ob::RealVectorStateSpace::StateType>()->values; };
    for (int which = 0; which < 2; which++) {
        checker_validity valid(si, checkers[which]);
        checker_motion motion(si, checkers[which], RES);
        size_t lastvalid_mid = 0;
        for (int i = 0; i < 150; i++) {
            double a[2], e[2];
            random_config(&g, a);
            if (i % 2) random_config(&g, e);
            else
                for (int j = 0; j < 2; j++) e[j] = a[j] + gen_range(&g, -0.3, 0.3);
            for (int j = 0; j < 2; j++) {
                v(s1)[j] = a[j];
                v(s2)[j] = e[j];
            }
            cr_assert_eq(valid.isValid(s1), !arm_oracle_collides(a), "%s isValid, config %d", names[which], i);
            long nk = 0;
            long k = arm_oracle_motion(a, e, RES, &nk);
            cr_assert_eq(motion.checkMotion(s1, s2), k < 0, "%s checkMotion(s1, s2), motion %d: oracle %ld",
                         names[which], i, k);
            v(last)[0] = v(last)[1] = NAN;
            std::pair<ob::State *, double> lv(last, -1.0);
            cr_assert_eq(motion.checkMotion(s1, s2, lv), k < 0, "%s checkMotion(s1, s2, lastValid), motion %d",
                         names[which], i);
            if (k < 0) continue;
            double t = k == 0 ? 0.0 : (double)(k - 1) / (double)(nk - 1);
            cr_assert_float_eq(lv.second, t, 1e-15, "%s motion %d: lastValid fraction %g, want %g (k %ld of %ld)",
                               names[which], i, lv.second, t, k, nk);
            for (int j = 0; j < 2; j++)
                cr_assert_float_eq(v(last)[j], a[j] + t * (e[j] - a[j]), 1e-12, "%s motion %d joint %d: lastValid state",
                                   names[which], i, j);
            lastvalid_mid += k > 1;
        }
        cr_assert(lastvalid_mid > 5, "%s: %zu motions collided past their second state", names[which], lastvalid_mid);
        cr_assert_eq(checkers[which]->error(), "", "%s: %s", names[which], checkers[which]->error().c_str());
    }
    si->freeState(s1);
    si->freeState(s2);
    si->freeState(last);
}

/* robot/ loads a mesh once for the elements of one path and scale (tdm_robot_elems.owner):
 * the FCL reference takes the meshes so loaded and gives those elements one geometry,
 * and an element of the same file at another scale its own. */
Test(ompl_checker, fcl_geoms_of_repeated_meshes)
{
    write_file("tet.obj", "v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 3 2\nf 1 2 4\nf 2 3 4\nf 1 4 3\n");
    write_file("rep.urdf",
               "<robot name='rep'><link name='a'>"
               "<collision><geometry><mesh filename='tet.obj'/></geometry></collision>"
               "<collision><origin xyz='0.3 0 0'/><geometry><mesh filename='tet.obj' scale='2 2 2'/></geometry>"
               "</collision></link>"
               "<joint name='j' type='revolute'><parent link='a'/><child link='b'/><origin xyz='0 0 1'/>"
               "<axis xyz='0 0 1'/><limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
               "<link name='b'><collision><geometry><mesh filename='tet.obj'/></geometry></collision></link></robot>");
    write_file("rep.yaml", "world:\n  collision_objects: []\n");
    char err[512];
    tdm_robot *robot;
    tdm_planning_scene *ps;
    tdm_robot_scene *rs;
    tdm_fcl_meshes meshes;
    std::vector<tdm_fcl_geom> geoms;
    cr_assert_eq(tdm_robot_load(path("rep.urdf"), NULL, &robot, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tdm_planning_scene_read(path("rep.yaml"), &ps, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tdm_robot_scene_create(robot, ps, tdm_fcl_load_mesh, &meshes, TDM_PRIMITIVE_TOLERANCE, &rs, err,
                                        sizeof err),
                 0, "%s", err);
    cr_assert_eq(meshes.meshes.size(), 2u, "two distinct (path, scale): two loads");
    cr_assert_eq(tdm_fcl_robot_geoms(robot, meshes.meshes, &geoms, err, sizeof err), 0, "%s", err);
    cr_assert_eq(geoms.size(), 3u);
    cr_assert(geoms[2] == geoms[0], "link b's element shares link a's first geometry");
    cr_assert(geoms[1] != geoms[0], "the scaled element has its own");
    cr_assert(geoms[0] && geoms[1]);
    tdm_robot_scene_destroy(rs);
    tdm_planning_scene_free(ps);
    tdm_robot_free(robot);
}
