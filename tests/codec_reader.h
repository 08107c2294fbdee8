/* libtandem's reply reader, seen through types of our own, so that test_codec compares
 * the client's decoding with protobuf-c's field by field in one shape. */
#ifndef TDM_TESTS_CODEC_READER_H
#define TDM_TESTS_CODEC_READER_H

#include <stddef.h>
#include <stdint.h>

typedef struct rd_result {
    uint32_t colliding, truncated, contacts, object_a, object_b, n_pairs;
    uint64_t first_pair;
} rd_result;

typedef struct rd_pair { uint32_t object_a, triangle_a, object_b, triangle_b; } rd_pair;

typedef struct rd_reply {
    uint64_t id;
    int type; /* the reply's body field number (17: a QueryReply) */
    rd_result *results;
    size_t n_results;
    rd_pair *pairs;
    size_t n_pairs;
} rd_reply;

/* Feeds one frame (length prefix included) to a fresh tdm_reader. Returns 1 and fills
 * *out (free it with rd_reply_free) when the reader hands back a reply, 0 when it refuses
 * the frame (errstr, when given, gets why). */
int rd_decode(const uint8_t *frame, size_t len, rd_reply *out, char *errstr, size_t errlen);
void rd_reply_free(rd_reply *r);

#endif
