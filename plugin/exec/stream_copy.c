#include "plugin/exec/stream_copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>

/* Below this, the fence costs more than the cache lines it spares. */
#define OB_STREAM_MIN_BYTES 256

void ob_copy_streaming(void *dst, const void *src, size_t bytes)
{
    if (bytes < OB_STREAM_MIN_BYTES) {
        memcpy(dst, src, bytes);
        return;
    }
    unsigned char *d = dst;
    const unsigned char *s = src;
    /* Ordinary stores up to the first 16-byte aligned destination byte. */
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    size_t body = bytes & ~(size_t)63;
    for (size_t i = 0; i < body; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    memcpy(d + body, s + body, bytes - body);
    _mm_sfence();
}

#else

void ob_copy_streaming(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
}

#endif
