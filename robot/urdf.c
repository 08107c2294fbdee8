/* URDF and SRDF reading (robot/urdf.h has the rules).
 *
 * Two passes. The first walks the XML in file order and parses every <link> and
 * <joint> on its own (numbers, shapes, mesh files), so that each error can name its
 * element and line. The second works on names and indices only: it resolves the
 * links a joint names, checks that they form one tree, orders it depth first and
 * moves what the first pass made into the robot in that order. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "urdf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

/* A joint as the file gives it, before the tree is known. */
typedef struct fjoint {
    char *name;
    tdm_joint_type type;
    char *parent_name, *child_name, *mimic_name;
    long parent_line, child_line, mimic_line;
    int32_t parent, child, mimic; /* file-order indices, once resolved */
    tdm_xform origin;
    tdm_dvec3 axis;
    double lower, upper, multiplier, offset;
    long line;
} fjoint;

typedef struct flink {
    char *name;
    uint32_t first_collision, n_collisions; /* in the file-order collision list */
    int32_t parent_joint;                   /* file-order joint index, -1 if none */
    long line;
} flink;

typedef struct parse {
    const char *path; /* for messages */
    tdm_robot_mesh_resolver resolve; /* NULL: mesh filenames are files (resolve_mesh) */
    void *resolve_ctx;
    char *err;
    size_t errlen;
    char dir[PATH_MAX]; /* the URDF's folder, absolute */
    flink *links;
    uint32_t n_links, cap_links;
    fjoint *joints;
    uint32_t n_joints, cap_joints;
    tdm_robot_collision *colls; /* .link is the file-order link index */
    uint32_t n_colls, cap_colls;
} parse;

