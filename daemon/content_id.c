#include "content_id.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "../geom/base.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "canonical content is little-endian; this build assumes a little-endian host"
#endif

#define SCENE_MAGIC_LEN 16 /* "tandem-scene-v1" and a zero byte */
#define OBJ_FIXED_LEN (4 + TDM_ID_LEN + 1 + 7 * 8)
#define OBJ_MOVABLE_LEN (4 + TDM_ID_LEN + 1)

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

void tdm_mesh_canon_prefix(uint32_t n_verts, uint32_t n_tris, uint8_t out[TDM_MESH_CANON_PREFIX_LEN])
{
    memcpy(out, TDM_MESH_CANON_MAGIC, 15); /* with its zero byte */
    put32(out + 15, n_verts);
    put32(out + 19, n_tris);
}

int tdm_mesh_id(const float *verts, uint32_t n_verts, const uint32_t *tris, uint32_t n_tris, uint8_t id[TDM_ID_LEN])
{
    uint8_t prefix[TDM_MESH_CANON_PREFIX_LEN];
    tdm_mesh_canon_prefix(n_verts, n_tris, prefix);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int n = 0;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) && EVP_DigestUpdate(ctx, prefix, sizeof prefix) &&
             EVP_DigestUpdate(ctx, verts, (size_t)n_verts * 12) && EVP_DigestUpdate(ctx, tris, (size_t)n_tris * 12) &&
             EVP_DigestFinal_ex(ctx, id, &n) && n == TDM_ID_LEN;
    EVP_MD_CTX_free(ctx);
    return ok ? TDM_OK : TDM_ENOMEM;
}

int tdm_mesh_canon_parse(const uint8_t *buf, size_t len, uint32_t *n_verts, uint32_t *n_tris, const float **verts,
                         const uint32_t **tris)
{
    if (len < TDM_MESH_CANON_PREFIX_LEN || memcmp(buf, TDM_MESH_CANON_MAGIC, 15) != 0) return TDM_ECORRUPT;
    uint32_t nv = get32(buf + 15), nt = get32(buf + 19);
    if ((uint64_t)len != TDM_MESH_CANON_PREFIX_LEN + 12 * (uint64_t)nv + 12 * (uint64_t)nt) return TDM_ECORRUPT;
    *n_verts = nv;
    *n_tris = nt;
    /* the buffer is only byte-aligned: callers that read the arrays memcpy them */
    *verts = (const float *)(const void *)(buf + TDM_MESH_CANON_PREFIX_LEN);
    *tris = (const uint32_t *)(const void *)(buf + TDM_MESH_CANON_PREFIX_LEN + 12 * (size_t)nv);
    return TDM_OK;
}

int tdm_scene_canon_build(const tdm_canon_object *objects, uint32_t n_objects, const tdm_canon_pair *allowed,
                          uint32_t n_allowed, uint8_t **out, size_t *len)
{
    size_t n = SCENE_MAGIC_LEN + 4 + 4 + 8 * (size_t)n_allowed;
    for (uint32_t i = 0; i < n_objects; i++) n += objects[i].movable ? OBJ_MOVABLE_LEN : OBJ_FIXED_LEN;
    uint8_t *b = malloc(n), *p = b;
    if (!b) return TDM_ENOMEM;
    memcpy(p, TDM_SCENE_CANON_MAGIC, SCENE_MAGIC_LEN);
    p += SCENE_MAGIC_LEN;
    put32(p, n_objects);
    p += 4;
    for (uint32_t i = 0; i < n_objects; i++) {
        put32(p, objects[i].id);
        memcpy(p + 4, objects[i].mesh_id, TDM_ID_LEN);
        p[4 + TDM_ID_LEN] = objects[i].movable ? 1 : 0;
        p += OBJ_MOVABLE_LEN;
        if (!objects[i].movable) {
            memcpy(p, objects[i].pose, 56);
            p += 56;
        }
    }
    put32(p, n_allowed);
    p += 4;
    for (uint32_t i = 0; i < n_allowed; i++) {
        put32(p, allowed[i].a);
        put32(p + 4, allowed[i].b);
        p += 8;
    }
    *out = b;
    *len = n;
    return TDM_OK;
}

