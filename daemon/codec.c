#include "codec.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

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
