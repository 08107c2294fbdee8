#include "codec.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "../proto/varint.h"

/* The block kept between frames: a pose query decodes in a few hundred bytes. */
#define SMALL_BLOCK 8192u
#define ALIGN 16u

typedef struct block {
    struct block *next;
    size_t cap, used;
    alignas(16) unsigned char data[];
} block;

struct tdm_arena {
    block *head;       /* current block; older ones follow */
    size_t allocated;  /* bytes handed out since the reset */
    size_t budget;     /* most bytes that may be handed out */
    int failed;        /* the budget was exceeded (as opposed to a malformed frame) */
};

static block *block_new(size_t cap)
{
    block *b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->next = NULL;
    b->cap = cap;
    b->used = 0;
    return b;
}

tdm_arena *tdm_arena_new(void)
{
    tdm_arena *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->head = block_new(SMALL_BLOCK);
    if (!a->head) {
        free(a);
        return NULL;
    }
    return a;
}

void tdm_arena_reset(tdm_arena *a)
{
    /* keep the oldest block if it is the small one, free the rest */
    block *b = a->head, *keep = NULL;
    while (b) {
        block *next = b->next;
        if (!next && b->cap == SMALL_BLOCK) keep = b;
        else free(b);
        b = next;
    }
    if (!keep) keep = block_new(SMALL_BLOCK); /* NULL is handled by arena_alloc */
    if (keep) keep->used = 0;
    a->head = keep;
    a->allocated = 0;
    a->failed = 0;
}

void tdm_arena_free(tdm_arena *a)
{
    if (!a) return;
    for (block *b = a->head; b;) {
        block *next = b->next;
        free(b);
        b = next;
    }
    free(a);
}

size_t tdm_arena_allocated(const tdm_arena *a) { return a->allocated; }

static void *arena_alloc(void *data, size_t size)
{
    tdm_arena *a = data;
    size_t need = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (need < size || need > a->budget - a->allocated || a->allocated > a->budget) {
        a->failed = 1;
        return NULL;
    }
    block *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = b ? b->cap * 2 : SMALL_BLOCK;
        if (cap < need) cap = need;
        if (cap > a->budget - a->allocated && need <= a->budget - a->allocated) cap = a->budget - a->allocated;
        block *nb = block_new(cap);
        if (!nb) {
            a->failed = 1;
            return NULL;
        }
        nb->next = b;
        a->head = b = nb;
    }
    void *p = b->data + b->used;
    b->used += need;
    a->allocated += need;
    return p;
}

static void arena_free(void *data, void *ptr)
{
    (void)data;
    (void)ptr; /* released with the arena */
}

Tandem__V1__Request *tdm_decode_request(tdm_arena *a, const uint8_t *buf, size_t len, const char **why)
{
    size_t budget = len > (SIZE_MAX - TDM_DECODE_BUDGET_BASE) / TDM_DECODE_BUDGET_PER_BYTE
                        ? SIZE_MAX
                        : len * TDM_DECODE_BUDGET_PER_BYTE + TDM_DECODE_BUDGET_BASE;
    a->budget = budget;
    ProtobufCAllocator alloc = {arena_alloc, arena_free, a};
    Tandem__V1__Request *r = tandem__v1__request__unpack(&alloc, len, buf);
    if (!r) *why = a->failed ? "the frame needs more memory to decode than its size allows" : "the frame is not a valid tandem.v1.Request";
    return r;
}

/* ---- the Query reply ------------------------------------------------------------------------ */

/* Field tags (field number << 3 | wire type) of the messages written here. */
enum {
    TAG_REPLY_ID = 1 << 3 | 0,
    TAG_REPLY_QUERY = 17 << 3 | 2, /* two bytes as a varint */
    TAG_RESULTS = 1 << 3 | 2,
    TAG_COLLIDING = 1 << 3 | 0,
    TAG_OBJECT_A = 2 << 3 | 0,
    TAG_OBJECT_B = 3 << 3 | 0,
    TAG_CONTACTS = 4 << 3 | 0,
    TAG_TRUNCATED = 5 << 3 | 0,
    TAG_PAIRS = 6 << 3 | 2,
};

/* proto3: a field holding its default value (0, false) is left out. Branch
 * free: most results of a batch are alike, but the few collisions among them
 * would each cost a mispredicted branch. */
static size_t u32_field_size(uint32_t v)
{
    size_t vs = 1 + (v >= 1u << 7) + (v >= 1u << 14) + (v >= 1u << 21) + (v >= 1u << 28);
    return (size_t)(v != 0) * (1 + vs);
}

static uint8_t *put_u32_field(uint8_t *p, unsigned tag, uint32_t v)
{
    if (!v) return p;
    *p++ = (uint8_t)tag;
    return tdm_varint_put(p, v);
}

static size_t contact_size(const tdm_sched_contact *c)
{
    return u32_field_size(c->object_a) + u32_field_size(c->triangle_a) + u32_field_size(c->object_b) +
           u32_field_size(c->triangle_b);
}

/* A QueryResult's body (without its tag and length). The pair of objects is
 * sent only with a collision. */
