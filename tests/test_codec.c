/* The query reply's hand-written codecs, against protobuf-c on random replies.
 *
 *   reply_bytes_*     tandemd's writer (daemon/codec.c) gives the very bytes protobuf-c's
 *                     packing gives, for random results, pairs and ids
 *   reader_*          libtandem's reader decodes random encodings (fields in any order,
 *                     repeated scalars, unknown fields of every wire type, padded varints)
 *                     to what protobuf-c decodes from the same bytes
 *   reader_refuses_*  damaged replies: whatever protobuf-c refuses the reader refuses, and
 *                     what the reader accepts protobuf-c reads the same way */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/tandem.h>

#include "check.h"
#include "codec_reader.h"
#include "daemon/codec.h"
#include "gen.h"

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0xc0dec5eedull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(codec, .init = suite_init);

/* Values around the varint's byte boundaries, or any. */
static uint32_t some_u32(gen_rng *g)
{
    static const uint32_t edge[] = {0, 1, 2, 127, 128, 255, 16383, 16384, 2097151, 2097152, 268435455, 268435456,
                                    2147483647u, 2147483648u, UINT32_MAX};
    switch (gen_int(g, 0, 3)) {
    case 0: return edge[gen_int(g, 0, (int64_t)(sizeof edge / sizeof *edge) - 1)];
    case 1: return (uint32_t)gen_int(g, 0, 300);
    default: return (uint32_t)gen_next(g) >> gen_int(g, 0, 31);
    }
}

/* ---- the daemon's writer against protobuf-c's packing ----------------------------------- */

/* The Reply as tandemd packed it with protobuf-c before the writer (then in daemon/request.c). */
static uint8_t *pack_reference(uint64_t id, const tdm_sched_result *res, uint32_t n, const tdm_sched_contact *pairs,
                               uint32_t stride, size_t *len)
{
    Tandem__V1__QueryResult *r = calloc(n + 1, sizeof *r);
    Tandem__V1__QueryResult **rp = calloc(n + 1, sizeof *rp);
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++) total += pairs ? res[i].n_pairs : 0;
    Tandem__V1__Contact *c = calloc(total + 1, sizeof *c);
    Tandem__V1__Contact **cp = calloc(total + 1, sizeof *cp);
    cr_assert(r && rp && c && cp);
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        tandem__v1__query_result__init(&r[i]);
        r[i].colliding = res[i].colliding != 0;
        if (res[i].colliding) {
            r[i].object_a = res[i].object_a;
            r[i].object_b = res[i].object_b;
        }
        r[i].contacts = res[i].contacts;
        r[i].truncated = res[i].truncated != 0;
        if (pairs && res[i].n_pairs) {
            r[i].n_pairs = res[i].n_pairs;
            r[i].pairs = &cp[k];
            for (uint32_t t = 0; t < res[i].n_pairs; t++, k++) {
                const tdm_sched_contact *s = &pairs[(size_t)i * stride + t];
                tandem__v1__contact__init(&c[k]);
                c[k].object_a = s->object_a;
                c[k].triangle_a = s->triangle_a;
                c[k].object_b = s->object_b;
                c[k].triangle_b = s->triangle_b;
                cp[k] = &c[k];
            }
        }
        rp[i] = &r[i];
    }
    Tandem__V1__QueryReply qr = TANDEM__V1__QUERY_REPLY__INIT;
    qr.n_results = n;
    qr.results = rp;
    Tandem__V1__Reply reply = TANDEM__V1__REPLY__INIT;
    reply.id = id;
    reply.body_case = TANDEM__V1__REPLY__BODY_QUERY;
    reply.query = &qr;
    *len = tandem__v1__reply__get_packed_size(&reply);
    uint8_t *out = malloc(*len + 1);
    cr_assert(out);
    cr_assert_eq(tandem__v1__reply__pack(&reply, out), *len);
    free(r);
    free(rp);
    free(c);
    free(cp);
    return out;
}