static PRINTF_LIKE(4, 5) int fail(const parse *p, int code, long line, const char *fmt, ...)
{
    if (p->errlen == 0) return code;
    int n = line > 0 ? snprintf(p->err, p->errlen, "%s:%ld: ", p->path, line) : snprintf(p->err, p->errlen, "%s: ", p->path);
    if (n >= 0 && (size_t)n < p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int is_elem(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

static long line_of(const xmlNode *n) { return xmlGetLineNo(n); }

/* The attribute's value (xmlFree it), or NULL when absent. */
static char *attr(const xmlNode *n, const char *name) { return (char *)xmlGetProp(n, (const xmlChar *)name); }

/* The single child element called name: 0 with *out NULL when there is none, an
 * error when there are several. */
static int only_child(const parse *p, const xmlNode *n, const char *name, const char *what, xmlNode **out)
{
    *out = NULL;
    for (xmlNode *c = n->children; c; c = c->next) {
        if (!is_elem(c, name)) continue;
        if (*out)
            return fail(p, TDM_EFORMAT, line_of(c), "%s: more than one <%s> (the first on line %ld)", what, name,
                        line_of(*out));
        *out = c;
    }
    return 0;
}

/* The whitespace-separated numbers of s into out[0..max): their count, -1 when s is
 * not a list of at most max numbers, -2 when one is NaN or infinite. */
static int numbers(const char *s, double *out, int max)
{
    int n = 0, nonfinite = 0;
    for (;;) {
        while (isspace((unsigned char)*s)) s++;
        if (!*s) return nonfinite ? -2 : n;
        if (n == max) return -1;
        char *end;
        double v = strtod(s, &end);
        if (end == s || (*end && !isspace((unsigned char)*end))) return -1;
        if (!isfinite(v)) nonfinite = 1;
        out[n++] = v;
        s = end;
    }
}

/* Attribute `name` of element n as exactly `count` numbers, or as `alt` numbers
 * when alt > 0. *got receives how many were read: 0 when the attribute is absent
 * and not required (out untouched). */
static int attr_numbers(const parse *p, const xmlNode *n, const char *what, const char *name, int required, int count,
                        int alt, double *out, int *got)
{
    *got = 0;
    char *s = attr(n, name);
    if (!s) {
        if (!required) return 0;
        return fail(p, TDM_EFORMAT, line_of(n), "%s: <%s> has no %s attribute", what, (const char *)n->name, name);
    }
    int k = numbers(s, out, count > alt ? count : alt);
    int rc = 0;
    if (k == -2)
        rc = fail(p, TDM_ENONFINITE, line_of(n), "%s: <%s %s=\"%.64s\">: not a finite number", what,
                  (const char *)n->name, name, s);
    else if (k != count && (alt <= 0 || k != alt)) {
        if (alt > 0)
            rc = fail(p, TDM_EFORMAT, line_of(n), "%s: <%s %s=\"%.64s\">: must be %d or %d numbers", what,
                      (const char *)n->name, name, s, count < alt ? count : alt, count < alt ? alt : count);
        else
            rc = fail(p, TDM_EFORMAT, line_of(n), "%s: <%s %s=\"%.64s\">: must be %d number%s", what,
                      (const char *)n->name, name, s, count, count == 1 ? "" : "s");
    } else {
        *got = k;
    }
    xmlFree(s);
    return rc;
}

/* Fixed-axis roll, pitch, yaw (URDF): R = Rz(yaw) Ry(pitch) Rx(roll). */
static tdm_dmat3 rpy_matrix(double roll, double pitch, double yaw)
{
    double cr = cos(roll), sr = sin(roll), cp = cos(pitch), sp = sin(pitch), cy = cos(yaw), sy = sin(yaw);
    tdm_dmat3 m = {{{cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr},
                    {sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr},
                    {-sp, cp * sr, cp * cr}}};
    return m;
}

/* The <origin xyz rpy> child of n (identity when absent). */
static int read_origin(const parse *p, const xmlNode *n, const char *what, tdm_xform *out)
{
    *out = tdm_xform_identity();
    xmlNode *o;
    int rc = only_child(p, n, "origin", what, &o);
    if (rc || !o) return rc;
    double xyz[3] = {0, 0, 0}, rpy[3] = {0, 0, 0};
    int got;
    if ((rc = attr_numbers(p, o, what, "xyz", 0, 3, 0, xyz, &got))) return rc;
    if ((rc = attr_numbers(p, o, what, "rpy", 0, 3, 0, rpy, &got))) return rc;
    out->r = rpy_matrix(rpy[0], rpy[1], rpy[2]);
    out->t = tdm_d3(xyz[0], xyz[1], xyz[2]);
    return 0;
}

/* A name attribute: present, non-empty, shorter than TDM_ROBOT_MAX_NAME; *out is
 * malloc'd. */
static int read_name(const parse *p, const xmlNode *n, const char *attr_name, const char *what, char **out)
{
    *out = NULL;
    char *s = attr(n, attr_name);
    if (!s || !*s) {
        if (s) xmlFree(s);
        return fail(p, TDM_EFORMAT, line_of(n), "%s: <%s> has no %s attribute", what, (const char *)n->name,
                    attr_name);
    }
    size_t len = strlen(s);
    if (len >= TDM_ROBOT_MAX_NAME) {
        xmlFree(s);
        return fail(p, TDM_ERANGE, line_of(n), "%s: <%s %s> is %zu bytes long (at most %d)", what,
                    (const char *)n->name, attr_name, len, TDM_ROBOT_MAX_NAME - 1);
    }
    *out = malloc(len + 1);
    if (*out) memcpy(*out, s, len + 1);
    xmlFree(s);
    return *out ? 0 : fail(p, TDM_ENOMEM, 0, "out of memory");
}

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap) return 0;
    uint32_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *a = realloc(*arr, (size_t)c * elem);
    if (!a) return TDM_ENOMEM;
    *arr = a;
    *cap = c;
    return 0;
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int join(char *out, const char *dir, const char *rest)
{
    int n = snprintf(out, PATH_MAX, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", rest);
    return n > 0 && n < PATH_MAX;
}

/* Resolves a <mesh filename> to an existing file (urdf.h gives the order). */
static int resolve_mesh(const parse *p, long line, const char *what, const char *uri, char **out)
{
    char cand[PATH_MAX], first[PATH_MAX] = "";
    *out = NULL;
    if (p->resolve) {
        char why[512] = "";
        int rc = p->resolve(p->resolve_ctx, uri, out, why, sizeof why);
        if (rc == 0 && !*out) rc = TDM_ENOMEM;
        if (rc) {
            free(*out);
            *out = NULL;
            return fail(p, rc, line, "%s: mesh '%s': %s", what, uri, why[0] ? why : tdm_strerror(rc));
        }
        return 0;
    }
    if (!strncmp(uri, "package://", 10)) {
        const char *full = uri + 10, *slash = strchr(full, '/');
        if (!*full || !slash || !slash[1] || slash == full)
            return fail(p, TDM_EFORMAT, line, "%s: mesh filename '%s' is not package://PACKAGE/PATH", what, uri);
        const char *rest = slash + 1;
        char d[PATH_MAX];
        snprintf(d, sizeof d, "%s", p->dir);
        for (;;) {
            const char *tries[2] = {full, rest};
            for (int k = 0; k < 2; k++) {
                if (!join(cand, d, tries[k]))
                    return fail(p, TDM_ERANGE, line, "%s: mesh '%s': path too long", what, uri);
                if (!first[0]) memcpy(first, cand, sizeof first);
                if (is_file(cand)) goto found;
            }
            char *s = strrchr(d, '/');
            if (!s || !strcmp(d, "/")) break;
            if (s == d) s[1] = 0; /* "/x" -> "/" */
            else *s = 0;
        }
        return fail(p, TDM_EIO, line,
                    "%s: mesh '%s' not found: no file %s (nor %s/%s, nor either under any folder above %s)", what,
                    uri, first, p->dir, rest, p->dir);
    }
    const char *path = uri;
    if (!strncmp(uri, "file://", 7)) path = uri + 7;
    else if (strstr(uri, "://"))
        return fail(p, TDM_EFORMAT, line, "%s: mesh filename '%s': only package://, file:// and paths are read", what,
                    uri);
    if (!*path) return fail(p, TDM_EFORMAT, line, "%s: empty mesh filename", what);
    if (path[0] == '/') {
        if (snprintf(cand, sizeof cand, "%s", path) >= (int)sizeof cand)
            return fail(p, TDM_ERANGE, line, "%s: mesh '%s': path too long", what, uri);
    } else if (!join(cand, p->dir, path)) {
        return fail(p, TDM_ERANGE, line, "%s: mesh '%s': path too long", what, uri);
    }
    if (!is_file(cand)) return fail(p, TDM_EIO, line, "%s: mesh '%s' not found: no file %s", what, uri, cand);
found:
    *out = strdup(cand);
    return *out ? 0 : fail(p, TDM_ENOMEM, 0, "out of memory");
}

/* One <collision> of link li (file order) into p->colls. */
static int read_collision(parse *p, const xmlNode *c, uint32_t li, const char *link_name)
{
    char what[TDM_ROBOT_MAX_NAME + 64];
    snprintf(what, sizeof what, "link '%s' <collision>", link_name);
    if (p->n_colls >= TDM_ROBOT_MAX_COLLISIONS)
        return fail(p, TDM_ERANGE, line_of(c), "%s: more than %d collision elements in the robot", what,
                    TDM_ROBOT_MAX_COLLISIONS);
    if (grow((void **)&p->colls, &p->cap_colls, p->n_colls + 1, sizeof *p->colls))
        return fail(p, TDM_ENOMEM, 0, "out of memory");
    tdm_robot_collision *k = &p->colls[p->n_colls];
    memset(k, 0, sizeof *k);
    k->link = li;
    k->line = (uint32_t)line_of(c);
    k->scale = tdm_d3(1, 1, 1);
    int rc = read_origin(p, c, what, &k->origin);
    if (rc) return rc;
    xmlNode *g;
    if ((rc = only_child(p, c, "geometry", what, &g))) return rc;
    if (!g) return fail(p, TDM_EFORMAT, line_of(c), "%s: no <geometry>", what);
    xmlNode *s = NULL;
    for (xmlNode *e = g->children; e; e = e->next) {
        if (e->type != XML_ELEMENT_NODE) continue;
        if (s)
            return fail(p, TDM_EFORMAT, line_of(e), "%s: <geometry> holds more than one shape (<%s> and <%s>)", what,
                        (const char *)s->name, (const char *)e->name);
        s = e;
    }
    if (!s) return fail(p, TDM_EFORMAT, line_of(g), "%s: <geometry> holds no shape", what);
    long sl = line_of(s);
    double v[3] = {0, 0, 0};
    int got;
    if (is_elem(s, "box")) {
        k->shape = TDM_SHAPE_BOX;
        if ((rc = attr_numbers(p, s, what, "size", 1, 3, 0, v, &got))) return rc;
        if (v[0] < 0 || v[1] < 0 || v[2] < 0)
            return fail(p, TDM_EFORMAT, sl, "%s: <box size> has a negative edge (%g %g %g)", what, v[0], v[1], v[2]);
        memcpy(k->size, v, sizeof v);
    } else if (is_elem(s, "sphere")) {
        k->shape = TDM_SHAPE_SPHERE;
        if ((rc = attr_numbers(p, s, what, "radius", 1, 1, 0, v, &got))) return rc;
        if (!(v[0] > 0)) return fail(p, TDM_EFORMAT, sl, "%s: <sphere radius> must be > 0, not %g", what, v[0]);
        k->size[0] = v[0];
    } else if (is_elem(s, "cylinder") || is_elem(s, "capsule")) {
        k->shape = is_elem(s, "cylinder") ? TDM_SHAPE_CYLINDER : TDM_SHAPE_CAPSULE;
        if ((rc = attr_numbers(p, s, what, "radius", 1, 1, 0, &v[0], &got))) return rc;
        if ((rc = attr_numbers(p, s, what, "length", 1, 1, 0, &v[1], &got))) return rc;
        if (!(v[0] > 0))
            return fail(p, TDM_EFORMAT, sl, "%s: <%s radius> must be > 0, not %g", what, (const char *)s->name, v[0]);
        if (v[1] < 0)
            return fail(p, TDM_EFORMAT, sl, "%s: <%s length> must be >= 0, not %g", what, (const char *)s->name, v[1]);
        k->size[0] = v[0];
        k->size[1] = v[1];
    } else if (is_elem(s, "mesh")) {
        k->shape = TDM_SHAPE_MESH;
        if ((rc = attr_numbers(p, s, what, "scale", 0, 3, 1, v, &got))) return rc;
        if (got == 1) v[1] = v[2] = v[0];
        if (got) {
            if (v[0] == 0 || v[1] == 0 || v[2] == 0)
                return fail(p, TDM_EFORMAT, sl, "%s: <mesh scale> has a zero factor (%g %g %g)", what, v[0], v[1],
                            v[2]);
            k->scale = tdm_d3(v[0], v[1], v[2]);
        }
        char *uri = attr(s, "filename");
        if (!uri || !*uri) {
            if (uri) xmlFree(uri);
            return fail(p, TDM_EFORMAT, sl, "%s: <mesh> has no filename attribute", what);
        }
        k->mesh_uri = strdup(uri);
        xmlFree(uri);
        p->n_colls++; /* owned from here: freed with the others on failure */
        if (!k->mesh_uri) return fail(p, TDM_ENOMEM, 0, "out of memory");
        return resolve_mesh(p, sl, what, k->mesh_uri, &k->mesh_path);
    } else {
        return fail(p, TDM_EFORMAT, sl, "%s: unsupported geometry <%s> (mesh, box, cylinder, sphere, capsule)", what,
                    (const char *)s->name);
    }
    p->n_colls++;
    return 0;
}

static int read_link(parse *p, const xmlNode *n)
{
    if (p->n_links >= TDM_ROBOT_MAX_LINKS)
        return fail(p, TDM_ERANGE, line_of(n), "more than %d links", TDM_ROBOT_MAX_LINKS);
    if (grow((void **)&p->links, &p->cap_links, p->n_links + 1, sizeof *p->links))
        return fail(p, TDM_ENOMEM, 0, "out of memory");
    flink *l = &p->links[p->n_links];
    memset(l, 0, sizeof *l);
    l->line = line_of(n);
    l->parent_joint = -1;
    int rc = read_name(p, n, "name", "link", &l->name);
    if (rc) return rc;
    uint32_t li = p->n_links++;
    l->first_collision = p->n_colls;
    for (xmlNode *c = n->children; c; c = c->next) {
        if (!is_elem(c, "collision")) continue;
        if ((rc = read_collision(p, c, li, p->links[li].name))) return rc;
    }
    p->links[li].n_collisions = p->n_colls - p->links[li].first_collision;
    return 0;
}

/* <parent link> or <child link> of a joint. */
static int read_link_ref(const parse *p, const xmlNode *n, const char *tag, const char *what, char **name, long *line)
{
    xmlNode *e;
    int rc = only_child(p, n, tag, what, &e);
    if (rc) return rc;
    if (!e) return fail(p, TDM_EFORMAT, line_of(n), "%s: no <%s>", what, tag);
    *line = line_of(e);
    return read_name(p, e, "link", what, name);
}

static int read_joint(parse *p, const xmlNode *n)
{
    if (p->n_joints >= TDM_ROBOT_MAX_LINKS - 1)
        return fail(p, TDM_ERANGE, line_of(n), "more than %d joints", TDM_ROBOT_MAX_LINKS - 1);
    if (grow((void **)&p->joints, &p->cap_joints, p->n_joints + 1, sizeof *p->joints))
        return fail(p, TDM_ENOMEM, 0, "out of memory");
    fjoint *j = &p->joints[p->n_joints];
    memset(j, 0, sizeof *j);
    j->line = line_of(n);
    j->axis = tdm_d3(1, 0, 0);
    j->multiplier = 1;
    j->mimic = -1;
    int rc = read_name(p, n, "name", "joint", &j->name);
    if (rc) return rc;
    p->n_joints++; /* owned from here */
    char what[TDM_ROBOT_MAX_NAME + 16];
    snprintf(what, sizeof what, "joint '%s'", j->name);

    char *type = attr(n, "type");
    if (!type) return fail(p, TDM_EFORMAT, j->line, "%s: no type attribute", what);
    static const char *const types[] = {"fixed", "revolute", "continuous", "prismatic"};
    int t = -1;
    for (int k = 0; k < 4; k++)
        if (!strcmp(type, types[k])) t = k;
    if (t < 0) {
        int known = !strcmp(type, "floating") || !strcmp(type, "planar");
        rc = fail(p, TDM_EFORMAT, j->line, "%s: %s joint type '%.32s' (fixed, revolute, continuous, prismatic)", what,
                  known ? "unsupported" : "unknown", type);
        xmlFree(type);
        return rc;
    }
    xmlFree(type);
    j->type = (tdm_joint_type)t;

    if ((rc = read_link_ref(p, n, "parent", what, &j->parent_name, &j->parent_line))) return rc;
    if ((rc = read_link_ref(p, n, "child", what, &j->child_name, &j->child_line))) return rc;
    if ((rc = read_origin(p, n, what, &j->origin))) return rc;

    xmlNode *e;
    int got;
    double v[3];
    if (j->type != TDM_JOINT_FIXED) {
        if ((rc = only_child(p, n, "axis", what, &e))) return rc;
        if (e) {
            if ((rc = attr_numbers(p, e, what, "xyz", 1, 3, 0, v, &got))) return rc;
            double len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
            if (!(len > 0) || !isfinite(len))
                return fail(p, TDM_EFORMAT, line_of(e), "%s: <axis xyz=\"%g %g %g\"> cannot be normalised", what,
                            v[0], v[1], v[2]);
            j->axis = tdm_d3(v[0] / len, v[1] / len, v[2] / len);
        }
    }
    if (j->type == TDM_JOINT_REVOLUTE || j->type == TDM_JOINT_PRISMATIC) {
        if ((rc = only_child(p, n, "limit", what, &e))) return rc;
        if (!e) return fail(p, TDM_EFORMAT, j->line, "%s: a %s joint needs <limit lower upper>", what, types[t]);
        if ((rc = attr_numbers(p, e, what, "lower", 1, 1, 0, &j->lower, &got))) return rc;
        if ((rc = attr_numbers(p, e, what, "upper", 1, 1, 0, &j->upper, &got))) return rc;
        if (j->lower > j->upper)
            return fail(p, TDM_EFORMAT, line_of(e), "%s: <limit> lower %g is above upper %g", what, j->lower,
                        j->upper);
    } else if (j->type == TDM_JOINT_CONTINUOUS) {
        j->lower = -TDM_ROBOT_PI;
        j->upper = TDM_ROBOT_PI;
    }
    if ((rc = only_child(p, n, "mimic", what, &e))) return rc;
    if (e) {
        j->mimic_line = line_of(e);
        if ((rc = read_name(p, e, "joint", what, &j->mimic_name))) return rc;
        if ((rc = attr_numbers(p, e, what, "multiplier", 0, 1, 0, &j->multiplier, &got))) return rc;
        if ((rc = attr_numbers(p, e, what, "offset", 0, 1, 0, &j->offset, &got))) return rc;
    }
    return 0;
}

/* Names sorted for lookups: entry k is (name, index of its element). */
typedef struct name_entry {
    const char *name;
    uint32_t index;
} name_entry;

typedef struct name_index {
    name_entry *e;
    uint32_t n;
} name_index;

static int cmp_entry(const void *a, const void *b)
{
    const name_entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* names[i] is element i's name; borrowed for the index's lifetime. */
static int index_build(name_index *ix, const char *const *names, uint32_t n)
{
    ix->n = n;
    ix->e = malloc((size_t)(n ? n : 1) * sizeof *ix->e);
    if (!ix->e) return TDM_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        ix->e[i].name = names[i];
        ix->e[i].index = i;
    }
    qsort(ix->e, n, sizeof *ix->e, cmp_entry);
    return 0;
}

static int32_t index_find(const name_index *ix, const char *name)
{
    uint32_t lo = 0, hi = ix->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ix->e[mid].name, name);
        if (c == 0) {
            while (mid > 0 && !strcmp(ix->e[mid - 1].name, name)) mid--;
            return (int32_t)ix->e[mid].index;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* The first repeated name's later element (file order), or -1; *first receives the
 * earlier one. */
static int32_t index_duplicate(const name_index *ix, uint32_t *first)
{
    for (uint32_t i = 1; i < ix->n; i++)
        if (!strcmp(ix->e[i - 1].name, ix->e[i].name)) {
            *first = ix->e[i - 1].index;
            return (int32_t)ix->e[i].index;
        }
    return -1;
}

/* A link on the cycle that link l (which has a parent) leads to through parents. */
static uint32_t cycle_link(const parse *p, uint32_t l)
{
    for (uint32_t k = 0; k < p->n_links; k++) l = p->joints[p->links[l].parent_joint].parent;
    return l;
}

static int cycle_error(const parse *p, uint32_t l)
{
    l = cycle_link(p, l);
    char names[512] = "";
    uint32_t k = l;
    do {
        const fjoint *j = &p->joints[p->links[k].parent_joint];
        size_t used = strlen(names);
        if (used + strlen(j->name) + 8 >= sizeof names) {
            strncat(names, ", ...", sizeof names - used - 1);
            break;
        }
        if (used) strcat(names, ", ");
        strcat(names, "'");
        strcat(names, j->name);
        strcat(names, "'");
        k = j->parent;
    } while (k != l);
    const fjoint *j = &p->joints[p->links[l].parent_joint];
    return fail(p, TDM_EFORMAT, j->line, "joint '%s': the joints form a cycle (link '%s'; joints %s)", j->name,
                p->links[l].name, names);
}

/* Checks the tree and moves the parsed elements into a robot, depth first. */
static int build(parse *p, const char *name, const char *urdf_path, tdm_robot **out)
{
    int rc = 0;
    tdm_robot *r = NULL;
    name_index lix = {0}, jix = {0};
    const char **lnames = NULL, **jnames = NULL;
    uint32_t *nchild = NULL, *child_start = NULL, *child_list = NULL, *newl = NULL, *newj = NULL, *stack = NULL,
             *next = NULL, *jorder = NULL;
    const uint32_t nl = p->n_links, nj = p->n_joints;

    if (nl == 0) return fail(p, TDM_EFORMAT, 0, "the robot has no <link>");
    lnames = malloc(nl * sizeof *lnames);
    jnames = malloc((nj ? nj : 1) * sizeof *jnames);
    if (!lnames || !jnames) goto nomem;
    for (uint32_t i = 0; i < nl; i++) lnames[i] = p->links[i].name;
    for (uint32_t i = 0; i < nj; i++) jnames[i] = p->joints[i].name;
    if (index_build(&lix, lnames, nl) || index_build(&jix, jnames, nj)) goto nomem;
    uint32_t first;
    int32_t dup = index_duplicate(&lix, &first);
    if (dup >= 0) {
        rc = fail(p, TDM_EFORMAT, p->links[dup].line, "link '%s': a second link of that name (the first on line %ld)",
                  p->links[dup].name, p->links[first].line);
        goto fail;
    }
    if ((dup = index_duplicate(&jix, &first)) >= 0) {
        rc = fail(p, TDM_EFORMAT, p->joints[dup].line,
                  "joint '%s': a second joint of that name (the first on line %ld)", p->joints[dup].name,
                  p->joints[first].line);
        goto fail;
    }

    /* Links named by joints; one parent per link. */
    for (uint32_t i = 0; i < nj; i++) {
        fjoint *j = &p->joints[i];
        j->parent = index_find(&lix, j->parent_name);
        if (j->parent < 0) {
            rc = fail(p, TDM_EFORMAT, j->parent_line, "joint '%s': parent link '%s' is not a link of the robot",
                      j->name, j->parent_name);
            goto fail;
        }
        j->child = index_find(&lix, j->child_name);
        if (j->child < 0) {
            rc = fail(p, TDM_EFORMAT, j->child_line, "joint '%s': child link '%s' is not a link of the robot", j->name,
                      j->child_name);
            goto fail;
        }
        flink *c = &p->links[j->child];
        if (c->parent_joint >= 0) {
            rc = fail(p, TDM_EFORMAT, j->child_line,
                      "joint '%s': link '%s' already has a parent joint, '%s' (line %ld); a link has one parent",
                      j->name, c->name, p->joints[c->parent_joint].name, p->joints[c->parent_joint].line);
            goto fail;
        }
        c->parent_joint = (int32_t)i;
        if (j->mimic_name) {
            j->mimic = index_find(&jix, j->mimic_name);
            if (j->mimic < 0) {
                rc = fail(p, TDM_EFORMAT, j->mimic_line, "joint '%s': <mimic joint> '%s' is not a joint of the robot",
                          j->name, j->mimic_name);
                goto fail;
            }
        }
    }

    /* One root. */
    int32_t root = -1;
    for (uint32_t i = 0; i < nl; i++) {
        if (p->links[i].parent_joint >= 0) continue;
        if (root >= 0) {
            rc = fail(p, TDM_EFORMAT, p->links[i].line,
                      "link '%s': a second root link (no joint has it as child), besides '%s' (line %ld): the links "
                      "are not one tree",
                      p->links[i].name, p->links[root].name, p->links[root].line);
            goto fail;
        }
        root = (int32_t)i;
    }
    if (root < 0) {
        rc = cycle_error(p, 0);
        goto fail;
    }

    /* Children of each link in file order of their joints (a counting sort). */
    nchild = calloc(nl, sizeof *nchild);
    child_start = calloc(nl + 1, sizeof *child_start);
    child_list = malloc((nj ? nj : 1) * sizeof *child_list);
    newl = malloc(nl * sizeof *newl);
    newj = malloc((nj ? nj : 1) * sizeof *newj);
    stack = malloc(nl * sizeof *stack);
    next = calloc(nl, sizeof *next);
    jorder = malloc((nj ? nj : 1) * sizeof *jorder);
    if (!nchild || !child_start || !child_list || !newl || !newj || !stack || !next || !jorder) goto nomem;
    for (uint32_t i = 0; i < nj; i++) nchild[p->joints[i].parent]++;
    for (uint32_t i = 0; i < nl; i++) child_start[i + 1] = child_start[i] + nchild[i];
    for (uint32_t i = 0; i < nl; i++) nchild[i] = 0;
    for (uint32_t i = 0; i < nj; i++) {
        uint32_t pl = (uint32_t)p->joints[i].parent;
        child_list[child_start[pl] + nchild[pl]++] = i;
    }
    for (uint32_t i = 0; i < nl; i++) newl[i] = UINT32_MAX;

    /* Depth first, pre-order: a joint's index is taken just before its child's. */
    uint32_t n_seen_l = 0, n_seen_j = 0, sp = 0;
    newl[root] = n_seen_l++;
    stack[sp++] = (uint32_t)root;
    while (sp) {
        uint32_t l = stack[sp - 1];
        if (next[l] == nchild[l]) {
            sp--;
            continue;
        }
        uint32_t ji = child_list[child_start[l] + next[l]++];
        uint32_t c = (uint32_t)p->joints[ji].child;
        newj[ji] = n_seen_j++;
        newl[c] = n_seen_l++;
        stack[sp++] = c;
    }
    if (n_seen_l < nl) {
        for (uint32_t i = 0; i < nl; i++)
            if (newl[i] == UINT32_MAX) {
                rc = cycle_error(p, i);
                goto fail;
            }
    }

    r = calloc(1, sizeof *r);
    if (!r) goto nomem;
    r->links = calloc(nl, sizeof *r->links);
    r->joints = calloc(nj ? nj : 1, sizeof *r->joints);
    r->active = malloc((nj ? nj : 1) * sizeof *r->active);
    r->collisions = calloc(p->n_colls ? p->n_colls : 1, sizeof *r->collisions);
    r->name = strdup(name);
    r->urdf_path = strdup(urdf_path);
    if (!r->links || !r->joints || !r->active || !r->collisions || !r->name || !r->urdf_path) goto nomem;
    r->n_links = nl;
    r->n_joints = nj;

    /* Links and their collisions, in the new order; ownership moves from p. */
    uint32_t *lorder = stack; /* reuse: old index of each new link */
    for (uint32_t i = 0; i < nl; i++) lorder[newl[i]] = i;
    uint32_t nc = 0;
    for (uint32_t k = 0; k < nl; k++) {
        flink *fl = &p->links[lorder[k]];
        tdm_robot_link *l = &r->links[k];
        l->name = fl->name;
        fl->name = NULL;
        l->line = (uint32_t)fl->line;
        l->parent_joint = fl->parent_joint >= 0 ? (int32_t)newj[fl->parent_joint] : -1;
        l->first_collision = nc;
        l->n_collisions = fl->n_collisions;
        for (uint32_t c = 0; c < fl->n_collisions; c++) {
            tdm_robot_collision *src = &p->colls[fl->first_collision + c];
            r->collisions[nc] = *src;
            r->collisions[nc].link = k;
            src->mesh_uri = src->mesh_path = NULL;
            nc++;
        }
    }
    r->n_collisions = nc;

    for (uint32_t i = 0; i < nj; i++) {
        fjoint *fj = &p->joints[i];
        jorder[newj[i]] = i;
        tdm_robot_joint *j = &r->joints[newj[i]];
        j->name = fj->name;
        fj->name = NULL;
        j->type = fj->type;
        j->parent = newl[fj->parent];
        j->child = newl[fj->child];
        j->origin = fj->origin;
        j->axis = fj->type == TDM_JOINT_FIXED ? tdm_d3(1, 0, 0) : fj->axis;
        j->lower = fj->lower;
        j->upper = fj->upper;
        j->mimic_joint = fj->mimic >= 0 ? (int32_t)newj[fj->mimic] : -1;
        j->mimic_source = -1;
        j->mimic_multiplier = 1;
        j->mimic_offset = 0;
        j->line = (uint32_t)fj->line;
        j->active = -1;
    }
    for (uint32_t k = 0; k < nj; k++) {
        tdm_robot_joint *j = &r->joints[k];
        if (j->type != TDM_JOINT_FIXED && j->mimic_joint < 0) {
            j->active = (int32_t)r->n_active;
            r->active[r->n_active++] = k;
        }
    }
    /* Mimic chains, resolved to the active joint driving each (composed as MoveIt
     * does): value(j) = m_j value(t) + o_j. */
    for (uint32_t k = 0; k < nj; k++) {
        tdm_robot_joint *j = &r->joints[k];
        if (j->type == TDM_JOINT_FIXED || j->mimic_joint < 0) continue;
        uint32_t i = jorder[k];
        double mul = p->joints[i].multiplier, off = p->joints[i].offset;
        uint32_t cur = (uint32_t)j->mimic_joint, steps = 0;
        for (;;) {
            const tdm_robot_joint *t = &r->joints[cur];
            if (t->type == TDM_JOINT_FIXED) break; /* its value is 0 */
            if (t->mimic_joint < 0) {
                j->mimic_source = t->active;
                break;
            }
            if (++steps > nj) {
                rc = fail(p, TDM_EFORMAT, p->joints[i].mimic_line,
                          "joint '%s': its <mimic> chain loops (through joint '%s')", j->name, t->name);
                goto fail;
            }
            off += mul * p->joints[jorder[cur]].offset;
            mul *= p->joints[jorder[cur]].multiplier;
            cur = (uint32_t)t->mimic_joint;
        }
        j->mimic_multiplier = mul;
        j->mimic_offset = off;
    }
    *out = r;
    r = NULL;
    goto done;
nomem:
    rc = fail(p, TDM_ENOMEM, 0, "out of memory");
fail:
    tdm_robot_free(r);
done:
    free(lix.e);
    free(jix.e);
    free(lnames);
    free(jnames);
    free(nchild);
    free(child_start);
    free(child_list);
    free(newl);
    free(newj);
    free(stack);
    free(next);
    free(jorder);
    return rc;
}

static void parse_clear(parse *p)
{
    for (uint32_t i = 0; i < p->n_links; i++) free(p->links[i].name);
    for (uint32_t i = 0; i < p->n_joints; i++) {
        free(p->joints[i].name);
        free(p->joints[i].parent_name);
        free(p->joints[i].child_name);
        free(p->joints[i].mimic_name);
    }
    for (uint32_t i = 0; i < p->n_colls; i++) {
        free(p->colls[i].mesh_uri);
        free(p->colls[i].mesh_path);
    }
    free(p->links);
    free(p->joints);
    free(p->colls);
}

/* The first error libxml2 reports (its last one is often a consequence, such as
 * "premature end of data" after a tag mismatch). */
typedef struct xml_first_error {
    char msg[256];
    long line;
    int set;
} xml_first_error;

#if LIBXML_VERSION >= 21200
static void on_xml_error(void *user, const xmlError *e)
#else
static void on_xml_error(void *user, xmlErrorPtr e)
#endif
{
    xmlParserCtxt *ctx = user;
    xml_first_error *f = ctx ? ctx->_private : NULL;
    if (!f || f->set || !e || e->level < XML_ERR_ERROR) return;
    snprintf(f->msg, sizeof f->msg, "%s", e->message ? e->message : "not well-formed XML");
    size_t n = strlen(f->msg);
    while (n && (f->msg[n - 1] == '\n' || f->msg[n - 1] == ' ')) f->msg[--n] = 0;
    f->line = e->line;
    f->set = 1;
}

/* Parses size bytes of XML (named p->path in messages) whose root element must be
 * <robot>. */
static int parse_xml(const parse *p, const char *buf, size_t size, xmlDoc **out)
{
    *out = NULL;
    if (size > TDM_ROBOT_MAX_FILE_BYTES)
        return fail(p, TDM_ERANGE, 0, "%zu bytes (at most %u)", size, TDM_ROBOT_MAX_FILE_BYTES);
    int rc = 0;
    xmlInitParser();
    xmlParserCtxt *ctx = xmlNewParserCtxt();
    if (!ctx) return fail(p, TDM_ENOMEM, 0, "out of memory");
    xml_first_error first = {.set = 0};
    ctx->_private = &first;
    ctx->userData = ctx;
    ctx->sax->serror = on_xml_error;
    /* No network, no entity substitution (no external entities), no messages on stderr. */
    xmlDoc *doc = xmlCtxtReadMemory(ctx, buf, (int)size, p->path, NULL,
                                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES);
    if (!doc) {
        if (!first.set) on_xml_error(ctx, xmlCtxtGetLastError(ctx));
        rc = fail(p, TDM_EFORMAT, first.line, "malformed XML: %s", first.set ? first.msg : "not well-formed");
        goto out;
    }
    xmlNode *root = xmlDocGetRootElement(doc);
    if (!root || !is_elem(root, "robot")) {
        rc = fail(p, TDM_EFORMAT, root ? line_of(root) : 0, "the root element is <%s>, not <robot>",
                  root ? (const char *)root->name : "");
        xmlFreeDoc(doc);
        goto out;
    }
    *out = doc;
out:
    xmlFreeParserCtxt(ctx);
    return rc;
}

/* Reads and parses an XML file whose root element must be <robot>. */
static int read_xml(const parse *p, const char *path, xmlDoc **out)
{
    *out = NULL;
    int rc = 0;
    char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return fail(p, TDM_EIO, 0, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = fail(p, TDM_EIO, 0, "not a regular file");
        goto fail;
    }
    if ((unsigned long long)st.st_size > TDM_ROBOT_MAX_FILE_BYTES) {
        rc = fail(p, TDM_ERANGE, 0, "%lld bytes (at most %u)", (long long)st.st_size, TDM_ROBOT_MAX_FILE_BYTES);
        goto fail;
    }
    size_t size = (size_t)st.st_size;
    buf = malloc(size + 1);
    if (!buf) {
        rc = fail(p, TDM_ENOMEM, 0, "out of memory");
        goto fail;
    }
    if (fread(buf, 1, size, f) != size) {
        rc = fail(p, TDM_EIO, 0, "read failed: %s", strerror(errno));
        goto fail;
    }
    rc = parse_xml(p, buf, size, out);
fail:
    free(buf);
    fclose(f);
    return rc;
}

static int srdf_apply(tdm_robot *r, parse *p, xmlDoc *doc);

/* The URDF in doc (parsed by p) into a robot, then the SRDF (srdf_doc, may be NULL). */
static int load_doc(parse *p, xmlDoc *doc, parse *sp, xmlDoc *srdf_doc, tdm_robot **out)
{
    tdm_robot *r = NULL;
    int rc = 0;
    xmlNode *root = xmlDocGetRootElement(doc);
    for (xmlNode *n = root->children; n; n = n->next) {
        if (is_elem(n, "link")) rc = read_link(p, n);
        else if (is_elem(n, "joint")) rc = read_joint(p, n);
        if (rc) goto fail;
    }
    char *name = attr(root, "name");
    rc = build(p, name ? name : "", p->path, &r);
    if (name) xmlFree(name);
    if (rc) goto fail;
    if (srdf_doc && (rc = srdf_apply(r, sp, srdf_doc))) goto fail;
    *out = r;
    r = NULL;
fail:
    tdm_robot_free(r);
    return rc;
}

int tdm_robot_load(const char *urdf_path, const char *srdf_path, tdm_robot **out, char *err, size_t errlen)
{
    parse p;
    memset(&p, 0, sizeof p);
    p.path = urdf_path;
    p.err = err;
    p.errlen = errlen;
    if (errlen) err[0] = 0;
    *out = NULL;
    xmlDoc *doc = NULL;
    int rc = read_xml(&p, urdf_path, &doc);
    if (rc) goto fail;

    /* DIR: the URDF's folder, absolute. */
    char d[PATH_MAX];
    const char *slash = strrchr(urdf_path, '/');
    if (!slash) snprintf(d, sizeof d, ".");
    else if (slash == urdf_path) snprintf(d, sizeof d, "/");
    else snprintf(d, sizeof d, "%.*s", (int)(slash - urdf_path), urdf_path);
    if (!realpath(d, p.dir)) {
        rc = fail(&p, TDM_EIO, 0, "cannot resolve its folder %s: %s", d, strerror(errno));
        goto fail;
    }
    tdm_robot *r = NULL;
    if ((rc = load_doc(&p, doc, NULL, NULL, &r))) goto fail;
    if (srdf_path && (rc = tdm_robot_load_srdf(r, srdf_path, err, errlen))) {
        tdm_robot_free(r);
        goto fail;
    }
    *out = r;
fail:
    if (doc) xmlFreeDoc(doc);
    parse_clear(&p);
    return rc;
}

int tdm_robot_parse(const tdm_robot_source *src, tdm_robot **out, char *err, size_t errlen)
{
    parse p, sp;
    memset(&p, 0, sizeof p);
    memset(&sp, 0, sizeof sp);
    p.path = src->urdf_name ? src->urdf_name : "urdf";
    sp.path = src->srdf_name ? src->srdf_name : "srdf";
    p.err = sp.err = err;
    p.errlen = sp.errlen = errlen;
    p.resolve = src->resolve;
    p.resolve_ctx = src->ctx;
    if (errlen) err[0] = 0;
    *out = NULL;
    xmlDoc *doc = NULL, *sdoc = NULL;
    int rc;
    if (!src->urdf || !src->resolve) return fail(&p, TDM_EINVAL, 0, "no URDF text or no mesh resolver");
    if ((rc = parse_xml(&p, src->urdf, src->urdf_len, &doc))) goto fail;
    if (src->srdf && (rc = parse_xml(&sp, src->srdf, src->srdf_len, &sdoc))) goto fail;
    rc = load_doc(&p, doc, &sp, sdoc, out);
fail:
    if (doc) xmlFreeDoc(doc);
    if (sdoc) xmlFreeDoc(sdoc);
    parse_clear(&p);
    return rc;
}

static int cmp_pair(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    if (x[0] != y[0]) return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

int tdm_robot_load_srdf(tdm_robot *r, const char *srdf_path, char *err, size_t errlen)
{
    parse p;
    memset(&p, 0, sizeof p);
    p.path = srdf_path;
    p.err = err;
    p.errlen = errlen;
    if (errlen) err[0] = 0;
    xmlDoc *doc = NULL;
    int rc = read_xml(&p, srdf_path, &doc);
    if (rc) return rc;
    rc = srdf_apply(r, &p, doc);
    xmlFreeDoc(doc);
    return rc;
}

/* The <disable_collisions> pairs of a parsed SRDF into r (unchanged on failure). */
static int srdf_apply(tdm_robot *r, parse *pp, xmlDoc *doc)
{
    const parse *p = pp;
    const char **names = NULL;
    name_index ix = {0};
    uint32_t(*pairs)[2] = NULL;
    uint32_t n = r->n_disabled, cap = 0;
    int rc = 0;
    char *frame = NULL; /* the root virtual joint's parent frame */
    names = malloc(r->n_links * sizeof *names);
    if (!names) goto nomem;
    for (uint32_t i = 0; i < r->n_links; i++) names[i] = r->links[i].name;
    if (index_build(&ix, names, r->n_links)) goto nomem;
    if (grow((void **)&pairs, &cap, n ? n : 1, sizeof *pairs)) goto nomem;
    if (n) memcpy(pairs, r->disabled, n * sizeof *pairs);
    for (xmlNode *e = xmlDocGetRootElement(doc)->children; e; e = e->next) {
        if (is_elem(e, "virtual_joint") && !frame) { /* MoveIt's: the first whose child is the root link */
            char *child = attr(e, "child_link"), *parent = attr(e, "parent_frame");
            const char *f = parent ? parent + (parent[0] == '/') : NULL;
            if (child && f && *f && !strcmp(child, r->links[0].name) && !(frame = strdup(f))) rc = TDM_ENOMEM;
            if (child) xmlFree(child);
            if (parent) xmlFree(parent);
            if (rc) goto nomem;
            continue;
        }
        if (!is_elem(e, "disable_collisions")) continue;
        int32_t ab[2];
        static const char *const attrs[2] = {"link1", "link2"};
        for (int k = 0; k < 2; k++) {
            char *s = attr(e, attrs[k]);
            if (!s || !*s) {
                rc = fail(p, TDM_EFORMAT, line_of(e), "<disable_collisions> has no %s attribute", attrs[k]);
                if (s) xmlFree(s);
                goto fail;
            }
            ab[k] = index_find(&ix, s);
            if (ab[k] < 0) {
                rc = fail(p, TDM_EFORMAT, line_of(e), "<disable_collisions %s=\"%.*s\">: not a link of robot '%s'",
                          attrs[k], TDM_ROBOT_MAX_NAME, s, r->name);
                xmlFree(s);
                goto fail;
            }
            xmlFree(s);
        }
        if (ab[0] == ab[1]) continue;
        if (grow((void **)&pairs, &cap, n + 1, sizeof *pairs)) goto nomem;
        pairs[n][0] = (uint32_t)(ab[0] < ab[1] ? ab[0] : ab[1]);
        pairs[n][1] = (uint32_t)(ab[0] < ab[1] ? ab[1] : ab[0]);
        n++;
    }
    qsort(pairs, n, sizeof *pairs, cmp_pair);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!m || cmp_pair(pairs[m - 1], pairs[i])) memcpy(pairs[m++], pairs[i], sizeof pairs[i]);
    if (m > TDM_ROBOT_MAX_DISABLED) {
        rc = fail(p, TDM_ERANGE, 0, "more than %d disable_collisions pairs", TDM_ROBOT_MAX_DISABLED);
        goto fail;
    }
    free(r->disabled);
    r->disabled = pairs;
    r->n_disabled = m;
    pairs = NULL;
    if (frame) {
        free(r->planning_frame);
        r->planning_frame = frame;
        frame = NULL;
    }
    goto fail; /* rc == 0: the common cleanup */
nomem:
    rc = fail(p, TDM_ENOMEM, 0, "out of memory");
fail:
    free(frame);
    free(pairs);
    free(ix.e);
    free(names);
    return rc;
}

void tdm_robot_free(tdm_robot *r)
{
    if (!r) return;
    if (r->links)
        for (uint32_t i = 0; i < r->n_links; i++) free(r->links[i].name);
    if (r->joints)
        for (uint32_t i = 0; i < r->n_joints; i++) free(r->joints[i].name);
    if (r->collisions)
        for (uint32_t i = 0; i < r->n_collisions; i++) {
            free(r->collisions[i].mesh_uri);
            free(r->collisions[i].mesh_path);
        }
    free(r->links);
    free(r->joints);
    free(r->active);
    free(r->collisions);
    free(r->disabled);
    free(r->planning_frame);
    free(r->name);
    free(r->urdf_path);
    free(r);
}

int32_t tdm_robot_find_link(const tdm_robot *r, const char *name)
{
    for (uint32_t i = 0; i < r->n_links; i++)
        if (!strcmp(r->links[i].name, name)) return (int32_t)i;
    return -1;
}

int32_t tdm_robot_find_joint(const tdm_robot *r, const char *name)
{
    for (uint32_t i = 0; i < r->n_joints; i++)
        if (!strcmp(r->joints[i].name, name)) return (int32_t)i;
    return -1;
}

int tdm_robot_pair_disabled(const tdm_robot *r, uint32_t a, uint32_t b)
{
    uint32_t key[2] = {a < b ? a : b, a < b ? b : a};
    return r->n_disabled && bsearch(key, r->disabled, r->n_disabled, sizeof *r->disabled, cmp_pair) != NULL;
}

const char *tdm_joint_type_name(tdm_joint_type t)
{
    switch (t) {
    case TDM_JOINT_FIXED: return "fixed";
    case TDM_JOINT_REVOLUTE: return "revolute";
    case TDM_JOINT_CONTINUOUS: return "continuous";
    case TDM_JOINT_PRISMATIC: return "prismatic";
    }
    return "unknown";
}

const char *tdm_shape_type_name(tdm_shape_type t)
{
    switch (t) {
    case TDM_SHAPE_MESH: return "mesh";
    case TDM_SHAPE_BOX: return "box";
    case TDM_SHAPE_CYLINDER: return "cylinder";
    case TDM_SHAPE_SPHERE: return "sphere";
    case TDM_SHAPE_CAPSULE: return "capsule";
    }
    return "unknown";
}
