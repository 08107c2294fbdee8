/* Attached collision objects (moveit_msgs/AttachedCollisionObject in a planning
 * scene's robot state): an object held by a link moves with it, is checked against
 * the world and the robot except its link and touch links, and follows the ACM.
 *
 *   a_held_object_answers_as_the_oracle   tests/arm_oracle.h's arm holding two boxes
 *                                         on link2, in five spellings of the scene
 *                                         (touch links, an ACM entry, the header frame
 *                                         the link itself, the planning frame with an
 *                                         object pose, another link): every
 *                                         configuration's bool answer on the CPU engine
 *                                         equals the oracle's (separating axes in
 *                                         double); the three frames give the same
 *                                         answers, object pairs included
 *   attached_objects_follow_moveit_rules  which pairs are never checked, each written
 *                                         out: own link, touch links, one object's
 *                                         shapes, objects on one link, the ACM by id
 *   attached_to_no_link_is_refused        a link_name the robot lacks: an error naming
 *                                         the object, no scene
 *   configs_on_gpu_match_cpu_engine       the held scene's configurations (and with a
 *                                         plane) on the GPU
 *                                         engine (skipped without one), bool and
 *                                         contacts, equal to the CPU engine's
 *   header_frames_are_named_as_moveit_names_them
 *                                         a world object in a fixed frame (also
 *                                         "/table"), in an earlier object's frame, in
 *                                         an attached object's, in subframes of both
 *                                         (OBJECT/NAME), in the planning frame
 *                                         named by the SRDF's root virtual joint
 *                                         answers as the same object
 *                                         given in the planning frame; unknown frames
 *                                         and subframes, later objects, another link's
 *                                         virtual joint:
 *                                         refused, naming the object and the frame
 *   planes_answer_as_the_oracle           world planes (shape_msgs/Plane, two-sided as
 *                                         FCL's): the arm against a level and a
 *                                         tilted plane, as the oracle says
 *   planes_cover_a_prismatic_joints_reach a cart sliding 5 m meets a plane wherever
 *                                         it is (the square reaches that far)
 *   check_command_reads_attached_objects  `tandem check --urdf` on the held scene
 *                                         answers as the oracle; a link_name of no
 *                                         link: exit 1, the world file and the object
 *                                         named, nothing written */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include "gen.h"
#include "spawn.h"
#include "arm_oracle.h"
#include "robot/robot_scene.h"
#include "workpile/sched.h"

static uint64_t seed;
static tdm_robot *robot;

static int no_meshes(void *ctx, const char *uri, char **path, char *why, size_t whylen)
{
    (void)ctx;
    (void)path;
    snprintf(why, whylen, "no mesh expected, got %s", uri);
    return TDM_EINVAL;
}

static void suite_init(void)
{
    const char *e = getenv("TDM_TEST_SEED");
    seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL);
    cr_log_info("TDM_TEST_SEED=%llu", (unsigned long long)seed);
    tdm_robot_source src = {arm_urdf_text, strlen(arm_urdf_text), "arm.urdf", arm_srdf_text, strlen(arm_srdf_text),
                            "arm.srdf", no_meshes, NULL};
    char err[512];
    cr_assert_eq(tdm_robot_parse(&src, &robot, err, sizeof err), TDM_OK, "%s", err);
}

static void suite_fini(void) { tdm_robot_free(robot); }

TestSuite(attached, .init = suite_init, .fini = suite_fini, .timeout = 240);

#define HELD arm_held_boxes
#define J1 ARM_HELD_J1
#define J2 ARM_HELD_J2

static char *held_scene(const char *frame, const char *pose, const char *touch, const char *acm)
{
    char *t = arm_held_scene("link2", frame, pose, touch, acm);
    cr_assert_not_null(t);
    return t;
}

static tdm_robot_scene *scene_of(const char *yaml, tdm_planning_scene **ps_out)
{
    tdm_planning_scene *ps = NULL;
    tdm_robot_scene *rs = NULL;
    char err[512];
    cr_assert_eq(tdm_planning_scene_parse(yaml, strlen(yaml), "held", &ps, err, sizeof err), TDM_OK, "%s\n%s", err,
                 yaml);
    cr_assert_eq(tdm_robot_scene_create(robot, ps, NULL, NULL, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err), TDM_OK,
                 "%s", err);
    if (ps_out) *ps_out = ps;
    else tdm_planning_scene_free(ps);
    return rs;
}

static tdm_sched *cpu_engine(void)
{
    tdm_sched_config c = tdm_sched_config_default();
    c.kind = TDM_BACKEND_CPU;
    c.threads = 2;
    c.calibrate = 0;
    tdm_sched *e = NULL;
    char why[320];
    cr_assert_eq(tdm_sched_create(&c, &e, why, sizeof why), TDM_OK, "%s", why);
    return e;
}

#define N_CFG 4000

static double *random_configs(size_t n, uint64_t salt)
{
    gen_rng g = {seed ^ salt};
    double *q = malloc(2 * n * sizeof *q);
    cr_assert_not_null(q);
    for (size_t i = 0; i < n; i++) {
        q[2 * i] = gen_range(&g, -3.14, 3.14);
        q[2 * i + 1] = gen_range(&g, -2.6, 2.6);
    }
    return q;
}