Test(codec, reply_bytes_equal_protobuf_c)
{
    gen_rng g = {seed};
    int with_pairs = 0, colliding = 0;
    for (int round = 0; round < 3000; round++) {
        uint32_t n = round % 100 == 0 ? (uint32_t)gen_int(&g, 500, 3000) : (uint32_t)gen_int(&g, 0, 40);
        int contacts = gen_int(&g, 0, 1);
        uint32_t stride = contacts ? (uint32_t)gen_int(&g, 1, 6) : 1;
        int want_pairs = contacts && gen_int(&g, 0, 1);
        uint64_t id = gen_int(&g, 0, 4) == 0 ? 0 : gen_next(&g) >> gen_int(&g, 0, 63);
        tdm_sched_result *res = calloc(n + 1, sizeof *res);
        tdm_sched_contact *pairs = want_pairs ? calloc((size_t)n * stride + 1, sizeof *pairs) : NULL;
        cr_assert(res && (!want_pairs || pairs));
        for (uint32_t i = 0; i < n; i++) {
            tdm_sched_result *q = &res[i];
            q->colliding = gen_int(&g, 0, 2) == 0;
            /* object ids ride along without a collision too: the writer must leave them out */
            q->object_a = some_u32(&g);
            q->object_b = some_u32(&g);
            q->contacts = q->colliding ? (contacts ? some_u32(&g) : 1) : 0;
            q->truncated = contacts && q->colliding && gen_int(&g, 0, 3) == 0;
            q->n_pairs = want_pairs && q->colliding ? (uint32_t)gen_int(&g, 0, stride) : 0;
            for (uint32_t t = 0; t < q->n_pairs; t++)
                pairs[(size_t)i * stride + t] = (tdm_sched_contact){some_u32(&g), some_u32(&g), some_u32(&g), some_u32(&g)};
            colliding += q->colliding != 0;
            with_pairs += q->n_pairs > 0;
        }
        size_t ref_len;
        uint8_t *ref = pack_reference(id, res, n, pairs, stride, &ref_len);
        size_t bound = tdm_query_reply_bound(res, n, pairs, stride);
        CHECK(bound >= ref_len, "seed=%llu round %d: room for %zu bytes, protobuf-c packs %zu", (unsigned long long)seed,
              round, bound, ref_len);
        uint8_t *out = malloc(bound + 1);
        cr_assert(out);
        out[bound] = 0xa5; /* the writer stays within its bound */
        size_t len = tdm_query_reply_write(out, id, res, n, pairs, stride);
        CHECK(out[bound] == 0xa5, "seed=%llu round %d: written past the bound", (unsigned long long)seed, round);
        CHECK(len == ref_len, "seed=%llu round %d: %zu bytes, protobuf-c packs %zu", (unsigned long long)seed, round,
              len, ref_len);
        size_t at = 0;
        while (at < len && out[at] == ref[at]) at++;
        CHECK(at == len, "seed=%llu round %d (%u results): first differing byte %zu of %zu", (unsigned long long)seed,
              round, n, at, len);
        free(out);
        free(ref);
        free(res);
        free(pairs);
    }
    cr_assert(colliding > 1000 && with_pairs > 1000, "the rounds exercised too little: %d colliding, %d with pairs",
              colliding, with_pairs);
}

/* ---- libtandem's reader against protobuf-c's unpacking ---------------------------------- */

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static void put(wbuf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        cr_assert(b->p);
    }
    if (n) memcpy(b->p + b->n, src, n); /* src may be NULL when n is 0 */
    b->n += n;
}

