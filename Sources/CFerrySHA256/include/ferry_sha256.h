#ifndef FERRY_SHA256_H
#define FERRY_SHA256_H

#include <stddef.h>
#include <stdint.h>

/// SHA-256's compression function over `blocks` 64-byte blocks of `data`,
/// updating `state` (the eight working words, in order). The SHA
/// instructions of x86-64 are used where the processor has them.
void ferry_sha256_blocks(uint32_t state[8], const uint8_t *data, size_t blocks);

/// The same in portable C, whatever the processor (for tests).
void ferry_sha256_blocks_portable(uint32_t state[8], const uint8_t *data, size_t blocks);

/// 1 when `ferry_sha256_blocks` uses the processor's SHA instructions.
int ferry_sha256_accelerated(void);

#endif
