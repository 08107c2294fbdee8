/* Protobuf base-128 varints, for the few places that write wire bytes
 * themselves (daemon/codec.c's query reply, client/codec.c's request sizes);
 * header only, shared by the daemon and libtandem. */
#ifndef TDM_PROTO_VARINT_H
#define TDM_PROTO_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of v as a varint (1..10). */
static inline size_t tdm_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Writes v at p; returns the byte after it. */
static inline uint8_t *tdm_varint_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

#endif
