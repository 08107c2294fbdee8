/* Content ids: the canonical encoding of meshes and scenes (proto/README.md,
 * "Meshes" and "Scenes"), the exact bytes whose SHA-256 is the id, and the ids'
 * hex form (file names, logs). The same bytes are what datadir.c stores, so a
 * stored file's id is checked at start-up by hashing them again. No state, any
 * thread. */
#ifndef TDM_DAEMON_CONTENT_ID_H
#define TDM_DAEMON_CONTENT_ID_H

#include <stddef.h>
#include <stdint.h>

#define TDM_ID_LEN 32
#define TDM_MESH_CANON_MAGIC "tandem-mesh-v1"   /* followed by a zero byte */
#define TDM_SCENE_CANON_MAGIC "tandem-scene-v1" /* followed by a zero byte */
/* magic + 0 + vertex count + triangle count */
#define TDM_MESH_CANON_PREFIX_LEN 23

/* The bytes before the vertex array: magic, zero byte, counts (little-endian). */
void tdm_mesh_canon_prefix(uint32_t n_verts, uint32_t n_tris, uint8_t out[TDM_MESH_CANON_PREFIX_LEN]);
/* SHA-256 of prefix, vertices (3 floats each) and triangles (3 u32 each). 0 or TDM_ENOMEM. */
int tdm_mesh_id(const float *verts, uint32_t n_verts, const uint32_t *tris, uint32_t n_tris,
                uint8_t id[TDM_ID_LEN]);
/* Checks a canonical mesh (as stored) and points into it: 0 or TDM_ECORRUPT. */
int tdm_mesh_canon_parse(const uint8_t *buf, size_t len, uint32_t *n_verts, uint32_t *n_tris,
                         const float **verts, const uint32_t **tris);

/* A scene as its canonical content describes it. */
typedef struct tdm_canon_object {
    uint32_t id;
    uint8_t mesh_id[TDM_ID_LEN];
    int movable;
    double pose[7]; /* fixed: x y z qx qy qz qw with a unit quaternion; movable: unused */
} tdm_canon_object;

typedef struct tdm_canon_pair { uint32_t a, b; } tdm_canon_pair;

/* Builds the canonical content: objects sorted by strictly increasing id,
 * allowed pairs distinct, a <= b and sorted. *out is malloc'd. 0 or TDM_ENOMEM. */
int tdm_scene_canon_build(const tdm_canon_object *objects, uint32_t n_objects, const tdm_canon_pair *allowed,
                          uint32_t n_allowed, uint8_t **out, size_t *len);
/* Parses canonical content back (checking its structure: ids increasing, pairs
 * sorted and distinct, sizes exact). The arrays are malloc'd. 0 or TDM_ECORRUPT. */
int tdm_scene_canon_parse(const uint8_t *buf, size_t len, tdm_canon_object **objects, uint32_t *n_objects,
                          tdm_canon_pair **allowed, uint32_t *n_allowed);

/* Robots: "tandem-robot-v1" and a zero byte, the URDF's length (u64) and bytes, the
 * SRDF's length (u64, 0 when none) and bytes, the number of mesh references (u32),
 * then each reference, sorted by filename (bytewise) and distinct: its filename's
 * length (u32), the filename, the mesh id (32 bytes). */
#define TDM_ROBOT_CANON_MAGIC "tandem-robot-v1"
typedef struct tdm_canon_mesh_ref {
    const char *filename; /* not terminated in a parsed canon: use filename_len */
    uint32_t filename_len;
    uint8_t mesh_id[TDM_ID_LEN];
} tdm_canon_mesh_ref;
/* refs must be sorted and distinct (the caller checks). *out is malloc'd. 0 or TDM_ENOMEM. */
int tdm_robot_canon_build(const char *urdf, size_t urdf_len, const char *srdf, size_t srdf_len,
                          const tdm_canon_mesh_ref *refs, uint32_t n_refs, uint8_t **out, size_t *len);
/* Points into buf (urdf, srdf and the filenames are not zero-terminated); *refs is
 * malloc'd. Checks the structure (sizes exact, references sorted and distinct). 0 or
 * TDM_ECORRUPT (or TDM_ENOMEM). */
int tdm_robot_canon_parse(const uint8_t *buf, size_t len, const char **urdf, size_t *urdf_len, const char **srdf,
                          size_t *srdf_len, tdm_canon_mesh_ref **refs, uint32_t *n_refs);
/* Compares two references by filename (bytewise, then length), for qsort. */
int tdm_canon_mesh_ref_cmp(const void *a, const void *b);

/* Robot scenes: "tandem-robot-scene-v1" and a zero byte, the robot id (32 bytes),
 * the planning-scene YAML's length (u64) and bytes. */
#define TDM_ROBOT_SCENE_CANON_MAGIC "tandem-robot-scene-v1"
int tdm_robot_scene_canon_build(const uint8_t robot_id[TDM_ID_LEN], const char *yaml, size_t yaml_len, uint8_t **out,
                                size_t *len);
int tdm_robot_scene_canon_parse(const uint8_t *buf, size_t len, uint8_t robot_id[TDM_ID_LEN], const char **yaml,
                                size_t *yaml_len);

/* 0 or TDM_ENOMEM. */
int tdm_sha256(const void *buf, size_t len, uint8_t out[TDM_ID_LEN]);
/* An ephemeral scene's id (ScenePut.ephemeral, RobotScenePut.ephemeral): the SHA-256 of
 * "tandem-ephemeral-v1", a zero byte and the id the same content has when stored, so
 * that the two never share an id (proto/README.md). In place. 0 or TDM_ENOMEM. */
#define TDM_EPHEMERAL_ID_MAGIC "tandem-ephemeral-v1"
int tdm_ephemeral_id(uint8_t id[TDM_ID_LEN]);
/* 64 lowercase hex digits and a zero byte. */
void tdm_id_hex(const uint8_t id[TDM_ID_LEN], char out[2 * TDM_ID_LEN + 1]);
/* Parses 64 lowercase hex digits: 0 or TDM_EINVAL. */
int tdm_id_parse(const char *hex, uint8_t id[TDM_ID_LEN]);

#endif