static size_t result_size(const tdm_sched_result *q, const tdm_sched_contact *pairs)
{
    size_t s = (size_t)(q->colliding != 0) * (2 + u32_field_size(q->object_a) + u32_field_size(q->object_b)) +
               u32_field_size(q->contacts) + (size_t)(q->truncated != 0) * 2;
    if (pairs)
        for (uint32_t t = 0; t < q->n_pairs; t++) {
            size_t c = contact_size(&pairs[t]);
            s += 1 + tdm_varint_size(c) + c;
        }
    return s;
}

static size_t results_size(const tdm_sched_result *r, uint32_t n, const tdm_sched_contact *pairs, uint32_t stride)
{
    size_t s = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t b = result_size(&r[i], pairs ? pairs + (size_t)i * stride : NULL);
        s += 1 + tdm_varint_size(b) + b;
    }
    return s;
}

/* Room for the Reply's id and query field's tag and length, in front of the
 * results: 1 + 10, 2, 5 bytes. */
#define REPLY_HEAD_MAX 18u
/* A result without pairs: tag, length, 2 + 6 + 6 + 6 + 2 bytes of fields. */
#define RESULT_MAX 24u

/* A contact pair: tag, length, four fields of at most 1 + 5 bytes. */
#define PAIR_MAX 26u

uint64_t tdm_query_reply_max(uint64_t n, uint64_t pairs) { return 4 + REPLY_HEAD_MAX + n * RESULT_MAX + pairs * PAIR_MAX; }

size_t tdm_query_reply_bound(const tdm_sched_result *results, uint32_t n, const tdm_sched_contact *pairs, uint32_t stride)
{
    return REPLY_HEAD_MAX + (pairs ? results_size(results, n, pairs, stride) : (size_t)n * RESULT_MAX);
}

/* A result's fields; p is past its tag and length. */
static uint8_t *put_result(uint8_t *p, const tdm_sched_result *q)
{
    if (q->colliding) {
        *p++ = TAG_COLLIDING;
        *p++ = 1;
        p = put_u32_field(p, TAG_OBJECT_A, q->object_a);
        p = put_u32_field(p, TAG_OBJECT_B, q->object_b);
    }
    p = put_u32_field(p, TAG_CONTACTS, q->contacts);
    if (q->truncated) {
        *p++ = TAG_TRUNCATED;
        *p++ = 1;
    }
    return p;
}

size_t tdm_query_reply_write(uint8_t *out, uint64_t id, const tdm_sched_result *results, uint32_t n,
                             const tdm_sched_contact *pairs, uint32_t stride)
{
    /* the results first, after room for the head, whose length field needs their size */
    uint8_t *p = out + REPLY_HEAD_MAX;
    for (uint32_t i = 0; i < n; i++) {
        const tdm_sched_result *q = &results[i];
        const tdm_sched_contact *qp = pairs ? pairs + (size_t)i * stride : NULL;
        *p++ = TAG_RESULTS;
        if (!qp || !q->n_pairs) {
            /* at most RESULT_MAX - 2 bytes: a one-byte length, written after them */
            uint8_t *len = p++;
            p = put_result(p, q);
            *len = (uint8_t)(p - len - 1);
            continue;
        }
        p = tdm_varint_put(p, result_size(q, qp));
        p = put_result(p, q);
        for (uint32_t t = 0; t < q->n_pairs; t++) {
            *p++ = TAG_PAIRS;
            p = tdm_varint_put(p, contact_size(&qp[t]));
            /* Contact's fields are tagged 1..4 like QueryResult's first four */
            p = put_u32_field(p, 1 << 3, qp[t].object_a);
            p = put_u32_field(p, 2 << 3, qp[t].triangle_a);
            p = put_u32_field(p, 3 << 3, qp[t].object_b);
            p = put_u32_field(p, 4 << 3, qp[t].triangle_b);
        }
    }
    size_t q = (size_t)(p - out) - REPLY_HEAD_MAX;
    uint8_t head[REPLY_HEAD_MAX], *h = head;
    if (id) {
        *h++ = TAG_REPLY_ID;
        h = tdm_varint_put(h, id);
    }
    h = tdm_varint_put(h, TAG_REPLY_QUERY);
    h = tdm_varint_put(h, q);
    size_t nh = (size_t)(h - head);
    memmove(out + nh, out + REPLY_HEAD_MAX, q);
    memcpy(out, head, nh);
    return nh + q;
}

int tdm_utf8_valid(const char *s, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (p[n]) {
        if (n >= max) return 0;
        unsigned char c = p[n];
        size_t k;
        uint32_t cp;
        if (c < 0x80) { n++; continue; }
        else if ((c & 0xe0) == 0xc0) { k = 1; cp = c & 0x1f; }
        else if ((c & 0xf0) == 0xe0) { k = 2; cp = c & 0x0f; }
        else if ((c & 0xf8) == 0xf0) { k = 3; cp = c & 0x07; }
        else return 0;
        for (size_t i = 1; i <= k; i++) {
            if ((p[n + i] & 0xc0) != 0x80) return 0; /* also stops at the terminating 0 */
            cp = cp << 6 | (p[n + i] & 0x3f);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        n += k + 1;
    }
    return n <= max;
}
