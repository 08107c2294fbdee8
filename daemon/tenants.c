#include "tenants.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "../geom/base.h"
#include "content_id.h"
#include "log.h"

typedef struct tenant {
    char name[TDM_TENANT_NAME_MAX + 1];
    int has_token;
    uint8_t digest[TDM_ID_LEN]; /* SHA-256 of the token */
    unsigned line;              /* in the tenants file; 0: not from it */
} tenant;

struct tdm_tenants {
    tenant *v;
    uint32_t n, cap;
    int from_file;
    tdm_share **share;        /* tdm_tenants_share's, by index (share_n of them; NULL: not made yet) */
    uint32_t share_n;
};

static int add(tdm_tenants *t, const char *name, uint32_t *out)
{
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? 2 * t->cap : 8;
        tenant *v = realloc(t->v, sizeof *v * cap);
        if (!v) return TDM_ENOMEM;
        t->v = v;
        t->cap = cap;
    }
    tenant *x = &t->v[t->n];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    *out = t->n++;
    return 0;
}

tdm_tenants *tdm_tenants_new(void)
{
    tdm_tenants *t = calloc(1, sizeof *t);
    uint32_t idx;
    if (!t || add(t, TDM_TENANT_DEFAULT_NAME, &idx) != 0) {
        tdm_tenants_free(t);
        return NULL;
    }
    return t;
}

void tdm_tenants_free(tdm_tenants *t)
{
    if (!t) return;
    OPENSSL_cleanse(t->v, sizeof *t->v * t->cap);
    free(t->v);
    for (uint32_t i = 0; i < t->share_n; i++) free(t->share[i]);
    free(t->share);
    free(t);
}

tdm_share *tdm_tenants_share(tdm_tenants *t, uint32_t idx)
{
    if (idx >= t->n) return NULL;
    if (idx >= t->share_n) {
        tdm_share **v = realloc(t->share, sizeof *v * t->n);
        if (!v) return NULL;
        for (uint32_t i = t->share_n; i < t->n; i++) v[i] = NULL;
        t->share = v;
        t->share_n = t->n;
    }
    if (!t->share[idx]) t->share[idx] = calloc(1, sizeof *t->share[idx]);
    return t->share[idx];
}

static int find(const tdm_tenants *t, const char *name)
{
    for (uint32_t i = 0; i < t->n; i++) /* few tenants: a scan */
        if (!strcmp(t->v[i].name, name)) return (int)i;
    return -1;
}

static int errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
           ch == '_' || ch == '-';
}

