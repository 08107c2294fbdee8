/* Reading a YAML file into C structures through libyaml's event parser (yaml_read.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "yaml_read.h"

struct tdm__yaml {
    yaml_parser_t parser;
    const tdm__yaml_limits *lim;
    const char *file; /* for messages */
    char *err;
    size_t errlen;
    FILE *f;          /* being read, or NULL when parsing a string */
    size_t bytes;     /* read from f so far */
    int too_big;      /* f passed lim->max_bytes */
    int read_errno;   /* f failed to read */
    size_t plen;
    char path[256];   /* the YAML path of the element being read: known keys and indices only */
};

/* ---- messages ---------------------------------------------------------------- */

static int msg(tdm__yaml *y, int code, const char *fmt, ...) TDM__YAML_PRINTF(3, 4);
static int msg(tdm__yaml *y, int code, const char *fmt, ...)
{
    if (y->err && y->errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(y->err, y->errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int vfail(tdm__yaml *y, const yaml_mark_t *at, int code, const char *fmt, va_list ap)
{
    if (y->err && y->errlen > 0) {
        int n = y->plen ? snprintf(y->err, y->errlen, "%s:%zu: %s: ", y->file, at->line + 1, y->path)
                        : snprintf(y->err, y->errlen, "%s:%zu: ", y->file, at->line + 1);
        if (n >= 0 && (size_t)n < y->errlen) vsnprintf(y->err + n, y->errlen - (size_t)n, fmt, ap);
    }
    return code;
}

int tdm__yaml_fail(tdm__yaml *y, const yaml_mark_t *at, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(y, at, code, fmt, ap);
    va_end(ap);
    return code;
}

static int too_big(tdm__yaml *y)
{
    return msg(y, TDM_ERANGE, "%s: larger than %zu bytes (%s)", y->file, y->lim->max_bytes, y->lim->max_bytes_name);
}

static int parser_fail(tdm__yaml *y)
{
    yaml_parser_t *p = &y->parser;
    if (y->too_big) return too_big(y);
    if (y->read_errno) return msg(y, TDM_EIO, "%s: %s", y->file, strerror(y->read_errno));
    if (p->error == YAML_MEMORY_ERROR) return msg(y, TDM_ENOMEM, "%s: out of memory", y->file);
    const char *problem = p->problem ? p->problem : "unknown error";
    if (p->error == YAML_READER_ERROR)
        return msg(y, TDM_EFORMAT, "%s: malformed YAML: %s at byte %zu", y->file, problem, p->problem_offset);
    if (p->context)
        return msg(y, TDM_EFORMAT, "%s:%zu:%zu: malformed YAML: %s (%s at line %zu)", y->file, p->problem_mark.line + 1,
                   p->problem_mark.column + 1, problem, p->context, p->context_mark.line + 1);
    return msg(y, TDM_EFORMAT, "%s:%zu:%zu: malformed YAML: %s", y->file, p->problem_mark.line + 1,
               p->problem_mark.column + 1, problem);
}

size_t tdm__yaml_push(tdm__yaml *y, const char *key, uint32_t index)
{
    size_t mark = y->plen, room = sizeof y->path - y->plen;
    int n = key ? snprintf(y->path + y->plen, room, "%s%s", y->plen ? "." : "", key)
                : snprintf(y->path + y->plen, room, "[%u]", index);
    y->plen = (n < 0 || (size_t)n >= room) ? sizeof y->path - 1 : y->plen + (size_t)n;
    return mark;
}

void tdm__yaml_pop(tdm__yaml *y, size_t mark)
{
    y->plen = mark;
    y->path[mark] = 0;
}

/* ---- events and scalars ---------------------------------------------------------- */

int tdm__yaml_next(tdm__yaml *y, yaml_event_t *ev)
{
    if (yaml_parser_parse(&y->parser, ev)) return TDM_OK;
    memset(ev, 0, sizeof *ev); /* yaml_event_delete accepts it */
    return parser_fail(y);
}

int tdm__yaml_skip(tdm__yaml *y, const yaml_event_t *ev)
{
    if (ev->type != YAML_SEQUENCE_START_EVENT && ev->type != YAML_MAPPING_START_EVENT) return TDM_OK;
    for (uint32_t depth = 1; depth > 0;) {
        yaml_event_t e;
        int rc = tdm__yaml_next(y, &e);
        if (rc) return rc;
        if (e.type == YAML_SEQUENCE_START_EVENT || e.type == YAML_MAPPING_START_EVENT) depth++;
        if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT) depth--;
        if (depth > y->lim->max_depth)
            rc = tdm__yaml_fail(y, &e.start_mark, TDM_ERANGE, "nested deeper than %u levels (%s)", y->lim->max_depth,
                                y->lim->max_depth_name);
        yaml_event_delete(&e);
        if (rc) return rc;
    }
    return TDM_OK;
}

static const char *kind(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT: return "a scalar";
    case YAML_SEQUENCE_START_EVENT: return "a list";
    case YAML_MAPPING_START_EVENT: return "a mapping";
    default: return "something else";
    }
}

int tdm__yaml_bad_kind(tdm__yaml *y, const yaml_event_t *ev, const char *want)
{
    if (ev->type == YAML_ALIAS_EVENT)
        return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "YAML aliases are not supported");
    return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "expected %s, got %s", want, kind(ev));
}

