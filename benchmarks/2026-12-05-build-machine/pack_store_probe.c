/*
 * How long one thread takes to pack 16 arrays of 4 KiB (64 KiB, the hook benchmark's shape a)
 * into one staging buffer, with memcpy and with streaming (non-temporal) stores fenced at the
 * end, as plugin/exec/stream_copy.c writes them. The 1024 source arrays (4 MiB) are rewritten
 * before each round, as the benchmark's program rewrites its arrays. CPU only.
 * Build: gcc -O2 -o pack_store_probe pack_store_probe.c
 */
#include <emmintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ARRAYS = 1024, SIZE = 4096, GROUP = 16, ROUNDS = 5 };

static void copy_streaming(void *dst, const void *src, size_t bytes)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (size_t i = 0; i < bytes; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    _mm_sfence();
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void)
{
    unsigned char *arrays[ARRAYS];
    for (int i = 0; i < ARRAYS; i++)
        arrays[i] = aligned_alloc(64, SIZE);
    unsigned char *staging = aligned_alloc(4096, GROUP * SIZE);
    for (int round = 0; round < ROUNDS; round++) {
        for (int streaming = 0; streaming < 2; streaming++) {
            for (int i = 0; i < ARRAYS; i++)
                memset(arrays[i], i + round, SIZE);
            double t0 = now_ns();
            for (int c = 0; c < ARRAYS / GROUP; c++)
                for (int j = 0; j < GROUP; j++) {
                    if (streaming)
                        copy_streaming(staging + j * SIZE, arrays[c * GROUP + j], SIZE);
                    else
                        memcpy(staging + j * SIZE, arrays[c * GROUP + j], SIZE);
                }
            double t1 = now_ns();
            printf("round %d %-9s %.2f us per 64 KiB pack\n", round,
                   streaming ? "streaming" : "memcpy", (t1 - t0) / 1e3 / (ARRAYS / GROUP));
        }
    }
    /* Keep the stores observable. */
    return staging[GROUP * SIZE - 1] == 0x5A ? 2 : 0;
}