int tdm_tenants_load_file(tdm_tenants *t, const char *path, size_t min_token, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) return errf(err, errlen, "tenants file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH))
        tdm_log_warn("tenants file %s is readable by every user: its tokens are secrets (chmod o-r)", path);
    char line[4096];
    unsigned lineno = 0, n_tenants = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
            rc = errf(err, errlen, "tenants file %s, line %u: longer than %zu bytes", path, lineno, sizeof line - 2);
            break;
        }
        line[strcspn(line, "\r\n")] = 0;
        char *p = line + strspn(line, " \t");
        if (!*p || *p == '#') continue;
        char *name = p;
        size_t name_len = strcspn(p, " \t");
        p += name_len;
        p += strspn(p, " \t");
        char *token = p;
        size_t token_len = strcspn(p, " \t");
        char *rest = p + token_len + strspn(p + token_len, " \t");
        if (!token_len) {
            rc = errf(err, errlen, "tenants file %s, line %u: a tenant's name and no token (each line is NAME TOKEN)",
                      path, lineno);
            break;
        }
        if (*rest) {
            rc = errf(err, errlen, "tenants file %s, line %u: more than two fields (each line is NAME TOKEN)", path,
                      lineno);
            break;
        }
        name[name_len] = 0;
        token[token_len] = 0;
        if (name_len > TDM_TENANT_NAME_MAX) {
            rc = errf(err, errlen, "tenants file %s, line %u: the name has %zu characters, more than %d", path, lineno,
                      name_len, TDM_TENANT_NAME_MAX);
            break;
        }
        for (size_t i = 0; i < name_len; i++)
            if (!name_char(name[i])) {
                char shown[16];
                tdm_log_sanitize(name + i, 1, shown, sizeof shown);
                rc = errf(err, errlen,
                          "tenants file %s, line %u: the name has the character '%s' at %zu (letters, digits, "
                          "'.', '_' and '-' only)", path, lineno, shown, i + 1);
                goto out;
            }
        for (size_t i = 0; i < token_len; i++)
            if ((unsigned char)token[i] < 0x21 || (unsigned char)token[i] > 0x7e) {
                rc = errf(err, errlen, "tenants file %s, line %u: the token has a character that is not printable "
                          "ASCII at %zu", path, lineno, i + 1);
                goto out;
            }
        if (token_len < min_token) {
            rc = errf(err, errlen,
                      "tenants file %s, line %u: tenant %s's token has %zu characters: at least %zu are needed "
                      "(128 bits, e.g. `openssl rand -base64 16`)", path, lineno, name, token_len, min_token);
            break;
        }
        uint8_t digest[TDM_ID_LEN];
        if (tdm_sha256(token, token_len, digest) != 0) {
            rc = errf(err, errlen, "tenants file %s: SHA-256 failed", path);
            break;
        }
        OPENSSL_cleanse(token, token_len);
        int at = find(t, name);
        if (at >= 0 && t->v[at].line) {
            rc = errf(err, errlen, "tenants file %s, line %u: tenant %s is already on line %u", path, lineno, name,
                      t->v[at].line);
            break;
        }
        for (uint32_t i = 0; i < t->n; i++)
            if (t->v[i].has_token && CRYPTO_memcmp(t->v[i].digest, digest, TDM_ID_LEN) == 0) {
                rc = errf(err, errlen, "tenants file %s, line %u: tenant %s has the same token as tenant %s (line %u)",
                          path, lineno, name, t->v[i].name, t->v[i].line);
                goto out;
            }
        uint32_t idx = (uint32_t)at;
        if (at < 0 && add(t, name, &idx) != 0) {
            rc = errf(err, errlen, "out of memory");
            break;
        }
        t->v[idx].has_token = 1;
        memcpy(t->v[idx].digest, digest, TDM_ID_LEN);
        t->v[idx].line = lineno;
        n_tenants++;
    }
    if (rc == 0 && ferror(f)) rc = errf(err, errlen, "tenants file %s: %s", path, strerror(errno));
    if (rc == 0 && n_tenants == 0) rc = errf(err, errlen, "tenants file %s: no tenant (each line is NAME TOKEN)", path);
out:
    OPENSSL_cleanse(line, sizeof line);
    fclose(f);
    if (rc == 0) t->from_file = 1;
    return rc;
}

int tdm_tenants_from_file(const tdm_tenants *t) { return t->from_file; }

int tdm_tenants_by_token(const tdm_tenants *t, const char *token, uint32_t *out)
{
    uint8_t digest[TDM_ID_LEN];
    if (tdm_sha256(token, strlen(token), digest) != 0) return -1;
    uint32_t found = 0, which = 0;
    for (uint32_t i = 0; i < t->n; i++) { /* every one, match or not */
        uint32_t eq = (uint32_t)(t->v[i].has_token & (CRYPTO_memcmp(t->v[i].digest, digest, TDM_ID_LEN) == 0));
        which |= i & (0u - eq);
        found |= eq;
    }
    if (!found) return -1;
    *out = which;
    return 0;
}

int tdm_tenants_intern(tdm_tenants *t, const char *name, uint32_t *out)
{
    size_t len = strlen(name);
    if (len == 0 || len > TDM_TENANT_NAME_MAX) return TDM_EINVAL;
    int at = find(t, name);
    if (at >= 0) {
        *out = (uint32_t)at;
        return 0;
    }
    return add(t, name, out);
}

const char *tdm_tenants_name(const tdm_tenants *t, uint32_t idx) { return idx < t->n ? t->v[idx].name : "?"; }
uint32_t tdm_tenants_count(const tdm_tenants *t) { return t->n; }