int tdm_scene_canon_parse(const uint8_t *buf, size_t len, tdm_canon_object **objects, uint32_t *n_objects,
                          tdm_canon_pair **allowed, uint32_t *n_allowed)
{
    *objects = NULL;
    *allowed = NULL;
    const uint8_t *p = buf, *end = buf + len;
    if (len < SCENE_MAGIC_LEN + 8 || memcmp(p, TDM_SCENE_CANON_MAGIC, SCENE_MAGIC_LEN) != 0) return TDM_ECORRUPT;
    p += SCENE_MAGIC_LEN;
    uint32_t no = get32(p);
    p += 4;
    if (no > (size_t)(end - p) / OBJ_MOVABLE_LEN) return TDM_ECORRUPT;
    tdm_canon_object *o = calloc(no ? no : 1, sizeof *o);
    tdm_canon_pair *a = NULL;
    if (!o) return TDM_ENOMEM;
    for (uint32_t i = 0; i < no; i++) {
        if ((size_t)(end - p) < OBJ_MOVABLE_LEN) goto fail;
        o[i].id = get32(p);
        if (i > 0 && o[i].id <= o[i - 1].id) goto fail;
        memcpy(o[i].mesh_id, p + 4, TDM_ID_LEN);
        uint8_t mv = p[4 + TDM_ID_LEN];
        if (mv > 1) goto fail;
        o[i].movable = mv;
        p += OBJ_MOVABLE_LEN;
        if (!mv) {
            if ((size_t)(end - p) < 56) goto fail;
            memcpy(o[i].pose, p, 56);
            p += 56;
        }
    }
    if ((size_t)(end - p) < 4) goto fail;
    uint32_t na = get32(p);
    p += 4;
    if ((size_t)(end - p) != 8 * (size_t)na) goto fail;
    a = malloc(sizeof *a * (na ? na : 1));
    if (!a) goto fail;
    for (uint32_t i = 0; i < na; i++, p += 8) {
        a[i].a = get32(p);
        a[i].b = get32(p + 4);
        if (a[i].a > a[i].b) goto fail;
        if (i > 0 && (a[i].a < a[i - 1].a || (a[i].a == a[i - 1].a && a[i].b <= a[i - 1].b))) goto fail;
    }
    *objects = o;
    *n_objects = no;
    *allowed = a;
    *n_allowed = na;
    return TDM_OK;
fail:
    free(o);
    free(a);
    return TDM_ECORRUPT; /* or out of memory for `a`: either way the content is not loaded */
}

int tdm_sha256(const void *buf, size_t len, uint8_t out[TDM_ID_LEN])
{
    unsigned int n = 0;
    return EVP_Digest(buf, len, out, &n, EVP_sha256(), NULL) && n == TDM_ID_LEN ? TDM_OK : TDM_ENOMEM;
}

int tdm_ephemeral_id(uint8_t id[TDM_ID_LEN])
{
    uint8_t buf[sizeof TDM_EPHEMERAL_ID_MAGIC + TDM_ID_LEN]; /* the magic, its zero byte, the id */
    memcpy(buf, TDM_EPHEMERAL_ID_MAGIC, sizeof TDM_EPHEMERAL_ID_MAGIC);
    memcpy(buf + sizeof TDM_EPHEMERAL_ID_MAGIC, id, TDM_ID_LEN);
    return tdm_sha256(buf, sizeof buf, id);
}

void tdm_id_hex(const uint8_t id[TDM_ID_LEN], char out[2 * TDM_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < TDM_ID_LEN; i++) {
        out[2 * i] = hex[id[i] >> 4];
        out[2 * i + 1] = hex[id[i] & 15];
    }
    out[2 * TDM_ID_LEN] = 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1; /* the data directory's names are lowercase only */
}

int tdm_id_parse(const char *hex, uint8_t id[TDM_ID_LEN])
{
    for (int i = 0; i < TDM_ID_LEN; i++) {
        int hi = hexval(hex[2 * i]), lo = hi < 0 ? -1 : hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return TDM_EINVAL;
        id[i] = (uint8_t)(hi << 4 | lo);
    }
    return hex[2 * TDM_ID_LEN] == 0 ? TDM_OK : TDM_EINVAL;
}

/* ---- robots ---- */

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

int tdm_canon_mesh_ref_cmp(const void *a, const void *b)
{
    const tdm_canon_mesh_ref *x = a, *y = b;
    uint32_t n = x->filename_len < y->filename_len ? x->filename_len : y->filename_len;
    int c = memcmp(x->filename, y->filename, n);
    if (c) return c;
    return (x->filename_len > y->filename_len) - (x->filename_len < y->filename_len);
}

#define ROBOT_MAGIC_LEN 16       /* "tandem-robot-v1" + 0 */
#define ROBOT_SCENE_MAGIC_LEN 22 /* "tandem-robot-scene-v1" + 0 */