static void run_configs(tdm_sched *e, const tdm_robot_scene *rs, const double *q, size_t n, tdm_mode mode,
                        uint32_t cap, tdm_sched_result *out)
{
    tdm_sched_query proto = {rs->scene, NULL, mode, cap, NULL, NULL};
    cr_assert_eq(tdm_sched_run_configs(e, &proto, &rs->kin, q, n, out), TDM_OK);
}

Test(attached, a_held_object_answers_as_the_oracle)
{
    /* link2's pose at the scene's state, in the planning frame and in link1's: the
     * quaternions of Rz(J1) Ry(J2) and of Ry(J2) */
    const double sz = sin(J1 / 2), cz = cos(J1 / 2), sy = sin(J2 / 2), cy = cos(J2 / 2);
    char in_world[256], in_link1[256];
    snprintf(in_world, sizeof in_world,
             "        pose: {position: [0, 0, 0.5], orientation: [%.17g, %.17g, %.17g, %.17g]}\n", -sz * sy, cz * sy,
             sz * cy, cz * cy);
    snprintf(in_link1, sizeof in_link1, "        pose: {position: [0, 0, 0.4], orientation: [0, %.17g, 0, %.17g]}\n", sy,
             cy);
    static const char acm_post[] = "allowed_collision_matrix:\n"
                                   "  entry_names: [held, post]\n"
                                   "  entry_values: [[false, true], [true, false]]\n";
    struct {
        const char *what, *frame, *pose, *touch, *acm;
        int link1_checked, post_checked;
    } v[5] = {
        {"the link's frame", "link2", "", "[]", "", 1, 1},
        {"link1 a touch link", "link2", "", "[link1]", "", 0, 1},
        {"the post allowed by the ACM", "link2", "", "[]", acm_post, 1, 0},
        {"the planning frame and an object pose", "world", in_world, "[]", "", 1, 1},
        {"link1's frame and an object pose", "link1", in_link1, "[]", "", 1, 1},
    };
    double *q = random_configs(N_CFG, 0xa77ac4ull);
    tdm_sched *e = cpu_engine();
    tdm_sched_result *first = malloc(N_CFG * sizeof *first), *got = malloc(N_CFG * sizeof *got);
    cr_assert(first && got);
    for (int k = 0; k < 5; k++) {
        char *yaml = held_scene(v[k].frame, v[k].pose, v[k].touch, v[k].acm);
        tdm_robot_scene *rs = scene_of(yaml, NULL);
        cr_assert_eq(rs->n_elements, 3);
        cr_assert_eq(rs->n_movable, 5, "three elements and the held object's two boxes");
        cr_assert_eq(rs->n_objects, 6);
        for (uint32_t id = 3; id < 5; id++) {
            cr_assert(rs->objs[id].movable && rs->objs[id].attached);
            cr_assert_eq(rs->objs[id].index, 0);
            cr_assert_eq(rs->objs[id].shape, id - 3);
            cr_assert_eq(rs->kin.elems[id].link, 2, "the boxes move with link2");
        }
        run_configs(e, rs, q, N_CFG, TDM_MODE_BOOL, 1, got);
        size_t colliding = 0, held_only = 0, by_link1 = 0, near = 0;
        for (size_t i = 0; i < N_CFG; i++) {
            const double *qi = q + 2 * i;
            int lo = arm_oracle_holding(qi, HELD, 2, v[k].link1_checked, v[k].post_checked, -1e-7),
                hi = arm_oracle_holding(qi, HELD, 2, v[k].link1_checked, v[k].post_checked, 1e-7);
            if (lo != hi) { /* within 1e-7 of touching: float rounding may go either way */
                near++;
                continue;
            }
            cr_assert_eq(got[i].colliding, lo, "seed=%llu %s, configuration %zu (%.17g, %.17g): got %u, oracle %d",
                         (unsigned long long)seed, v[k].what, i, qi[0], qi[1], got[i].colliding, lo);
            if (got[i].colliding)
                cr_assert(!tdm_robot_scene_allowed(rs, got[i].object_a, got[i].object_b), "%s: an allowed pair (%u, %u)",
                          v[k].what, got[i].object_a, got[i].object_b);
            colliding += lo;
            held_only += lo && !arm_oracle_collides(qi);
            by_link1 += lo && !arm_oracle_holding(qi, HELD, 2, 0, v[k].post_checked, 0);
        }
        cr_log_info("%s: %zu of %d configurations colliding, %zu by the held boxes alone, %zu by link1 alone, %zu "
                    "within 1e-7 of touching",
                    v[k].what, colliding, N_CFG, held_only, by_link1, near);
        cr_assert(near < N_CFG / 100);
        cr_assert(colliding > 0 && colliding < N_CFG);
        cr_assert(held_only > 0, "%s: the held boxes must matter", v[k].what);
        if (v[k].link1_checked) cr_assert(by_link1 > 0, "%s: the hanger must reach link1", v[k].what);
        if (k == 0) memcpy(first, got, N_CFG * sizeof *got);
        if (k >= 3) /* another frame, the same boxes: the same answers, pairs included */
            for (size_t i = 0; i < N_CFG; i++)
                cr_assert(got[i].colliding == first[i].colliding && got[i].object_a == first[i].object_a &&
                              got[i].object_b == first[i].object_b,
                          "%s, configuration %zu: (%u %u %u) against the link's frame's (%u %u %u)", v[k].what, i,
                          got[i].colliding, got[i].object_a, got[i].object_b, first[i].colliding, first[i].object_a,
                          first[i].object_b);
        tdm_robot_scene_destroy(rs);
        free(yaml);
    }
    free(first);
    free(got);
    free(q);
    tdm_sched_destroy(e);
}