int tdm__yaml_sval_is(const yaml_event_t *ev, const char *s)
{
    return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length == strlen(s) &&
           memcmp(tdm__yaml_sval(ev), s, strlen(s)) == 0;
}

int tdm__yaml_is_null(const yaml_event_t *ev)
{
    return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (ev->data.scalar.length == 0 || tdm__yaml_sval_is(ev, "~") || tdm__yaml_sval_is(ev, "null") ||
            tdm__yaml_sval_is(ev, "Null") || tdm__yaml_sval_is(ev, "NULL"));
}

int tdm__yaml_read_double(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    if (ev->type != YAML_SCALAR_EVENT) return tdm__yaml_bad_kind(y, ev, "a number");
    static const char *const yaml_nonfinite[] = {".inf", "+.inf", "-.inf", ".Inf", "+.Inf", "-.Inf", ".INF",
                                                 "+.INF", "-.INF", ".nan", ".NaN", ".NAN"};
    for (size_t i = 0; i < sizeof yaml_nonfinite / sizeof *yaml_nonfinite; i++)
        if (tdm__yaml_sval_is(ev, yaml_nonfinite[i]))
            return tdm__yaml_fail(y, &ev->start_mark, TDM_ENONFINITE, "%s is not a finite number", yaml_nonfinite[i]);
    const char *s = tdm__yaml_sval(ev);
    size_t n = ev->data.scalar.length;
    char *end = NULL;
    double v = n ? strtod(s, &end) : 0;
    if (n == 0 || end != s + n || s[0] == ' ' || s[0] == '\t')
        return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "expected a number, got '%.40s'", s);
    if (!isfinite(v)) return tdm__yaml_fail(y, &ev->start_mark, TDM_ENONFINITE, "%.40s is not a finite number", s);
    *(double *)dst = v;
    return TDM_OK;
}

/* A decimal integer in [0, 2^32). */
int tdm__yaml_read_uint(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    if (ev->type != YAML_SCALAR_EVENT) return tdm__yaml_bad_kind(y, ev, "an integer");
    const char *s = tdm__yaml_sval(ev);
    size_t n = ev->data.scalar.length;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > UINT32_MAX) { v = UINT64_MAX; break; }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (n == 0 || v > UINT32_MAX)
        return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "expected an integer from 0 to %u, got '%.40s'",
                              UINT32_MAX, s);
    *(uint32_t *)dst = (uint32_t)v;
    return TDM_OK;
}

