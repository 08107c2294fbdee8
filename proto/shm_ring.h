/* The shared-memory way in for a client on the server's host (proto/README.md, "Shared-memory
 * rings"): the layout of the mapping a RingOpen reply passes over the Unix socket, and the index
 * arithmetic both sides use. Header only, shared by the daemon and libtandem.
 *
 * The mapping is one memfd: a 4 KiB header, then the request ring (client to server), then the
 * reply ring (server to client), each `cap` bytes (a power of two). Each ring carries the same
 * byte stream a socket would: frames, a 4-byte big-endian length and a protobuf message. A ring's
 * `head` counts the bytes its producer has written, its `tail` those its consumer has taken, both
 * from 0 and never wrapped (64 bits); byte k of the stream sits at data[k % cap]; head - tail is
 * at most cap. A producer writes the bytes, then stores head (release); a consumer reads head
 * (acquire), copies the bytes out, then stores tail (release).
 *
 * Wake-ups (each side polls first and sleeps only when it has nothing to do):
 * - the server sets `srv_sleep` before its loop sleeps in epoll, or before it stops polling a ring
 *   that has been idle a while (it then stays set until a doorbell), then looks at the ring again; a
 *   client that has published request bytes (or taken reply bytes while `srv_space` says that the
 *   server has replies waiting for room) and then sees `srv_sleep` set writes one byte, a doorbell,
 *   to the socket; the server reads and ignores doorbells.
 * - a client that waits sets `cli_sleep` (TDM_RING_WAIT_DATA: for reply bytes, TDM_RING_WAIT_SPACE:
 *   for room in the request ring), then looks again, then waits on the futex word `cli_seq`; the
 *   server, after publishing reply bytes or taking request bytes the client waits for, adds one to
 *   `cli_seq` and wakes it.
 * Each side's flag store and its next look are separated by a full fence, as are the other side's
 * publication and its look at the flag, so that one of the two always sees the other.
 *
 * The server trusts nothing in the mapping: it reads the client's index once per look, bounds it,
 * and copies the bytes out before it decodes them; a client that breaks the rules loses its own
 * connection. The memfd is sealed against shrinking and growing. */
#ifndef TDM_PROTO_SHM_RING_H
#define TDM_PROTO_SHM_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TDM_RING_MAGIC 0x474e5254u /* "TRNG" little-endian */
#define TDM_RING_VERSION 1u
#define TDM_RING_HEADER_BYTES 4096u
#define TDM_RING_MIN_BYTES (64u << 10)
#define TDM_RING_WAIT_DATA 1u
#define TDM_RING_WAIT_SPACE 2u

/* Each index on a cache line of its own: the two sides write different lines. */
typedef struct tdm_ring_header {
    uint32_t magic, version, cap;
    _Atomic uint32_t closed; /* the server has closed the connection (then the socket's EOF follows) */
    uint8_t pad0[48];
    _Atomic uint64_t req_head; /* client: request bytes written */
    uint8_t pad1[56];
    _Atomic uint64_t req_tail; /* server: request bytes taken */
    uint8_t pad2[56];
    _Atomic uint64_t rep_head; /* server: reply bytes written */
    uint8_t pad3[56];
    _Atomic uint64_t rep_tail; /* client: reply bytes taken */
    uint8_t pad4[56];
    _Atomic uint32_t srv_sleep; /* server: its loop may sleep (ring the doorbell) */
    _Atomic uint32_t srv_space; /* server: replies wait for room in the reply ring */
    uint8_t pad5[56];
    _Atomic uint32_t cli_sleep; /* client: TDM_RING_WAIT_* it sleeps for */
    _Atomic uint32_t cli_seq;   /* client: the futex word it sleeps on */
} tdm_ring_header;

_Static_assert(sizeof(tdm_ring_header) <= TDM_RING_HEADER_BYTES, "ring header too large");

static inline size_t tdm_ring_map_bytes(uint32_t cap) { return TDM_RING_HEADER_BYTES + 2 * (size_t)cap; }
static inline uint8_t *tdm_ring_req_data(void *map) { return (uint8_t *)map + TDM_RING_HEADER_BYTES; }
static inline uint8_t *tdm_ring_rep_data(void *map, uint32_t cap)
{
    return (uint8_t *)map + TDM_RING_HEADER_BYTES + cap;
}

/* n bytes of the stream from byte `at` copied out of a ring of cap bytes (n <= cap). */
static inline void tdm_ring_copy_out(const uint8_t *ring, uint32_t cap, uint64_t at, uint8_t *dst, size_t n)
{
    size_t off = (size_t)(at & (cap - 1)), first = cap - off < n ? cap - off : n;
    memcpy(dst, ring + off, first);
    memcpy(dst + first, ring, n - first);
}

/* n bytes written into the stream from byte `at` (n <= cap). */
static inline void tdm_ring_copy_in(uint8_t *ring, uint32_t cap, uint64_t at, const uint8_t *src, size_t n)
{
    size_t off = (size_t)(at & (cap - 1)), first = cap - off < n ? cap - off : n;
    memcpy(ring + off, src, first);
    memcpy(ring, src + first, n - first);
}

#endif
