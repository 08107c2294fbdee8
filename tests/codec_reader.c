#include "codec_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/tandem.h>

int rd_decode(const uint8_t *frame, size_t len, rd_reply *out, char *errstr, size_t errlen)
{
    memset(out, 0, sizeof *out);
    tdm_reader *r = tdm_reader_new(0);
    if (!r) abort();
    const tdm_reply *rep;
    int rc = tdm_reader_feed(r, frame, len);
    if (rc == 0) rc = tdm_reader_get_reply(r, &rep);
    if (rc != 1) {
        if (errstr) snprintf(errstr, errlen, "%s", rc == 0 ? "incomplete frame" : tdm_reader_errstr(r));
        tdm_reader_free(r);
        return 0;
    }
    out->id = rep->id;
    out->type = rep->type;
    if (rep->type == TDM_REPLY_QUERY) {
        out->n_results = rep->u.query.n;
        out->n_pairs = rep->u.query.n_pairs;
        out->results = calloc(out->n_results + 1, sizeof *out->results);
        out->pairs = calloc(out->n_pairs + 1, sizeof *out->pairs);
        if (!out->results || !out->pairs) abort();
        for (size_t i = 0; i < out->n_results; i++) {
            const tdm_query_result *q = &rep->u.query.results[i];
            out->results[i] = (rd_result){q->colliding, q->truncated, q->contacts, q->object_a,
                                          q->object_b,  q->n_pairs,   q->first_pair};
        }
        for (size_t i = 0; i < out->n_pairs; i++) {
            const tdm_contact *c = &rep->u.query.pairs[i];
            out->pairs[i] = (rd_pair){c->object_a, c->triangle_a, c->object_b, c->triangle_b};
        }
    }
    tdm_reader_free(r);
    return 1;
}

void rd_reply_free(rd_reply *r)
{
    free(r->results);
    free(r->pairs);
    memset(r, 0, sizeof *r);
}