int tdm__yaml_read_bool(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    static const char *const words[2][3] = {{"false", "False", "FALSE"}, {"true", "True", "TRUE"}};
    if (ev->type != YAML_SCALAR_EVENT) return tdm__yaml_bad_kind(y, ev, "true or false");
    for (uint8_t v = 0; v < 2; v++)
        for (int i = 0; i < 3; i++)
            if (tdm__yaml_sval_is(ev, words[v][i])) {
                *(uint8_t *)dst = v;
                return TDM_OK;
            }
    return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "expected true or false, got '%.40s'", tdm__yaml_sval(ev));
}

/* *dst is NULL: tdm__yaml_read_map refuses a key twice. */
int tdm__yaml_read_string(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    if (ev->type != YAML_SCALAR_EVENT) return tdm__yaml_bad_kind(y, ev, "a string");
    size_t n = ev->data.scalar.length;
    if (n > y->lim->max_string)
        return tdm__yaml_fail(y, &ev->start_mark, TDM_ERANGE, "longer than %u bytes (%s)", y->lim->max_string,
                              y->lim->max_string_name);
    if (strlen(tdm__yaml_sval(ev)) != n)
        return tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "contains a NUL character");
    char *s = malloc(n + 1);
    if (!s) return tdm__yaml_fail(y, &ev->start_mark, TDM_ENOMEM, "out of memory");
    memcpy(s, tdm__yaml_sval(ev), n + 1);
    *(char **)dst = s;
    return TDM_OK;
}

void *tdm__yaml_grow(tdm__yaml *y, const yaml_mark_t *at, void *arr, uint32_t n, size_t size, uint32_t limit,
                     const char *what, int *rc)
{
    if (n >= limit) {
        *rc = tdm__yaml_fail(y, at, TDM_ERANGE, "more than %u %s", limit, what);
        return NULL;
    }
    if (n == 0 || (n >= 8 && (n & (n - 1)) == 0)) {
        void *p = realloc(arr, (n == 0 ? 8 : 2 * (size_t)n) * size);
        if (!p) {
            *rc = tdm__yaml_fail(y, at, TDM_ENOMEM, "out of memory");
            return NULL;
        }
        arr = p;
    }
    memset((char *)arr + (size_t)n * size, 0, size);
    return arr;
}

/* ---- mappings and lists ---------------------------------------------------------- */

int tdm__yaml_read_map(tdm__yaml *y, const yaml_event_t *start, tdm__yaml_field *f, size_t nf)
{
    if (tdm__yaml_is_null(start)) return TDM_OK;
    if (start->type != YAML_MAPPING_START_EVENT) return tdm__yaml_bad_kind(y, start, "a mapping");
    for (;;) {
        yaml_event_t k, v;
        int rc = tdm__yaml_next(y, &k);
        if (rc) return rc;
        if (k.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&k);
            return TDM_OK;
        }
        tdm__yaml_field *hit = NULL;
        for (size_t i = 0; i < nf && k.type == YAML_SCALAR_EVENT; i++)
            if (tdm__yaml_sval_is(&k, f[i].key)) hit = &f[i];
        yaml_mark_t key_mark = k.start_mark;
        if (hit && hit->seen) {
            size_t m = tdm__yaml_push(y, hit->key, 0);
            rc = tdm__yaml_fail(y, &k.start_mark, TDM_EFORMAT, "the key appears twice");
            tdm__yaml_pop(y, m);
        } else {
            rc = tdm__yaml_skip(y, &k); /* a key that is itself a list or mapping: not one of ours */
        }
        yaml_event_delete(&k);
        if (rc || (rc = tdm__yaml_next(y, &v))) return rc;
        if (hit) {
            hit->seen = 1;
            hit->mark = key_mark;
            size_t m = tdm__yaml_push(y, hit->key, 0);
            rc = hit->fn(y, &v, hit->dst);
            tdm__yaml_pop(y, m);
        } else {
            rc = tdm__yaml_skip(y, &v);
        }
        yaml_event_delete(&v);
        if (rc) return rc;
    }
}

int tdm__yaml_fail_field(tdm__yaml *y, const tdm__yaml_field *f, int code, const char *fmt, ...)
{
    size_t m = tdm__yaml_push(y, f->key, 0);
    va_list ap;
    va_start(ap, fmt);
    vfail(y, &f->mark, code, fmt, ap);
    va_end(ap);
    tdm__yaml_pop(y, m);
    return code;
}