/* A varint, with `pad` redundant continuation bytes (valid protobuf; at most 10 bytes). */
static void put_varint(wbuf *b, uint64_t v, int pad)
{
    uint8_t tmp[16];
    size_t k = 0;
    while (v >= 0x80) {
        tmp[k++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[k++] = (uint8_t)v;
    while (pad-- > 0 && k < 10) {
        tmp[k - 1] |= 0x80;
        tmp[k++] = 0;
    }
    put(b, tmp, k);
}

static void put_tag(wbuf *b, uint32_t field, int wire_type) { put_varint(b, (uint64_t)field << 3 | (uint64_t)wire_type, 0); }

static void put_value(wbuf *b, gen_rng *g, uint32_t field, uint64_t v)
{
    put_tag(b, field, 0);
    put_varint(b, v, gen_int(g, 0, 6) == 0 ? (int)gen_int(g, 1, 4) : 0);
}

static void put_sub(wbuf *b, uint32_t field, const wbuf *sub)
{
    put_tag(b, field, 2);
    put_varint(b, sub->n, 0);
    put(b, sub->p, sub->n);
}

/* An unknown field numbered from `first` (at most 25) up, up to the largest field number
 * (2^29 - 1), of any wire type but groups. */
static void put_unknown(wbuf *b, gen_rng *g, uint32_t first)
{
    static const uint32_t more[] = {0, 1, 9, 100, 2047, 536870911u - 28};
    uint32_t field = first + more[gen_int(g, 0, 5)] + (uint32_t)gen_int(g, 0, 3);
    uint8_t bytes[8];
    for (int i = 0; i < 8; i++) bytes[i] = (uint8_t)gen_next(g);
    switch (gen_int(g, 0, 3)) {
    case 0: put_tag(b, field, 0); put_varint(b, gen_next(g) >> gen_int(g, 0, 63), 0); break;
    case 1: put_tag(b, field, 1); put(b, bytes, 8); break;
    case 2: {
        size_t n = (size_t)gen_int(g, 0, 8);
        put_tag(b, field, 2);
        put_varint(b, n, 0);
        put(b, bytes, n);
        break;
    }
    default: put_tag(b, field, 5); put(b, bytes, 4); break;
    }
}

static void gen_contact(wbuf *b, gen_rng *g)
{
    int nf = (int)gen_int(g, 0, 7);
    for (int k = 0; k < nf; k++) {
        int f = (int)gen_int(g, 1, 5);
        if (f == 5) put_unknown(b, g, 5);
        else put_value(b, g, (uint32_t)f, some_u32(g));
    }
}

static void gen_result(wbuf *b, gen_rng *g)
{
    int nf = (int)gen_int(g, 0, 9);
    for (int k = 0; k < nf; k++) {
        int f = (int)gen_int(g, 1, 7);
        if (f == 1 || f == 5) {
            /* a bool: any non-zero varint is true */
            put_value(b, g, (uint32_t)f, gen_int(g, 0, 2) ? (uint64_t)gen_int(g, 0, 1) : some_u32(g));
        } else if (f <= 4) {
            put_value(b, g, (uint32_t)f, some_u32(g));
        } else if (f == 6) {
            wbuf c = {0};
            gen_contact(&c, g);
            put_sub(b, 6, &c);
            free(c.p);
        } else {
            put_unknown(b, g, 7);
        }
    }
}

/* A QueryReply body: results with unknown fields between them. */
static void gen_query_reply(wbuf *b, gen_rng *g)
{
    int n = gen_int(g, 0, 9) == 0 ? (int)gen_int(g, 100, 400) : (int)gen_int(g, 0, 12);
    for (int i = 0; i < n; i++) {
        if (gen_int(g, 0, 9) == 0) put_unknown(b, g, 2);
        wbuf r = {0};
        gen_result(&r, g);
        put_sub(b, 1, &r);
        free(r.p);
    }
}

/* The frame of a Reply {id, query: body}, with unknown fields around them. */
static void frame_of(wbuf *f, gen_rng *g, const wbuf *body, uint64_t id)
{
    wbuf r = {0};
    if (gen_int(g, 0, 3) == 0) put_unknown(&r, g, 25);
    if (id) put_value(&r, g, 1, id);
    if (gen_int(g, 0, 3) == 0) put_unknown(&r, g, 25);
    put_sub(&r, 17, body);
    if (gen_int(g, 0, 3) == 0) put_unknown(&r, g, 25);
    uint8_t len[4] = {(uint8_t)(r.n >> 24), (uint8_t)(r.n >> 16), (uint8_t)(r.n >> 8), (uint8_t)r.n};
    f->n = 0;
    put(f, len, 4);
    put(f, r.p, r.n);
    free(r.p);
}

/* Compares the reader's reply with protobuf-c's reading of the same frame; NULL when equal. */
static const char *differs(const rd_reply *rd, const Tandem__V1__Reply *pc, char *why, size_t len)
{
    if (rd->id != pc->id) return "the id";
    if (pc->body_case != TANDEM__V1__REPLY__BODY_QUERY || rd->type != 17) return "the body type";
    const Tandem__V1__QueryReply *q = pc->query;
    if (rd->n_results != q->n_results) {
        snprintf(why, len, "%zu results, protobuf-c %zu", rd->n_results, q->n_results);
        return why;
    }
    size_t k = 0;
    for (size_t i = 0; i < q->n_results; i++) {
        const Tandem__V1__QueryResult *e = q->results[i];
        const rd_result *a = &rd->results[i];
        if (a->colliding != (uint32_t)e->colliding || a->truncated != (uint32_t)e->truncated ||
            a->contacts != e->contacts || a->object_a != e->object_a || a->object_b != e->object_b ||
            a->n_pairs != e->n_pairs || a->first_pair != k) {
            snprintf(why, len, "result %zu: %u/%u/%u/%u/%u/%u, protobuf-c %d/%d/%u/%u/%u/%zu", i, a->colliding,
                     a->truncated, a->contacts, a->object_a, a->object_b, a->n_pairs, e->colliding, e->truncated,
                     e->contacts, e->object_a, e->object_b, e->n_pairs);
            return why;
        }
        for (size_t t = 0; t < e->n_pairs; t++, k++) {
            const Tandem__V1__Contact *c = e->pairs[t];
            const rd_pair *p = &rd->pairs[k];
            if (p->object_a != c->object_a || p->triangle_a != c->triangle_a || p->object_b != c->object_b ||
                p->triangle_b != c->triangle_b) {
                snprintf(why, len, "result %zu pair %zu", i, t);
                return why;
            }
        }
    }
    if (rd->n_pairs != k) return "the pair count";
    return NULL;
}

Test(codec, reader_decodes_like_protobuf_c)
{
    gen_rng g = {seed ^ 2};
    wbuf frame = {0};
    size_t results = 0;
    for (int round = 0; round < 3000; round++) {
        wbuf body = {0};
        gen_query_reply(&body, &g);
        frame_of(&frame, &g, &body, gen_int(&g, 0, 3) ? gen_next(&g) >> gen_int(&g, 0, 63) : 0);
        Tandem__V1__Reply *pc = tandem__v1__reply__unpack(NULL, frame.n - 4, frame.p + 4);
        CHECK(pc, "seed=%llu round %d: protobuf-c refuses a valid reply", (unsigned long long)seed, round);
        rd_reply rd;
        char err[512], why[256];
        CHECK(rd_decode(frame.p, frame.n, &rd, err, sizeof err), "seed=%llu round %d: the reader refuses: %s",
              (unsigned long long)seed, round, err);
        const char *d = differs(&rd, pc, why, sizeof why);
        CHECK(!d, "seed=%llu round %d: the reader and protobuf-c differ in %s", (unsigned long long)seed, round, d);
        results += rd.n_results;
        rd_reply_free(&rd);
        tandem__v1__reply__free_unpacked(pc, NULL);
        free(body.p);
    }
    free(frame.p);
    cr_assert(results > 30000, "only %zu results decoded", results);
}

Test(codec, reader_refuses_what_protobuf_c_refuses)
{
    gen_rng g = {seed ^ 3};
    wbuf frame = {0};
    int accepted = 0, refused = 0;
    for (int round = 0; round < 20000; round++) {
        wbuf body = {0};
        gen_query_reply(&body, &g);
        if (body.n == 0) {
            free(body.p);
            continue;
        }
        /* damage the QueryReply only, so that the frame stays a Reply with a query body */
        int hits = (int)gen_int(&g, 1, 3);
        for (int h = 0; h < hits; h++) {
            size_t at = (size_t)gen_int(&g, 0, (int64_t)body.n - 1);
            switch (gen_int(&g, 0, 3)) {
            case 0: body.p[at] = (uint8_t)gen_next(&g); break;
            case 1: body.p[at] ^= (uint8_t)(1u << gen_int(&g, 0, 7)); break;
            case 2: body.n = at; break; /* cut */
            default: body.p[at] = (uint8_t)(gen_int(&g, 0, 1) ? 0x80 | gen_next(&g) : (uint64_t)gen_int(&g, 0, 7)); break;
            }
            if (body.n == 0) break;
        }
        frame_of(&frame, &g, &body, (uint64_t)round + 1);
        Tandem__V1__Reply *pc = tandem__v1__reply__unpack(NULL, frame.n - 4, frame.p + 4);
        rd_reply rd;
        char err[512], why[256];
        int ok = rd_decode(frame.p, frame.n, &rd, err, sizeof err);
        if (ok) {
            CHECK(pc, "seed=%llu round %d: the reader accepts a reply protobuf-c refuses", (unsigned long long)seed,
                  round);
            const char *d = differs(&rd, pc, why, sizeof why);
            CHECK(!d, "seed=%llu round %d: the reader and protobuf-c differ in %s", (unsigned long long)seed, round,
                  d);
            rd_reply_free(&rd);
            accepted++;
        } else {
            /* a reason a person can use, not a placeholder */
            CHECK((strstr(err, "malformed") || strstr(err, "undecodable")) && !strstr(err, "(none)") &&
                      !strstr(err, ": ?"),
                  "seed=%llu round %d: refused with '%s'", (unsigned long long)seed, round, err);
            refused++;
        }
        if (pc) tandem__v1__reply__free_unpacked(pc, NULL);
        free(body.p);
    }
    free(frame.p);
    cr_log_info("damaged replies: %d accepted (read as protobuf-c reads them), %d refused", accepted, refused);
    cr_assert(accepted > 1000 && refused > 1000, "too one-sided: %d accepted, %d refused", accepted, refused);
}

/* A peer whose first bytes make no frame is named for what it is (issue 14, point
 * 10): "not a Tandem server", with those bytes shown escaped. */
Test(codec, a_foreign_server_is_named)
{
    static const char *const greetings[] = {"HTTP/1.1 400 Bad Request\r\n\r\n", "SSH-2.0-OpenSSH_9.2\r\n"};
    static const char *const shown[] = {"\"HTTP/1.1 400 Bad\"", "\"SSH-2.0-OpenSSH_\""};
    for (int g = 0; g < 2; g++) {
        rd_reply out;
        char err[256] = "";
        cr_assert_eq(rd_decode((const uint8_t *)greetings[g], strlen(greetings[g]), &out, err, sizeof err), 0,
                     "greeting %d was taken for a reply", g);
        char want[128];
        snprintf(want, sizeof want, "not a Tandem server: its first bytes were %s", shown[g]);
        cr_assert(strstr(err, want) != NULL, "'%s', want '%s'", err, want);
    }
    /* a zero length first: also not a Tandem server, shown as escapes */
    const uint8_t zeros[4] = {0, 0, 0, 0};
    rd_reply out;
    char err[256] = "";
    cr_assert_eq(rd_decode(zeros, 4, &out, err, sizeof err), 0);
    cr_assert(strstr(err, "not a Tandem server: its first bytes were \"\\x00\\x00\\x00\\x00\"") != NULL, "'%s'", err);
}

/* Found by fuzz/'s client_replies harness: a ScenePutReply or SceneInfo without movable
 * ids made the reader compute NULL + 0 from its unallocated scratch (undefined
 * behaviour, reported by UBSan). Such a list reads as NULL and 0. The input is
 * fuzz/corpus/client_replies/regress-empty-movable. */
Test(codec, empty_movable_lists_read_as_null)
{
    uint8_t id[32] = {7};
    Tandem__V1__ScenePutReply sp = TANDEM__V1__SCENE_PUT_REPLY__INIT;
    sp.scene_id.data = id;
    sp.scene_id.len = sizeof id;
    sp.created = 1;
    Tandem__V1__SceneInfo si = TANDEM__V1__SCENE_INFO__INIT, *sip = &si;
    si.scene_id.data = id;
    si.scene_id.len = sizeof id;
    si.name = "none movable";
    si.n_objects = 2;
    Tandem__V1__SceneListReply sl = TANDEM__V1__SCENE_LIST_REPLY__INIT;
    sl.n_scenes = 1;
    sl.scenes = &sip;
    Tandem__V1__Reply r[2] = {TANDEM__V1__REPLY__INIT, TANDEM__V1__REPLY__INIT};
    r[0].id = 5;
    r[0].body_case = TANDEM__V1__REPLY__BODY_SCENE_PUT;
    r[0].scene_put = &sp;
    r[1].id = 6;
    r[1].body_case = TANDEM__V1__REPLY__BODY_SCENE_LIST;
    r[1].scene_list = &sl;
    tdm_reader *rd = tdm_reader_new(0);
    cr_assert_not_null(rd);
    for (int i = 0; i < 2; i++) { /* a fresh reader each time: its u32 scratch was never allocated */
        uint8_t buf[256];
        size_t n = tandem__v1__reply__get_packed_size(&r[i]);
        cr_assert_leq(n, sizeof buf - 4);
        buf[0] = buf[1] = 0;
        buf[2] = (uint8_t)(n >> 8);
        buf[3] = (uint8_t)n;
        tandem__v1__reply__pack(&r[i], buf + 4);
        tdm_reader_free(rd);
        rd = tdm_reader_new(0);
        cr_assert_eq(tdm_reader_feed(rd, buf, n + 4), 0);
        const tdm_reply *out;
        cr_assert_eq(tdm_reader_get_reply(rd, &out), 1, "%s", tdm_reader_errstr(rd));
        cr_assert_eq(out->id, (uint64_t)(5 + i));
        if (i == 0) {
            cr_assert_eq(out->type, TDM_REPLY_SCENE_PUT);
            cr_assert_eq(out->u.scene_put.n_movable, 0);
            cr_assert_null(out->u.scene_put.movable);
            cr_assert_eq(out->u.scene_put.created, 1);
        } else {
            cr_assert_eq(out->type, TDM_REPLY_SCENE_LIST);
            cr_assert_eq(out->u.scene_list.n, 1);
            cr_assert_eq(out->u.scene_list.scenes[0].n_movable, 0);
            cr_assert_null(out->u.scene_list.scenes[0].movable);
            cr_assert_eq(out->u.scene_list.scenes[0].n_objects, 2);
            cr_assert_str_eq(out->u.scene_list.scenes[0].name, "none movable");
        }
    }
    tdm_reader_free(rd);
}
