// SHA-256 (FIPS 180-4) block compression: portable C, and the x86-64 SHA
// extensions (SHA-NI) chosen at run time where the processor has them.
// The state stays with the caller as eight plain words, so a hash can be
// saved part way and resumed later (Ferry's resumable blob uploads).

#include "ferry_sha256.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

void ferry_sha256_blocks_portable(uint32_t state[8], const uint8_t *data, size_t blocks) {
    uint32_t w[64];
    while (blocks--) {
        for (int i = 0; i < 16; i++) {
            w[i] = (uint32_t)data[4 * i] << 24 | (uint32_t)data[4 * i + 1] << 16 | (uint32_t)data[4 * i + 2] << 8
                | (uint32_t)data[4 * i + 3];
        }
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int i = 0; i < 64; i++) {
            uint32_t t1 = h + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
            uint32_t t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        state[0] += a;
        state[1] += b;
        state[2] += c;
        state[3] += d;
        state[4] += e;
        state[5] += f;
        state[6] += g;
        state[7] += h;
        data += 64;
    }
}

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>

// Four rounds at a time with SHA256RNDS2; the message schedule with
// SHA256MSG1/MSG2 (Intel's "SHA extensions" paper, 2013).
__attribute__((target("sha,sse4.1,ssse3"))) static void blocks_shani(uint32_t state[8], const uint8_t *data, size_t blocks) {
    const __m128i byteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[0]), 0xB1);  // CDAB
    __m128i state1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[4]), 0x1B);  // EFGH
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);  // ABEF
    state1 = _mm_blend_epi16(state1, tmp, 0xF0);  // CDGH
    while (blocks--) {
        const __m128i abef = state0, cdgh = state1;
        __m128i words[4];
        for (int i = 0; i < 4; i++) {
            words[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * i)), byteSwap);
        }
        for (int i = 0; i < 16; i++) {
            __m128i message = _mm_add_epi32(words[i & 3], _mm_loadu_si128((const __m128i *)&K[4 * i]));
            state1 = _mm_sha256rnds2_epu32(state1, state0, message);
            state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(message, 0x0E));
            if (i < 12) {
                // The words of rounds 4(i+4)...: they take the place of this group's.
                __m128i next = _mm_sha256msg1_epu32(words[i & 3], words[(i + 1) & 3]);
                next = _mm_add_epi32(next, _mm_alignr_epi8(words[(i + 3) & 3], words[(i + 2) & 3], 4));
                words[i & 3] = _mm_sha256msg2_epu32(next, words[(i + 3) & 3]);
            }
        }
        state0 = _mm_add_epi32(state0, abef);
        state1 = _mm_add_epi32(state1, cdgh);
        data += 64;
    }
    tmp = _mm_shuffle_epi32(state0, 0x1B);  // FEBA
    state1 = _mm_shuffle_epi32(state1, 0xB1);  // DCHG
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(tmp, state1, 0xF0));  // DCBA
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(state1, tmp, 8));  // HGFE
}

static int hasSHAExtensions(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int ssse3 = (c >> 9) & 1, sse41 = (c >> 19) & 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return ssse3 && sse41 && ((b >> 29) & 1);
}

int ferry_sha256_accelerated(void) {
    // Asked once; racing first callers both ask and store the same answer.
    static _Atomic int known = -1;
    int answer = atomic_load_explicit(&known, memory_order_relaxed);
    if (answer < 0) {
        answer = hasSHAExtensions();
        atomic_store_explicit(&known, answer, memory_order_relaxed);
    }
    return answer;
}

void ferry_sha256_blocks(uint32_t state[8], const uint8_t *data, size_t blocks) {
    if (ferry_sha256_accelerated()) {
        blocks_shani(state, data, blocks);
    } else {
        ferry_sha256_blocks_portable(state, data, blocks);
    }
}
#else
int ferry_sha256_accelerated(void) { return 0; }

void ferry_sha256_blocks(uint32_t state[8], const uint8_t *data, size_t blocks) {
    ferry_sha256_blocks_portable(state, data, blocks);
}
#endif
