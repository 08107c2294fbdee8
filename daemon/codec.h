/* Decoding requests: protobuf-c into a bounded arena.
 *
 * A frame is decoded with a ProtobufCAllocator that bump-allocates from an arena
 * and fails once the frame's budget is spent, so a small frame cannot make the
 * decoder allocate without bound (an empty submessage costs ~40 bytes decoded
 * for 2 on the wire). The arena is freed or reset as a whole: the decoded
 * message is never freed field by field. */
#ifndef TDM_DAEMON_CODEC_H
#define TDM_DAEMON_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "../workpile/sched.h"
#include "tandem.pb-c.h"

typedef struct tdm_arena tdm_arena;

tdm_arena *tdm_arena_new(void);
/* Frees everything allocated since the last reset, keeping one small block for
 * the next frame. */
void tdm_arena_reset(tdm_arena *a);
void tdm_arena_free(tdm_arena *a);
/* Bytes handed out since the last reset. */
size_t tdm_arena_allocated(const tdm_arena *a);

/* Decoded bytes allowed per wire byte, plus a constant. Real requests need
 * about 1x (packed floats and doubles), 4x (packed small indices) or 10x (an
 * allowed-pair list of small ids); only degenerate frames (empty submessages,
 * runs of unknown fields) go past 16x. One frame is decoded at a time, so this
 * bounds the decoder's transient memory at 16 x max_frame_bytes. */
#define TDM_DECODE_BUDGET_PER_BYTE 16u
#define TDM_DECODE_BUDGET_BASE 65536u

/* Decodes one frame into the arena (which must be freshly reset). Returns the
 * request, or NULL when the bytes are not a valid Request or need more than the
 * budget; *why then says which. The request lives until the arena is reset or
 * freed. */
Tandem__V1__Request *tdm_decode_request(tdm_arena *a, const uint8_t *buf, size_t len, const char **why);

/* The Reply {id, query: QueryReply {results}} for a finished query batch,
 * written by hand: one QueryResult per query, and protobuf-c's generic packing
 * (two descriptor walks per submessage) cost more per query than the GPU's
 * traversal. The bytes are exactly protobuf-c's (tested byte for byte).
 * results: n of them; pairs: NULL, or query i's results[i].n_pairs pairs at
 * pairs + i x stride. tdm_query_reply_bound gives the room the writer needs
 * (without pairs, without a pass over the results); write fills out and
 * returns the Reply's size. */
/* The most bytes a QueryReply frame (length prefix included) of n results with up to
 * `pairs` contact pairs in all can take, known before the run: what a job promises on
 * its connection (budget.h). */
uint64_t tdm_query_reply_max(uint64_t n, uint64_t pairs);
size_t tdm_query_reply_bound(const tdm_sched_result *results, uint32_t n, const tdm_sched_contact *pairs, uint32_t stride);
size_t tdm_query_reply_write(uint8_t *out, uint64_t id, const tdm_sched_result *results, uint32_t n,
                             const tdm_sched_contact *pairs, uint32_t stride);

/* Checks that a protobuf string is valid UTF-8 (proto3 requires it of strings,
 * protobuf-c does not check) and at most max bytes long. */
int tdm_utf8_valid(const char *s, size_t max);

#endif