int tdm__yaml_read_seq(tdm__yaml *y, const yaml_event_t *start, tdm__yaml_item_fn fn, void *dst)
{
    if (tdm__yaml_is_null(start)) return TDM_OK;
    if (start->type != YAML_SEQUENCE_START_EVENT) return tdm__yaml_bad_kind(y, start, "a list");
    for (uint32_t i = 0;; i++) {
        yaml_event_t v;
        int rc = tdm__yaml_next(y, &v);
        if (rc) return rc;
        if (v.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&v);
            return TDM_OK;
        }
        size_t m = tdm__yaml_push(y, NULL, i);
        rc = fn(y, &v, dst, i);
        tdm__yaml_pop(y, m);
        yaml_event_delete(&v);
        if (rc) return rc;
    }
}

static int item_scalar(tdm__yaml *y, const yaml_event_t *ev, void *dst, uint32_t i)
{
    static const size_t size[3] = {sizeof(char *), sizeof(double), sizeof(uint8_t)};
    static const tdm__yaml_read_fn get[3] = {tdm__yaml_read_string, tdm__yaml_read_double, tdm__yaml_read_bool};
    tdm__yaml_list *l = dst;
    int rc = TDM_OK;
    void *a = tdm__yaml_grow(y, &ev->start_mark, l->arr, i, size[l->type], l->limit, l->what, &rc);
    if (!a) return rc;
    l->arr = a;
    rc = get[l->type](y, ev, (char *)a + i * size[l->type]);
    if (rc == TDM_OK) l->n = i + 1;
    return rc;
}

int tdm__yaml_read_list(tdm__yaml *y, const yaml_event_t *ev, void *dst)
{
    return tdm__yaml_read_seq(y, ev, item_scalar, dst);
}

int tdm__yaml_read_tuple(tdm__yaml *y, const yaml_event_t *ev, uint32_t n, const char *what, tdm__yaml_read_fn get,
                         void *out, size_t size)
{
    if (ev->type != YAML_SEQUENCE_START_EVENT) return tdm__yaml_bad_kind(y, ev, "a list");
    for (uint32_t i = 0;; i++) {
        yaml_event_t e;
        int rc = tdm__yaml_next(y, &e);
        if (rc) return rc;
        if (e.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&e);
            return i == n ? TDM_OK
                          : tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "expected %u %s, got %u", n, what, i);
        }
        if (i >= n) {
            rc = tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "expected %u %s, got more", n, what);
        } else {
            size_t m = tdm__yaml_push(y, NULL, i);
            rc = get(y, &e, (char *)out + i * size);
            tdm__yaml_pop(y, m);
        }
        yaml_event_delete(&e);
        if (rc) return rc;
    }
}

int tdm__yaml_read_empty(tdm__yaml *y, const yaml_event_t *ev, void *why)
{
    if (tdm__yaml_is_null(ev)) return TDM_OK;
    if (ev->type != YAML_SEQUENCE_START_EVENT) return tdm__yaml_bad_kind(y, ev, "a list");
    yaml_event_t e;
    int rc = tdm__yaml_next(y, &e);
    if (rc == TDM_OK && e.type != YAML_SEQUENCE_END_EVENT)
        rc = tdm__yaml_fail(y, &ev->start_mark, TDM_EFORMAT, "not supported: %s", (const char *)why);
    yaml_event_delete(&e);
    return rc;
}

