/* What the harnesses share: SHA-256 over two pieces (the checksums the loaders
 * check, recomputed so that the fuzzer reaches what lies behind them). */
#ifndef TDM_FUZZ_UTIL_H
#define TDM_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <openssl/evp.h>

static inline void fuzz_sha256_two(const void *a, size_t alen, const void *b, size_t blen, uint8_t out[32])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int n = 0;
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) || !EVP_DigestUpdate(ctx, a, alen) ||
        !EVP_DigestUpdate(ctx, b, blen) || !EVP_DigestFinal_ex(ctx, out, &n))
        abort();
    EVP_MD_CTX_free(ctx);
}

#endif