int tdm_robot_canon_build(const char *urdf, size_t urdf_len, const char *srdf, size_t srdf_len,
                          const tdm_canon_mesh_ref *refs, uint32_t n_refs, uint8_t **out, size_t *len)
{
    size_t n = ROBOT_MAGIC_LEN + 8 + urdf_len + 8 + srdf_len + 4;
    for (uint32_t i = 0; i < n_refs; i++) n += 4 + (size_t)refs[i].filename_len + TDM_ID_LEN;
    uint8_t *b = malloc(n), *p = b;
    if (!b) return TDM_ENOMEM;
    memcpy(p, TDM_ROBOT_CANON_MAGIC, ROBOT_MAGIC_LEN);
    p += ROBOT_MAGIC_LEN;
    put64(p, urdf_len);
    p += 8;
    if (urdf_len) memcpy(p, urdf, urdf_len);
    p += urdf_len;
    put64(p, srdf_len);
    p += 8;
    if (srdf_len) memcpy(p, srdf, srdf_len);
    p += srdf_len;
    put32(p, n_refs);
    p += 4;
    for (uint32_t i = 0; i < n_refs; i++) {
        put32(p, refs[i].filename_len);
        p += 4;
        memcpy(p, refs[i].filename, refs[i].filename_len);
        p += refs[i].filename_len;
        memcpy(p, refs[i].mesh_id, TDM_ID_LEN);
        p += TDM_ID_LEN;
    }
    *out = b;
    *len = n;
    return TDM_OK;
}

int tdm_robot_canon_parse(const uint8_t *buf, size_t len, const char **urdf, size_t *urdf_len, const char **srdf,
                          size_t *srdf_len, tdm_canon_mesh_ref **refs, uint32_t *n_refs)
{
    *refs = NULL;
    const uint8_t *p = buf, *end = buf + len;
    if (len < ROBOT_MAGIC_LEN + 8 || memcmp(p, TDM_ROBOT_CANON_MAGIC, ROBOT_MAGIC_LEN) != 0) return TDM_ECORRUPT;
    p += ROBOT_MAGIC_LEN;
    uint64_t ul = get64(p);
    p += 8;
    if (ul > (uint64_t)(end - p) || (uint64_t)(end - p) - ul < 8) return TDM_ECORRUPT;
    *urdf = (const char *)p;
    *urdf_len = (size_t)ul;
    p += ul;
    uint64_t sl = get64(p);
    p += 8;
    if (sl > (uint64_t)(end - p) || (uint64_t)(end - p) - sl < 4) return TDM_ECORRUPT;
    *srdf = sl ? (const char *)p : NULL;
    *srdf_len = (size_t)sl;
    p += sl;
    uint32_t n = get32(p);
    p += 4;
    if (n > (size_t)(end - p) / (4 + TDM_ID_LEN)) return TDM_ECORRUPT;
    tdm_canon_mesh_ref *r = malloc(sizeof *r * (n ? n : 1));
    if (!r) return TDM_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        if (end - p < 4) goto bad;
        uint32_t fl = get32(p);
        p += 4;
        if ((uint64_t)fl + TDM_ID_LEN > (uint64_t)(end - p)) goto bad;
        r[i].filename = (const char *)p;
        r[i].filename_len = fl;
        p += fl;
        memcpy(r[i].mesh_id, p, TDM_ID_LEN);
        p += TDM_ID_LEN;
        if (i && tdm_canon_mesh_ref_cmp(&r[i - 1], &r[i]) >= 0) goto bad;
    }
    if (p != end) goto bad;
    *refs = r;
    *n_refs = n;
    return TDM_OK;
bad:
    free(r);
    return TDM_ECORRUPT;
}

int tdm_robot_scene_canon_build(const uint8_t robot_id[TDM_ID_LEN], const char *yaml, size_t yaml_len, uint8_t **out,
                                size_t *len)
{
    size_t n = ROBOT_SCENE_MAGIC_LEN + TDM_ID_LEN + 8 + yaml_len;
    uint8_t *b = malloc(n);
    if (!b) return TDM_ENOMEM;
    memcpy(b, TDM_ROBOT_SCENE_CANON_MAGIC, ROBOT_SCENE_MAGIC_LEN);
    memcpy(b + ROBOT_SCENE_MAGIC_LEN, robot_id, TDM_ID_LEN);
    put64(b + ROBOT_SCENE_MAGIC_LEN + TDM_ID_LEN, yaml_len);
    if (yaml_len) memcpy(b + ROBOT_SCENE_MAGIC_LEN + TDM_ID_LEN + 8, yaml, yaml_len);
    *out = b;
    *len = n;
    return TDM_OK;
}

int tdm_robot_scene_canon_parse(const uint8_t *buf, size_t len, uint8_t robot_id[TDM_ID_LEN], const char **yaml,
                                size_t *yaml_len)
{
    size_t head = ROBOT_SCENE_MAGIC_LEN + TDM_ID_LEN + 8;
    if (len < head || memcmp(buf, TDM_ROBOT_SCENE_CANON_MAGIC, ROBOT_SCENE_MAGIC_LEN) != 0) return TDM_ECORRUPT;
    memcpy(robot_id, buf + ROBOT_SCENE_MAGIC_LEN, TDM_ID_LEN);
    if (get64(buf + ROBOT_SCENE_MAGIC_LEN + TDM_ID_LEN) != len - head) return TDM_ECORRUPT;
    *yaml = (const char *)buf + head;
    *yaml_len = len - head;
    return TDM_OK;
}