/* Ids: 0 base_link, 1 link1, 2 link2 (the arm's elements); 3, 4 cup's two shapes
 * (on link2, touch link link1); 5 lid (on link2); 6 strap (on link1); 7 the post. */
Test(attached, attached_objects_follow_moveit_rules)
{
    static const char yaml[] =
        "robot_state:\n"
        "  attached_collision_objects:\n"
        "    - link_name: link2\n"
        "      touch_links: [link1]\n"
        "      object:\n"
        "        id: cup\n"
        "        header: {frame_id: link2}\n"
        "        primitives: [{type: box, dimensions: [0.1, 0.1, 0.1]}, {type: sphere, dimensions: [0.05]}]\n"
        "        primitive_poses: [{position: [0.6, 0, 0], orientation: [0, 0, 0, 1]},\n"
        "                          {position: [0.7, 0, 0], orientation: [0, 0, 0, 1]}]\n"
        "    - link_name: link2\n"
        "      object:\n"
        "        id: lid\n"
        "        header: {frame_id: link2}\n"
        "        primitives: [{type: cylinder, dimensions: [0.02, 0.05]}]\n"
        "        primitive_poses: [{position: [0.6, 0, 0.06], orientation: [0, 0, 0, 1]}]\n"
        "    - link_name: link1\n"
        "      object:\n"
        "        id: strap\n"
        "        header: {frame_id: link1}\n"
        "        primitives: [{type: box, dimensions: [0.1, 0.01, 0.02]}]\n"
        "        primitive_poses: [{position: [0, 0, 0.2], orientation: [0, 0, 0, 1]}]\n"
        "world:\n"
        "  collision_objects:\n"
        "    - id: post\n"
        "      primitives: [{type: box, dimensions: [0.15, 0.15, 0.8]}]\n"
        "      primitive_poses: [{position: [0.45, 0.1, 0.4], orientation: [0, 0, 0, 1]}]\n"
        "allowed_collision_matrix:\n"
        "  entry_names: [strap, post, lid, base_link]\n"
        "  entry_values: [[false, true, false, false], [true, false, false, false],\n"
        "                 [false, false, false, true], [false, false, true, false]]\n";
    tdm_robot_scene *rs = scene_of(yaml, NULL);
    cr_assert_eq(rs->n_movable, 7);
    cr_assert_eq(rs->n_objects, 8);
    /* never checked: 1 of each pair below; the rest checked */
    static const char *const rule[8][8] = {
        [0][1] = "SRDF", [1][2] = "SRDF",
        [2][3] = "cup's own link", [2][4] = "cup's own link", [1][3] = "cup's touch link", [1][4] = "cup's touch link",
        [3][4] = "one object's shapes", [3][5] = "one link's objects", [4][5] = "one link's objects",
        [2][5] = "lid's own link", [0][5] = "the ACM (lid, base_link)",
        [1][6] = "strap's own link", [6][7] = "the ACM (strap, post)",
    };
    size_t checked = 0;
    for (uint32_t a = 0; a < 8; a++)
        for (uint32_t b = a + 1; b < 8; b++) {
            int want = b < rs->n_movable || a < rs->n_movable ? rule[a][b] != NULL : 1;
            cr_assert_eq(tdm_robot_scene_allowed(rs, a, b), want, "pair (%u, %u): want %s", a, b,
                         rule[a][b] ? rule[a][b] : want ? "fixed pair" : "checked");
            checked += !want;
        }
    cr_assert_eq(rs->scene->n_checks, checked);
    cr_assert_eq(checked, 15);
    tdm_robot_scene_destroy(rs);
}

