/* The hook's device scatter: pieces packed one after another in a device staging buffer go to
 * their destinations. One block per piece (grid-stride when there are more pieces than blocks),
 * 16-byte vectors when source and destination allow, bytes otherwise. */
struct ob_scatter_piece {
    unsigned long long dst;    /* device address */
    unsigned long long offset; /* of the piece's bytes in the packed buffer (a multiple of 64) */
    unsigned long long bytes;
};

extern "C" __global__ void ob_scatter(const ob_scatter_piece *pieces,
                                      const unsigned char *packed, unsigned int count)
{
    for (unsigned int p = blockIdx.x; p < count; p += gridDim.x) {
        ob_scatter_piece piece = pieces[p];
        unsigned char *dst = (unsigned char *)piece.dst;
        const unsigned char *src = packed + piece.offset;
        unsigned long long n = piece.bytes, done = 0;
        if (((piece.dst | (unsigned long long)src) & 15) == 0) {
            unsigned long long vectors = n / 16;
            const uint4 *s = (const uint4 *)src;
            uint4 *d = (uint4 *)dst;
            for (unsigned long long i = threadIdx.x; i < vectors; i += blockDim.x)
                d[i] = s[i];
            done = vectors * 16;
        }
        for (unsigned long long i = done + threadIdx.x; i < n; i += blockDim.x)
            dst[i] = src[i];
    }
}
