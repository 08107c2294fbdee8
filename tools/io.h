/* File input for the tools: meshes through assimp, pose lists, OMPL .cfg volumes. */
#ifndef TDM_TOOLS_IO_H
#define TDM_TOOLS_IO_H

#include <stdio.h>

#include "../geom/mesh.h"
#include "../geom/vec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tdm_origin {
    TDM_ORIGIN_RAW = 0, /* vertices as the file has them */
    TDM_ORIGIN_OMPL = 1 /* move the mesh so the float mean of its vertices is the origin, as OMPL.app does */
} tdm_origin;

/* Loads every triangle of a mesh file (.dae .stl .obj .ply and whatever else
 * assimp reads) with Triangulate | JoinIdenticalVertices | PreTransformVertices;
 * line and point faces are dropped. All meshes of the file are merged into one.
 * Returns 0 or a negative TDM_E* code with a message in err. */
int tdm_mesh_load_file(const char *path, tdm_origin origin, tdm_mesh **out, char *err, size_t errlen);

typedef struct tdm_pose { tdm_dvec3 t; tdm_quat q; } tdm_pose;

/* Reads poses, one per line: "x y z qx qy qz qw" (OMPL .path format); blank lines
 * and lines starting with '#' are skipped. Quaternions are normalised; one whose
 * norm is not within 1e-3 of 1, or any non-finite number, is an error naming the
 * line. *out is malloc'd, the caller frees it. */
int tdm_poses_read(const char *path, tdm_pose **out, size_t *n, char *err, size_t errlen);
/* Writes poses in the same format with round-trip precision. */
int tdm_poses_write(FILE *f, const tdm_pose *poses, size_t n);

typedef struct tdm_cfg_volume { double min[3], max[3]; } tdm_cfg_volume;
/* Reads volume.min.{x,y,z} and volume.max.{x,y,z} from an OMPL.app .cfg file. */
int tdm_cfg_read_volume(const char *path, tdm_cfg_volume *vol, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
