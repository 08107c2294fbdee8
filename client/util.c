/* Small shared pieces: error text, ids in hex, the output buffer, the pending-request table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

const char *tdm_client_strerror(int err)
{
    switch (err) {
    case TDM_CLIENT_OK: return "success";
    case TDM_CLIENT_EINVAL: return "invalid argument";
    case TDM_CLIENT_ENOMEM: return "out of memory";
    case TDM_CLIENT_EADDR: return "bad or unresolvable address";
    case TDM_CLIENT_ECONNECT: return "cannot connect";
    case TDM_CLIENT_ETIMEOUT: return "timed out";
    case TDM_CLIENT_EIO: return "socket error";
    case TDM_CLIENT_ECLOSED: return "connection closed";
    case TDM_CLIENT_EPROTO: return "protocol error";
    case TDM_CLIENT_ELIMIT: return "over a server limit";
    case TDM_CLIENT_ESERVER: return "server error";
    case TDM_CLIENT_EVERSION: return "unsupported protocol version";
    case TDM_CLIENT_ENOBUFS: return "buffer too small";
    case TDM_CLIENT_ECANCELED: return "canceled";
    default: return "unknown error";
    }
}

const char *tdm_server_code_name(int code)
{
    static const char *const names[] = {"unspecified",  "bad request",   "unsupported version", "unauthenticated",
                                        "limit",        "non-finite",    "bad index",           "not unit",
                                        "empty",        "unknown mesh",  "unknown scene",       "mesh in use",
                                        "no memory",    "storage",       "busy",                "internal",
                                        "unknown robot", "robot in use", "bad robot"};
    return code >= 0 && code < (int)(sizeof names / sizeof names[0]) ? names[code] : "unknown";
}

const char *tdm_engine_name(int engine)
{
    switch (engine) {
    case TDM_ENGINE_CPU: return "cpu";
    case TDM_ENGINE_GPU: return "gpu";
    case TDM_ENGINE_HYBRID: return "hybrid";
    default: return "unspecified";
    }
}

char *tdm_id_to_hex(const uint8_t id[TDM_ID_BYTES], char hex[TDM_ID_HEX])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < TDM_ID_BYTES; i++) {
        hex[2 * i] = digits[id[i] >> 4];
        hex[2 * i + 1] = digits[id[i] & 15];
    }
    hex[2 * TDM_ID_BYTES] = 0;
    return hex;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int tdm_id_from_hex(const char *hex, uint8_t id[TDM_ID_BYTES])
{
    if (!hex || strlen(hex) != 2 * TDM_ID_BYTES) return TDM_CLIENT_EINVAL;
    for (int i = 0; i < TDM_ID_BYTES; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return TDM_CLIENT_EINVAL;
        id[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

void tdm__vfmt(char *dst, size_t cap, const char *fmt, va_list ap)
{
    if (cap == 0) return;
    vsnprintf(dst, cap, fmt, ap);
}

void tdm__fmt(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tdm__vfmt(dst, cap, fmt, ap);
    va_end(ap);
}

double tdm__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- output buffer -------------------------------------------------------------------------- */

int tdm__buf_reserve(tdm__buf *b, size_t more)
{
    if (b->cap - b->len >= more) return 0;
    if (b->off > 0) { /* slide unwritten bytes to the front before growing */
        memmove(b->data, b->data + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->cap - b->len >= more) return 0;
    }
    if (more > SIZE_MAX - b->len) return TDM_CLIENT_ENOMEM;
    size_t need = b->len + more, ncap = b->cap ? b->cap : 4096;
    while (ncap < need) ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    uint8_t *nd = realloc(b->data, ncap);
    if (!nd) return TDM_CLIENT_ENOMEM;
    b->data = nd;
    b->cap = ncap;
    return 0;
}

void tdm__buf_consume(tdm__buf *b, size_t n, size_t keep)
{
    b->off += n;
    if (b->off < b->len) return;
    b->off = b->len = 0;
    if (b->cap > keep) { /* after a large mesh upload, give the memory back */
        free(b->data);
        b->data = NULL;
        b->cap = 0;
    }
}

void tdm__buf_free(tdm__buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* ---- pending requests ------------------------------------------------------------------------
 * Ids are handed out in sequence, so slot id & mask is collision-free as long as the ids in
 * flight span less than the capacity; a collision doubles the table. */

int tdm__ptable_init(tdm__ptable *t, size_t cap)
{
    size_t c = 16;
    while (c < cap) c *= 2;
    t->slots = calloc(c, sizeof *t->slots);
    if (!t->slots) return TDM_CLIENT_ENOMEM;
    t->mask = c - 1;
    t->count = 0;
    return 0;
}

void tdm__ptable_free(tdm__ptable *t)
{
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static int ptable_grow(tdm__ptable *t, uint64_t id)
{
    size_t cap = (t->mask + 1) * 2;
    for (;;) {
        tdm__pending *ns = calloc(cap, sizeof *ns);
        if (!ns) return TDM_CLIENT_ENOMEM;
        size_t m = cap - 1;
        bool ok = !ns[id & m].id;
        ns[id & m].id = id; /* reserve the newcomer's slot while checking the others */
        for (size_t i = 0; ok && i <= t->mask; i++) {
            if (!t->slots[i].id) continue;
            tdm__pending *d = &ns[t->slots[i].id & m];
            if (d->id) ok = false;
            else *d = t->slots[i];
        }
        if (ok) {
            ns[id & m].id = 0;
            free(t->slots);
            t->slots = ns;
            t->mask = m;
            return 0;
        }
        free(ns);
        if (cap > SIZE_MAX / 2 / sizeof *ns) return TDM_CLIENT_ENOMEM;
        cap *= 2;
    }
}

tdm__pending *tdm__ptable_add(tdm__ptable *t, uint64_t id)
{
    if (t->slots[id & t->mask].id && ptable_grow(t, id)) return NULL;
    tdm__pending *p = &t->slots[id & t->mask];
    memset(p, 0, sizeof *p);
    p->id = id;
    p->state = TDM__WAITING;
    t->count++;
    return p;
}

tdm__pending *tdm__ptable_get(tdm__ptable *t, uint64_t id)
{
    if (id == 0) return NULL;
    tdm__pending *p = &t->slots[id & t->mask];
    return p->id == id ? p : NULL;
}

void tdm__ptable_del(tdm__ptable *t, tdm__pending *p)
{
    free(p->err);
    memset(p, 0, sizeof *p);
    t->count--;
}

tdm__pending *tdm__ptable_min_waiting(tdm__ptable *t)
{
    tdm__pending *best = NULL;
    if (!t->count) return NULL;
    for (size_t i = 0; i <= t->mask; i++) {
        tdm__pending *p = &t->slots[i];
        if (p->id && p->state == TDM__WAITING && (!best || p->id < best->id)) best = p;
    }
    return best;
}
