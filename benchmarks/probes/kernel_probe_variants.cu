struct pc { unsigned long long dst, src, bytes; };
template <typename T>
__device__ void units(unsigned char *dst, const unsigned char *src, unsigned long long n, unsigned lane, unsigned width)
{
    unsigned long long head = (sizeof(T) - ((unsigned long long)dst & (sizeof(T) - 1))) & (sizeof(T) - 1);
    if (head > n) head = n;
    unsigned long long u = (n - head) / sizeof(T), end = head + u * sizeof(T);
    for (unsigned long long i = lane; i < head; i += width) dst[i] = src[i];
    const T *s = (const T *)(src + head); T *d = (T *)(dst + head);
    unsigned long long i = lane;
    for (; i + 3 * width < u; i += 4 * width) {
        T a = s[i], b = s[i + width], c = s[i + 2 * width], e = s[i + 3 * width];
        d[i] = a; d[i + width] = b; d[i + 2 * width] = c; d[i + 3 * width] = e;
    }
    for (; i < u; i += width) d[i] = s[i];
    for (unsigned long long j = end + lane; j < n; j += width) dst[j] = src[j];
}
__device__ void one(const pc &p, unsigned lane, unsigned width)
{
    unsigned char *dst = (unsigned char *)p.dst; const unsigned char *src = (const unsigned char *)p.src;
    unsigned long long ph = p.dst ^ p.src;
    if ((ph & 15) == 0) units<uint4>(dst, src, p.bytes, lane, width);
    else if ((ph & 7) == 0) units<unsigned long long>(dst, src, p.bytes, lane, width);
    else if ((ph & 3) == 0) units<unsigned int>(dst, src, p.bytes, lane, width);
    else units<unsigned char>(dst, src, p.bytes, lane, width);
}
/* block per piece, ILP 4 */
extern "C" __global__ void k_block(const pc *t, unsigned n)
{
    for (unsigned p = blockIdx.x; p < n; p += gridDim.x) { pc x = t[p]; one(x, threadIdx.x, blockDim.x); }
}
/* warp per piece */
extern "C" __global__ void k_warp(const pc *t, unsigned n)
{
    unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, nw = gridDim.x * blockDim.x / 32;
    for (unsigned p = w; p < n; p += nw) { pc x = t[p]; one(x, threadIdx.x & 31, 32); }
}