Test(attached, attached_to_no_link_is_refused)
{
    char *yaml = held_scene("link2", "", "[]", "");
    char *at = strstr(yaml, "link_name: link2");
    cr_assert_not_null(at);
    memcpy(at, "link_name: hand2", 16);
    tdm_planning_scene *ps = NULL;
    tdm_robot_scene *rs = (tdm_robot_scene *)1;
    char err[512] = "";
    cr_assert_eq(tdm_planning_scene_parse(yaml, strlen(yaml), "held", &ps, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_robot_scene_create(robot, ps, NULL, NULL, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err),
                 TDM_EINVAL);
    cr_assert_null(rs);
    cr_assert_str_eq(err, "attached object 'held': link_name 'hand2' is not a link of the robot");
    tdm_planning_scene_free(ps);
    free(yaml);
}

/* scene_of for a scene that must be refused: *err gets the message. */
static void scene_refused(const tdm_robot *r, const char *yaml, char *err, size_t errlen)
{
    tdm_planning_scene *ps = NULL;
    tdm_robot_scene *rs = NULL;
    cr_assert_eq(tdm_planning_scene_parse(yaml, strlen(yaml), "held", &ps, err, errlen), TDM_OK, "%s\n%s", err, yaml);
    int rc = tdm_robot_scene_create(r, ps, NULL, NULL, TDM_PRIMITIVE_TOLERANCE, &rs, err, errlen);
    cr_assert_neq(rc, TDM_OK, "the scene should be refused:\n%s", yaml);
    cr_assert_null(rs);
    tdm_planning_scene_free(ps);
}

/* The held scene with its post written in another frame: `post` replaced by OBJECTS (a
 * YAML list's items, the post's among them), then EXTRA at the end, the held object's mapping
 * given HELD's lines too. malloc'd. */
static char *post_framed_held(const char *held, const char *objects, const char *extra)
{
    char *plain = held_scene("link2", held, "[]", "");
    const char *from = "    - id: post\n"
                       "      header: {frame_id: world}\n"
                       "      primitives: [{type: box, dimensions: [0.15, 0.15, 0.8]}]\n"
                       "      primitive_poses: [{position: [0.45, 0.1, 0.4], orientation: [0, 0, 0, 1]}]\n";
    char *at = strstr(plain, from);
    cr_assert_not_null(at);
    char *t = malloc(strlen(plain) + strlen(objects) + strlen(extra) + 1);
    cr_assert_not_null(t);
    sprintf(t, "%.*s%s%s%s", (int)(at - plain), plain, objects, at + strlen(from), extra);
    free(plain);
    return t;
}
static char *post_framed(const char *objects, const char *extra) { return post_framed_held("", objects, extra); }

/* The post in its own frame F: `table` at (0.45, 0.1, 0) turned a quarter about z, the post
 * 0.4 up in it, turned back: the same place as in the planning frame. */
#define POST_IN(F)                                                                                                  \
    "    - id: post\n"                                                                                              \
    "      header: {frame_id: " F "}\n"                                                                             \
    "      primitives: [{type: box, dimensions: [0.15, 0.15, 0.8]}]\n"                                             \
    "      primitive_poses: [{position: [0, 0, 0.4], orientation: [0, 0, -0.7071067811865476, "                     \
    "0.7071067811865476]}]\n"
#define TABLE_FRAME                                                                                                 \
    "fixed_frame_transforms:\n"                                                                                     \
    "  - child_frame_id: table\n"                                                                                   \
    "    transform: {translation: [0.45, 0.1, 0], rotation: [0, 0, 0.7071067811865476, 0.7071067811865476]}\n"
/* a world object `stand` whose own frame is `table`'s (its pose; its one box 10 m below, out of
 * reach), its subframe `top` where the post's centre is, turned as the planning frame */
#define STAND(NAME)                                                                                                 \
    "    - id: " NAME "\n"                                                                                          \
    "      header: {frame_id: world}\n"                                                                             \
    "      pose: {position: [0.45, 0.1, 0], orientation: [0, 0, 0.7071067811865476, 0.7071067811865476]}\n"       \
    "      primitives: [{type: box, dimensions: [0.01, 0.01, 0.01]}]\n"                                            \
    "      primitive_poses: [{position: [0, 0, -10], orientation: [0, 0, 0, 1]}]\n"                                \
    "      subframe_names: [top]\n"                                                                                 \
    "      subframe_poses: [{position: [0, 0, 0.4], orientation: [0, 0, -0.7071067811865476, "                     \
    "0.7071067811865476]}]\n"
/* the post centred on frame F, turned as F */
#define POST_AT(F)                                                                                                  \
    "    - id: post\n"                                                                                              \
    "      header: {frame_id: " F "}\n"                                                                             \
    "      primitives: [{type: box, dimensions: [0.15, 0.15, 0.8]}]\n"                                             \
    "      primitive_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n"

/* Header frames named as MoveIt names them (robot/robot_scene.h, "Frames"): the held scene's post
 * written in a fixed frame of the scene (also as "/table"), in the frame of a world object
 * before it and in its subframe, in the held object's frame and in its subframe, and in the
 * planning frame by the name the SRDF's root virtual joint gives it,
 * answers as the post written in the planning frame, every configuration (object pairs too,
 * but where another object comes first); a frame the scene lacks, a world object after it, a
 * virtual joint of another link's parent frame, an attached object in a world object's frame,
 * a subframe the object lacks or of a later object are refused with an error naming the object
 * and the frame (before, the unknown ones were the
 * planning frame: a misspelt frame moved the post silently). */
Test(attached, header_frames_are_named_as_moveit_names_them)
{
    static const char srdf_fmt[] = "<robot name='arm2'><virtual_joint name='v' type='floating' parent_frame='%s' "
                                   "child_link='%s'/>%s</robot>\n";
    tdm_robot *odom[2] = {NULL, NULL}; /* an SRDF whose root virtual joint's parent is /odom; one of link1's */
    for (int k = 0; k < 2; k++) {
        char srdf[1024], err[512];
        snprintf(srdf, sizeof srdf, srdf_fmt, "/odom", k ? "link1" : "base_link",
                 "<disable_collisions link1='link1' link2='link2' reason='Adjacent'/>"
                 "<disable_collisions link1='base_link' link2='link1' reason='Adjacent'/>");
        tdm_robot_source src = {arm_urdf_text, strlen(arm_urdf_text), "arm.urdf", srdf, strlen(srdf), "arm.srdf",
                                no_meshes, NULL};
        cr_assert_eq(tdm_robot_parse(&src, &odom[k], err, sizeof err), TDM_OK, "%s", err);
    }
    cr_assert_null(robot->planning_frame, "no virtual joint, no planning frame name");
    cr_assert_str_eq(odom[0]->planning_frame, "odom", "the root's virtual joint names the planning frame");
    cr_assert_null(odom[1]->planning_frame, "a virtual joint of another link is ignored, as MoveIt skips it");

    enum { PLAIN, FIXED, SLASHED, OBJECT, SRDF_NAME, ATTACHED, SUBFRAME, ATTACHED_SUBFRAME, N_SCENES };
    /* ATTACHED: the post in the held object's own frame, link2's at the scene's state (J1, J2):
     * Rz(J1) Ry(J2) at (0, 0, 0.5) */
    tdm_quat qz = {0, 0, sin(J1 / 2), cos(J1 / 2)}, qy = {0, sin(J2 / 2), 0, cos(J2 / 2)}, q2 = tdm_quat_mul(qz, qy);
    tdm_xform link2 = tdm_xform_from_pose(tdm_d3(0, 0, 0.5), q2),
              post = tdm_xform_from_pose(tdm_d3(0.45, 0.1, 0.4), (tdm_quat){0, 0, 0, 1}),
              in_held = tdm_xform_rel(&link2, &post);
    char post_in_held[512];
    snprintf(post_in_held, sizeof post_in_held,
             "    - id: post\n"
             "      header: {frame_id: held}\n"
             "      primitives: [{type: box, dimensions: [0.15, 0.15, 0.8]}]\n"
             "      primitive_poses: [{position: [%.17g, %.17g, %.17g], orientation: [%.17g, %.17g, %.17g, %.17g]}]\n",
             in_held.t.x, in_held.t.y, in_held.t.z, -q2.x, -q2.y, -q2.z, q2.w);
    /* ATTACHED_SUBFRAME: the held object's subframe `grip` where the post's centre is */
    char grip[512];
    snprintf(grip, sizeof grip,
             "        subframe_names: [grip]\n"
             "        subframe_poses: [{position: [%.17g, %.17g, %.17g], orientation: [%.17g, %.17g, %.17g, %.17g]}]\n",
             in_held.t.x, in_held.t.y, in_held.t.z, -q2.x, -q2.y, -q2.z, q2.w);
    char *yaml[N_SCENES] = {
        held_scene("link2", "", "[]", ""),
        post_framed(POST_IN("table"), TABLE_FRAME),
        post_framed(POST_IN("/table"), TABLE_FRAME),
        post_framed(STAND("stand") POST_IN("stand"), ""),
        post_framed("    - id: post\n"
                    "      header: {frame_id: odom}\n"
                    "      primitives: [{type: box, dimensions: [0.15, 0.15, 0.8]}]\n"
                    "      primitive_poses: [{position: [0.45, 0.1, 0.4], orientation: [0, 0, 0, 1]}]\n",
                    ""), /* SRDF_NAME: at its plain place, in the frame named by the SRDF */
        post_framed(post_in_held, ""),
        post_framed(STAND("stand") POST_AT("stand/top"), ""),
        post_framed_held(grip, POST_AT("held/grip"), ""),
    };
    tdm_robot_scene *rs[N_SCENES];
    for (int k = 0; k < N_SCENES; k++) {
        tdm_planning_scene *ps = NULL;
        char err[512];
        cr_assert_eq(tdm_planning_scene_parse(yaml[k], strlen(yaml[k]), "held", &ps, err, sizeof err), TDM_OK, "%s",
                     err);
        cr_assert_eq(tdm_robot_scene_create(k == SRDF_NAME ? odom[0] : robot, ps, NULL, NULL, TDM_PRIMITIVE_TOLERANCE,
                                            &rs[k], err, sizeof err),
                     TDM_OK, "scene %d: %s", k, err);
        tdm_planning_scene_free(ps);
    }
    double *q = random_configs(N_CFG, 0xf7a3eull);
    tdm_sched *e = cpu_engine();
    tdm_sched_result *r[N_SCENES];
    size_t colliding = 0;
    for (int k = 0; k < N_SCENES; k++) {
        r[k] = malloc(N_CFG * sizeof *r[k]);
        cr_assert_not_null(r[k]);
        run_configs(e, rs[k], q, N_CFG, TDM_MODE_BOOL, 1, r[k]);
    }
    for (size_t i = 0; i < N_CFG; i++) {
        colliding += r[PLAIN][i].colliding;
        for (int k = 1; k < N_SCENES; k++) {
            cr_assert_eq(r[k][i].colliding, r[PLAIN][i].colliding, "scene %d, configuration %zu: %d, the plain post %d",
                         k, i, r[k][i].colliding, r[PLAIN][i].colliding);
            if (k == OBJECT || k == SUBFRAME || !r[k][i].colliding) continue; /* the post's id is one more */
            cr_assert(r[k][i].object_a == r[PLAIN][i].object_a && r[k][i].object_b == r[PLAIN][i].object_b,
                      "scene %d, configuration %zu: another pair", k, i);
        }
    }
    cr_log_info("%zu of %d configurations colliding, the same in the %d spellings", colliding, N_CFG, N_SCENES);
    cr_assert(colliding > N_CFG / 20 && colliding < N_CFG - N_CFG / 20, "the post must matter: %zu of %d", colliding,
              N_CFG);

    /* refused, each naming the object and the frame */
    struct {
        const tdm_robot *r;
        char *yaml;
        const char *want;
    } bad[] = {
        {robot, post_framed(POST_IN("shelf"), TABLE_FRAME),
         "world object 'post': header frame 'shelf' is unknown: not a link of the robot, an attached object, a world "
         "object before it (or a subframe of one, OBJECT/NAME), a fixed frame of the scene, or the planning frame "
         "(world)"},
        {robot, post_framed(POST_IN("stand") STAND("stand"), ""), "world object 'post': header frame 'stand' is unknown"},
        {robot, post_framed(POST_IN("post"), ""), "world object 'post': header frame 'post' is unknown"},
        {odom[1], post_framed(POST_IN("odom"), ""), "world object 'post': header frame 'odom' is unknown"},
        {odom[0], post_framed(POST_IN("odm"), ""),
         "world object 'post': header frame 'odm' is unknown: not a link of the robot, an attached object, a world "
         "object before it (or a subframe of one, OBJECT/NAME), a fixed frame of the scene, or the planning frame "
         "(world or odom)"},
        {robot, held_scene("hand", "", "[]", ""),
         "attached object 'held': header frame 'hand' is unknown: not a link of the robot, an attached object before "
         "it (or a subframe of one, OBJECT/NAME), a fixed frame of the scene, or the planning frame (world)"},
        {robot, held_scene("post", "", "[]", ""), "attached object 'held': header frame 'post' is unknown"},
        {robot, post_framed(STAND("stand") POST_AT("stand/lid"), ""),
         "world object 'post': header frame 'stand/lid' is unknown"},
        {robot, post_framed(POST_AT("stand/top") STAND("stand"), ""),
         "world object 'post': header frame 'stand/top' is unknown"},
        {robot, post_framed_held(grip, POST_AT("held/grip/"), ""),
         "world object 'post': header frame 'held/grip/' is unknown"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char err[512];
        scene_refused(bad[k].r, bad[k].yaml, err, sizeof err);
        cr_assert(!strncmp(err, bad[k].want, strlen(bad[k].want)), "case %zu: %s\nexpected: %s", k, err, bad[k].want);
        free(bad[k].yaml);
    }
    for (int k = 0; k < N_SCENES; k++) {
        free(r[k]);
        free(yaml[k]);
        tdm_robot_scene_destroy(rs[k]);
    }
    free(q);
    tdm_sched_destroy(e);
    tdm_robot_free(odom[0]);
    tdm_robot_free(odom[1]);
}

/* World planes (a x + b y + c z = d, as MoveIt places shape_msgs/Plane): the arm (no
 * held object) against a level plane above link1's top and a tilted one, each given in a
 * turned frame (the object's pose) to be read back through it:
 * every configuration answers as arm_oracle_plane says (those within 1e-7 of touching
 * set aside), and both answers occur. */
Test(attached, planes_answer_as_the_oracle)
{
    /* the plane in the planning frame, and the same plane as written in a frame turned a
       quarter about z and lifted 0.1: coefficients (a, b, c, d) of the frame's coordinates */
    static const struct {
        double world[4], local[4];
    } v[2] = {{{0, 0, 1, 0.62}, {0, 0, 1, 0.52}}, {{0.3, 0.2, 1, 0.55}, {0.2, -0.3, 1, 0.45}}};
    double *q = random_configs(N_CFG, 0x91a7eull);
    tdm_sched *e = cpu_engine();
    tdm_sched_result *got = malloc(N_CFG * sizeof *got);
    cr_assert_not_null(got);
    for (int k = 0; k < 2; k++) {
        char yaml[1024];
        snprintf(yaml, sizeof yaml,
                 "world:\n  collision_objects:\n    - id: plane\n      header: {frame_id: world}\n"
                 "      pose: {position: [0, 0, 0.1], orientation: [0, 0, 0.7071067811865476, 0.7071067811865476]}\n"
                 "      planes: [{coef: [%.17g, %.17g, %.17g, %.17g]}]\n"
                 "      plane_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n",
                 v[k].local[0], v[k].local[1], v[k].local[2], v[k].local[3]);
        tdm_robot_scene *rs = scene_of(yaml, NULL);
        cr_assert_eq(rs->n_objects, 4, "three elements and the plane");
        run_configs(e, rs, q, N_CFG, TDM_MODE_BOOL, 1, got);
        size_t colliding = 0, near = 0;
        for (size_t i = 0; i < N_CFG; i++) {
            const double *qi = q + 2 * i;
            int self = 0, lo = arm_oracle_plane(qi, v[k].world, -1e-7, &self),
                hi = arm_oracle_plane(qi, v[k].world, 1e-7, NULL);
            if (lo != hi) {
                near++;
                continue;
            }
            cr_assert_eq(got[i].colliding, lo, "seed=%llu plane %d, configuration %zu (%.17g, %.17g): got %u, oracle %d",
                         (unsigned long long)seed, k, i, qi[0], qi[1], got[i].colliding, lo);
            if (lo && !self) cr_assert_eq(got[i].object_b, 3, "the plane is object 3");
            colliding += lo && !self;
        }
        cr_log_info("plane %d: %zu of %d configurations on it (and not colliding with itself), %zu within 1e-7 of "
                    "touching", k, colliding, N_CFG, near);
        cr_assert(near < N_CFG / 100);
        cr_assert(colliding > N_CFG / 20 && colliding < N_CFG - N_CFG / 20, "the test needs both answers");
        tdm_robot_scene_destroy(rs);
    }
    free(got);
    free(q);
    tdm_sched_destroy(e);
}

/* A plane is a square over all the movable objects can reach: a cart on a prismatic joint
 * of +-5 m along y carries a box across the plane x = 0.3 wherever it is (the square,
 * centred where the root's origin projects onto the plane, must reach y = +-5), and never
 * meets the plane x = 0.5. */
Test(attached, planes_cover_a_prismatic_joints_reach)
{
    static const char urdf[] =
        "<robot name='cart'><link name='base'/>"
        "<joint name='slide' type='prismatic'><parent link='base'/><child link='cart'/><axis xyz='0 1 0'/>"
        "<limit lower='-5' upper='5'/></joint>"
        "<link name='cart'><collision><origin xyz='0.3 0 0'/><geometry><box size='0.1 0.1 0.1'/></geometry>"
        "</collision></link></robot>";
    tdm_robot_source src = {urdf, strlen(urdf), "cart.urdf", NULL, 0, NULL, no_meshes, NULL};
    tdm_robot *cart = NULL;
    char err[512];
    cr_assert_eq(tdm_robot_parse(&src, &cart, err, sizeof err), TDM_OK, "%s", err);
    const double q[6] = {-4.9, -2, 0, 0.7, 3, 4.9};
    tdm_sched *e = cpu_engine();
    for (int k = 0; k < 2; k++) {
        char yaml[512];
        snprintf(yaml, sizeof yaml,
                 "world:\n  collision_objects:\n    - id: wall\n      planes: [{coef: [1, 0, 0, %s]}]\n"
                 "      plane_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n",
                 k ? "0.5" : "0.3");
        tdm_planning_scene *ps = NULL;
        tdm_robot_scene *rs = NULL;
        cr_assert_eq(tdm_planning_scene_parse(yaml, strlen(yaml), "wall", &ps, err, sizeof err), TDM_OK, "%s", err);
        cr_assert_eq(tdm_robot_scene_create(cart, ps, NULL, NULL, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err), TDM_OK,
                     "%s", err);
        tdm_sched_result res[6];
        tdm_sched_query proto = {rs->scene, NULL, TDM_MODE_BOOL, 1, NULL, NULL};
        cr_assert_eq(tdm_sched_run_configs(e, &proto, &rs->kin, q, 6, res), TDM_OK);
        for (int i = 0; i < 6; i++)
            cr_assert_eq(res[i].colliding, k ? 0 : 1, "plane x = %s, the cart at y = %g: %u", k ? "0.5" : "0.3", q[i],
                         res[i].colliding);
        tdm_robot_scene_destroy(rs);
        tdm_planning_scene_free(ps);
    }
    tdm_sched_destroy(e);
    tdm_robot_free(cart);
}

/* The held scene, and the plane scene of planes_answer_as_the_oracle with the post and the
 * held object too, on the GPU engine: bool and contacts, every answer the CPU engine's. */
Test(attached, configs_on_gpu_match_cpu_engine)
{
    tdm_sched_config c = tdm_sched_config_default();
    c.kind = TDM_BACKEND_GPU;
    c.threads = 2;
    c.calibrate = 0;
    c.gpu_memory = 2ull << 30;
    tdm_sched *gpu = NULL;
    char why[320] = "";
    int rc = tdm_sched_create(&c, &gpu, why, sizeof why);
    if (rc == TDM_ENODEV) cr_skip_test("no GPU engine: %s", why);
    cr_assert_eq(rc, TDM_OK, "%s", why);
    char *yaml[2] = {held_scene("world", "        pose: {position: [0, 0, 0.5], orientation: [0, 0, 0, 1]}\n", "[]", ""),
                     held_scene("link2", "", "[]", "")};
    static const char plane[] = "    - id: tilted\n      planes: [{coef: [0.3, 0.2, 1, 0.55]}]\n"
                                "      plane_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n";
    char *with_plane = malloc(strlen(yaml[1]) + sizeof plane);
    cr_assert_not_null(with_plane);
    const char *list = strstr(yaml[1], "  collision_objects:\n");
    cr_assert_not_null(list);
    size_t head = (size_t)(list - yaml[1]) + strlen("  collision_objects:\n");
    sprintf(with_plane, "%.*s%s%s", (int)head, yaml[1], plane, yaml[1] + head);
    free(yaml[1]);
    yaml[1] = with_plane;
    tdm_sched *cpu = cpu_engine();
    const size_t n = 20000;
    double *q = random_configs(n, 0x6e0ull);
    tdm_sched_result *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    cr_assert(want && got);
    const tdm_mode modes[2] = {TDM_MODE_BOOL, TDM_MODE_CONTACTS};
    for (int k = 0; k < 2; k++) {
        tdm_robot_scene *rs = scene_of(yaml[k], NULL);
        cr_assert_eq(rs->n_objects, 6u + (uint32_t)k, "scene %d: the elements, the held boxes, the post (and the plane)",
                     k);
        for (uint32_t i = 0; i < rs->n_objects; i++) cr_assert_eq(tdm_sched_mesh_add(gpu, rs->bvhs[i]), TDM_OK);
        for (int m = 0; m < 2; m++) {
            tdm_sched_stats before, after;
            tdm_sched_get_stats(gpu, &before);
            run_configs(cpu, rs, q, n, modes[m], m ? 3 : 1, want);
            run_configs(gpu, rs, q, n, modes[m], m ? 3 : 1, got);
            tdm_sched_get_stats(gpu, &after);
            cr_assert_eq(after.gpu_queries - before.gpu_queries, n, "every configuration on the GPU engine");
            size_t d = 0, colliding = 0;
            for (size_t i = 0; i < n; i++) {
                colliding += want[i].colliding;
                d += got[i].colliding != want[i].colliding || got[i].object_a != want[i].object_a ||
                     got[i].object_b != want[i].object_b || got[i].contacts != want[i].contacts ||
                     got[i].truncated != want[i].truncated;
            }
            cr_log_info("scene %d, %s: %zu configurations, %zu colliding, %zu differences", k, m ? "contacts" : "bool",
                        n, colliding, d);
            cr_assert_eq(d, 0, "seed=%llu scene %d: %zu of %zu differ", (unsigned long long)seed, k, d, n);
            cr_assert(colliding > 0 && colliding < n);
        }
        for (uint32_t i = 0; i < rs->n_objects; i++) tdm_sched_mesh_remove(gpu, rs->bvhs[i]);
        tdm_robot_scene_destroy(rs);
        free(yaml[k]);
    }
    free(want);
    free(got);
    free(q);
    tdm_sched_destroy(cpu);
    tdm_sched_destroy(gpu);
}

/* ---- the command line ---- */

#ifndef TANDEM_BIN
#error "TANDEM_BIN must be defined by the build"
#endif

static char cli_dir[256];

static const char *in_dir(const char *name)
{
    static char p[16][512];
    static int k;
    k = (k + 1) % 16;
    snprintf(p[k], sizeof p[k], "%s/%s", cli_dir, name);
    return p[k];
}

static void put_file(const char *name, const char *text)
{
    FILE *f = fopen(in_dir(name), "w");
    cr_assert_not_null(f);
    cr_assert_eq(fputs(text, f) >= 0, 1);
    cr_assert_eq(fclose(f), 0);
}

static tdm_run_result run_tandem(const char *const *args)
{
    tdm_run_result r;
    int rc = tdm_run_capture(TANDEM_BIN, args, in_dir("stdout"), in_dir("stderr"), &r);
    cr_assert_eq(rc, 0, "cannot run %s: %s", TANDEM_BIN, strerror(rc));
    return r;
}

Test(attached, check_command_reads_attached_objects)
{
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(cli_dir, sizeof cli_dir, "%s/tdm-attached-XXXXXX", tmp);
    cr_assert_not_null(mkdtemp(cli_dir));
    put_file("arm.urdf", arm_urdf_text);
    put_file("arm.srdf", arm_srdf_text);
    char *yaml = held_scene("link2", "", "[]", "");
    put_file("held.yaml", yaml);
    memcpy(strstr(yaml, "link_name: link2"), "link_name: hand2", 16);
    put_file("bad.yaml", yaml);
    enum { N = 500 };
    double *q = random_configs(N, 0xc11ull);
    FILE *f = fopen(in_dir("configs.txt"), "w");
    cr_assert_not_null(f);
    for (size_t i = 0; i < N; i++) fprintf(f, "%.17g %.17g\n", q[2 * i], q[2 * i + 1]);
    cr_assert_eq(fclose(f), 0);

    const char *args[] = {"check", "--urdf", in_dir("arm.urdf"), "--srdf", in_dir("arm.srdf"), "--world",
                          in_dir("held.yaml"), "--configs", in_dir("configs.txt"), "--mode", "bool", "--backend", "cpu",
                          "--out", in_dir("out.txt"), NULL};
    tdm_run_result r = run_tandem(args);
    cr_assert_eq(r.status, 0, "tandem check failed: %s", r.err);
    char *out = gen_read_file(in_dir("out.txt"), NULL);
    cr_assert_not_null(out);
    char **lines;
    size_t k = gen_split_lines(out, &lines), held_only = 0;
    cr_assert_eq(k, N);
    for (size_t i = 0; i < N; i++) {
        const double *qi = q + 2 * i;
        int lo = arm_oracle_holding(qi, HELD, 2, 1, 1, -1e-7), hi = arm_oracle_holding(qi, HELD, 2, 1, 1, 1e-7);
        if (lo != hi) continue;
        cr_assert_eq(atoi(lines[i]), lo, "configuration %zu (%.17g, %.17g): %s, oracle %d", i, qi[0], qi[1], lines[i],
                     lo);
        held_only += lo && !arm_oracle_collides(qi);
    }
    cr_assert(held_only > 0, "the held object must matter");
    free(lines);
    free(out);
    tdm_run_free(&r);

    const char *bad[] = {"check", "--urdf", in_dir("arm.urdf"), "--world", in_dir("bad.yaml"), "--configs",
                         in_dir("configs.txt"), "--mode", "bool", "--backend", "cpu", "--out", in_dir("out2.txt"), NULL};
    r = run_tandem(bad);
    cr_assert_eq(r.status, 1, "exit %d", r.status);
    char want[700];
    snprintf(want, sizeof want, "check: %s: attached object 'held': link_name 'hand2' is not a link of the robot",
             in_dir("bad.yaml"));
    cr_assert_not_null(strstr(r.err, want), "stderr '%s' lacks '%s'", r.err, want);
    cr_assert_eq(access(in_dir("out2.txt"), F_OK), -1, "nothing is written");
    tdm_run_free(&r);

    static const char *const files[] = {"arm.urdf", "arm.srdf", "held.yaml", "bad.yaml", "configs.txt", "out.txt",
                                        "stdout", "stderr"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) unlink(in_dir(files[i]));
    cr_assert_eq(rmdir(cli_dir), 0, "%s left files behind", cli_dir);
    free(q);
    free(yaml);
}
