/* Pose lists and OMPL.app .cfg volumes. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"

static int fail(int code, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Reads one line of any length into *buf (grown as needed). 0 at end of file. */
static int read_line(FILE *f, char **buf, size_t *cap)
{
    ssize_t n = getline(buf, cap, f);
    return n >= 0;
}

static const char *skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    return s;
}

int tdm_poses_read(const char *path, tdm_pose **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return fail(TDM_EIO, err, errlen, "%s: %s", path, strerror(errno));
    tdm_pose *p = NULL;
    size_t np = 0, cap = 0, line_cap = 0, line_no = 0;
    char *line = NULL;
    int rc = TDM_OK;
    while (read_line(f, &line, &line_cap)) {
        line_no++;
        const char *s = skip_space(line);
        if (*s == 0 || *s == '#') continue;
        double v[7];
        for (int k = 0; k < 7; k++) {
            char *end;
            errno = 0;
            v[k] = strtod(s, &end);
            if (end == s) {
                rc = fail(TDM_EFORMAT, err, errlen, "%s:%zu: expected 7 numbers \"x y z qx qy qz qw\"", path,
                          line_no);
                goto done;
            }
            if (!isfinite(v[k])) {
                rc = fail(TDM_ENONFINITE, err, errlen, "%s:%zu: number %d is not finite", path, line_no, k + 1);
                goto done;
            }
            s = end;
        }
        if (*skip_space(s) != 0) {
            rc = fail(TDM_EFORMAT, err, errlen, "%s:%zu: more than 7 numbers on the line", path, line_no);
            goto done;
        }
        tdm_quat q = {v[3], v[4], v[5], v[6]};
        double norm = tdm_quat_norm(q);
        if (!tdm_quat_is_unit(q)) {
            rc = fail(TDM_ERANGE, err, errlen, "%s:%zu: quaternion norm %.6g is not 1", path, line_no, norm);
            goto done;
        }
        q.x /= norm; q.y /= norm; q.z /= norm; q.w /= norm;
        if (np == cap) {
            size_t nc = cap ? 2 * cap : 1024;
            tdm_pose *np_ = realloc(p, nc * sizeof *p);
            if (!np_) {
                rc = fail(TDM_ENOMEM, err, errlen, "%s: out of memory", path);
                goto done;
            }
            p = np_;
            cap = nc;
        }
        p[np].t = tdm_d3(v[0], v[1], v[2]);
        p[np].q = q;
        np++;
    }
    if (ferror(f)) rc = fail(TDM_EIO, err, errlen, "%s: read error", path);
done:
    free(line);
    fclose(f);
    if (rc != TDM_OK) {
        free(p);
        return rc;
    }
    *out = p;
    *n = np;
    return TDM_OK;
}

int tdm_poses_write(FILE *f, const tdm_pose *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fprintf(f, "%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", p[i].t.x, p[i].t.y, p[i].t.z, p[i].q.x,
                    p[i].q.y, p[i].q.z, p[i].q.w) < 0)
            return TDM_EIO;
    }
    return TDM_OK;
}

int tdm_cfg_read_volume(const char *path, tdm_cfg_volume *vol, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) return fail(TDM_EIO, err, errlen, "%s: %s", path, strerror(errno));
    static const char *keys[6] = {"volume.min.x", "volume.min.y", "volume.min.z",
                                  "volume.max.x", "volume.max.y", "volume.max.z"};
    int seen = 0;
    char *line = NULL;
    size_t cap = 0;
    while (read_line(f, &line, &cap)) {
        const char *s = skip_space(line);
        for (int k = 0; k < 6; k++) {
            size_t kl = strlen(keys[k]);
            if (strncmp(s, keys[k], kl) != 0) continue;
            const char *r = skip_space(s + kl);
            if (*r != '=') continue;
            char *end;
            double v = strtod(r + 1, &end);
            if (end == r + 1 || !isfinite(v)) continue;
            if (k < 3) vol->min[k] = v; else vol->max[k - 3] = v;
            seen |= 1 << k;
        }
    }
    free(line);
    fclose(f);
    if (seen != 63) return fail(TDM_EFORMAT, err, errlen, "%s: volume.min.{x,y,z} and volume.max.{x,y,z} are required", path);
    for (int k = 0; k < 3; k++)
        if (!(vol->min[k] <= vol->max[k]))
            return fail(TDM_EFORMAT, err, errlen, "%s: volume.min.%c is above volume.max.%c", path, "xyz"[k], "xyz"[k]);
    return TDM_OK;
}