/* (name, index), sorted by name then index: C11's qsort has no context argument. */
typedef struct named_at { const char *name; uint32_t index; } named_at;
static int cmp_named_at(const void *a, const void *b)
{
    const named_at *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

int tdm__yaml_check_distinct(tdm__yaml *y, const tdm__yaml_field *f, char *const *names, uint32_t n)
{
    if (n < 2) return TDM_OK;
    named_at *v = malloc((size_t)n * sizeof *v);
    if (!v) return tdm__yaml_fail(y, &f->mark, TDM_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) v[i] = (named_at){names[i], i};
    qsort(v, n, sizeof *v, cmp_named_at);
    /* the first repeat in the list's order: the least index of a name equal to the one before it */
    uint32_t first = UINT32_MAX;
    for (uint32_t k = 1; k < n; k++)
        if (v[k].index < first && strcmp(v[k].name, v[k - 1].name) == 0) first = v[k].index;
    free(v);
    if (first == UINT32_MAX) return TDM_OK;
    size_t m = tdm__yaml_push(y, f->key, 0);
    tdm__yaml_push(y, NULL, first);
    int rc = tdm__yaml_fail(y, &f->mark, TDM_EFORMAT, "'%s' is named twice", names[first]);
    tdm__yaml_pop(y, m);
    return rc;
}

/* ---- driving the parser -------------------------------------------------------------- */

static int read_file(void *data, unsigned char *buf, size_t size, size_t *size_read)
{
    tdm__yaml *y = data;
    size_t n = fread(buf, 1, size, y->f);
    if (n == 0 && ferror(y->f)) {
        y->read_errno = errno ? errno : EIO;
        return 0;
    }
    y->bytes += n;
    if (y->bytes > y->lim->max_bytes) {
        y->too_big = 1;
        return 0;
    }
    *size_read = n;
    return 1;
}

/* One document, whose root node `root` reads. */
static int run(tdm__yaml *y, tdm__yaml_read_fn root, void *dst)
{
    yaml_event_t ev;
    int rc;
    if ((rc = tdm__yaml_next(y, &ev))) return rc; /* stream start */
    yaml_event_delete(&ev);
    if ((rc = tdm__yaml_next(y, &ev))) return rc;
    if (ev.type == YAML_STREAM_END_EVENT)
        rc = tdm__yaml_fail(y, &ev.start_mark, TDM_EFORMAT, "no YAML document (empty file)");
    yaml_event_delete(&ev); /* document start */
    if (rc || (rc = tdm__yaml_next(y, &ev))) return rc;
    rc = root(y, &ev, dst);
    yaml_event_delete(&ev);
    if (rc || (rc = tdm__yaml_next(y, &ev))) return rc; /* document end */
    yaml_event_delete(&ev);
    if ((rc = tdm__yaml_next(y, &ev))) return rc;
    if (ev.type != YAML_STREAM_END_EVENT)
        rc = tdm__yaml_fail(y, &ev.start_mark, TDM_EFORMAT, "a second YAML document (one is expected)");
    yaml_event_delete(&ev);
    return rc;
}

int tdm__yaml_parse(const char *path, const char *yaml, size_t len, const char *name,
                    const tdm__yaml_limits *lim, tdm__yaml_read_fn root, void *dst, char *err, size_t errlen)
{
    tdm__yaml y;
    memset(&y, 0, sizeof y);
    y.lim = lim;
    y.err = err;
    y.errlen = errlen;
    y.file = path ? path : (name ? name : "(string)");
    if (err && errlen > 0) err[0] = 0;
    if (path) {
        if (!(y.f = fopen(path, "rb"))) return msg(&y, TDM_EIO, "%s: %s", path, strerror(errno));
        struct stat st; /* a regular file too big is refused before reading; read_file counts the rest */
        if (fstat(fileno(y.f), &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > lim->max_bytes) {
            fclose(y.f);
            return too_big(&y);
        }
    } else if (len > lim->max_bytes) {
        return too_big(&y);
    }
    int rc;
    if (!yaml_parser_initialize(&y.parser)) {
        rc = msg(&y, TDM_ENOMEM, "%s: out of memory", y.file);
        goto done;
    }
    if (y.f) yaml_parser_set_input(&y.parser, read_file, &y);
    else yaml_parser_set_input_string(&y.parser, (const unsigned char *)(yaml ? yaml : ""), len);
    rc = run(&y, root, dst);
    yaml_parser_delete(&y.parser);
done:
    if (y.f) fclose(y.f);
    return rc;
}
