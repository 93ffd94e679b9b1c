/* The library's copy kernel: moves many pieces, each {dst, src, bytes}, between addresses the
 * GPU can reach: device memory, the library's staging, and pinned host memory (read or written
 * in place over the bus). One block per piece, grid-stride when there are more pieces than
 * blocks. Each piece moves in the widest unit its two addresses share an alignment phase for
 * (16, 8, 4 bytes), with bytes before and after; any size and alignment is correct. */
struct ob_piece {
    unsigned long long dst;
    unsigned long long src;
    unsigned long long bytes;
};

template <typename T>
__device__ void copy_units(unsigned char *dst, const unsigned char *src, unsigned long long n)
{
    /* Bytes up to the first aligned destination, then whole units, then the tail; src has the
     * same phase as dst, so it is aligned wherever dst is. */
    unsigned long long head = (sizeof(T) - ((unsigned long long)dst & (sizeof(T) - 1))) &
                              (sizeof(T) - 1);
    if (head > n)
        head = n;
    unsigned long long units = (n - head) / sizeof(T);
    unsigned long long body_end = head + units * sizeof(T);
    for (unsigned long long i = threadIdx.x; i < head; i += blockDim.x)
        dst[i] = src[i];
    const T *s = (const T *)(src + head);
    T *d = (T *)(dst + head);
    for (unsigned long long i = threadIdx.x; i < units; i += blockDim.x)
        d[i] = s[i];
    for (unsigned long long i = body_end + threadIdx.x; i < n; i += blockDim.x)
        dst[i] = src[i];
}

__device__ void copy_piece(const ob_piece &piece)
{
    unsigned char *dst = (unsigned char *)piece.dst;
    const unsigned char *src = (const unsigned char *)piece.src;
    unsigned long long phase = piece.dst ^ piece.src;
    if ((phase & 15) == 0)
        copy_units<uint4>(dst, src, piece.bytes);
    else if ((phase & 7) == 0)
        copy_units<unsigned long long>(dst, src, piece.bytes);
    else if ((phase & 3) == 0)
        copy_units<unsigned int>(dst, src, piece.bytes);
    else
        copy_units<unsigned char>(dst, src, piece.bytes);
}

extern "C" __global__ void ob_copy_pieces(const ob_piece *pieces, unsigned int count)
{
    for (unsigned int p = blockIdx.x; p < count; p += gridDim.x)
        copy_piece(pieces[p]);
}

/* A few pieces come as the parameter itself (kernels.h): each block reads its descriptor from
 * the constant parameter space instead of waiting for it to cross the bus before it can start
 * on the bytes. __grid_constant__ lets the blocks index it without a private copy. When `done`
 * is not 0, each block sets its own word there to 1 once its pieces are written everywhere
 * (kernels.h says why). */
#define OB_INLINE_PIECES 32

struct ob_inline_pieces {
    unsigned long long count;
    unsigned long long done;
    ob_piece piece[OB_INLINE_PIECES];
};

extern "C" __global__ void ob_copy_pieces_inline(const __grid_constant__ ob_inline_pieces table)
{
    for (unsigned int p = blockIdx.x; p < table.count; p += gridDim.x)
        copy_piece(table.piece[p]);
    if (table.done != 0) {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence_system();
            ((volatile unsigned int *)table.done)[blockIdx.x] = 1u;
        }
    }
}

/* Rectangles: one launch moves a whole rectangle between two walks (kernels.h says how a
 * walk lays compact bytes out), one thread per unit, grid-stride. The geometry comes by value,
 * so each thread reads it from the constant parameter space, not over the bus. */
#define OB_WALK_MAX_DIMS 16

struct ob_walk {
    unsigned long long run;
    unsigned long long dims;
    unsigned long long count[OB_WALK_MAX_DIMS];
    unsigned long long stride[OB_WALK_MAX_DIMS];
};

struct ob_rect_piece {
    unsigned long long dst;
    unsigned long long src;
    unsigned long long bytes;
    unsigned long long unit;
    unsigned long long flags;
    ob_walk dst_walk;
    ob_walk src_walk;
};

__device__ unsigned long long walk_at(const ob_walk &w, unsigned long long x)
{
    if (w.dims == 0)
        return x;
    unsigned long long q = x / w.run, at = x - q * w.run;
    /* Unrolled with a guard: the parameter space is indexed by constants only. */
#pragma unroll
    for (int d = 0; d < OB_WALK_MAX_DIMS; d++) {
        if (d < w.dims) {
            unsigned long long c = w.count[d];
            unsigned long long next = q / c;
            at += (q - next * c) * w.stride[d];
            q = next;
        }
    }
    return at;
}

template <typename T>
__device__ void copy_rect_unit(const ob_rect_piece &p, unsigned long long u)
{
    unsigned long long x = u * sizeof(T);
    *(T *)(p.dst + walk_at(p.dst_walk, x)) = *(const T *)(p.src + walk_at(p.src_walk, x));
}

template <typename T>
__device__ void copy_rect_units(const ob_rect_piece &p)
{
    unsigned long long units = p.bytes / sizeof(T);
    if (p.flags == 0) {
        unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long u = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             u < units; u += step)
            copy_rect_unit<T>(p, u);
        return;
    }
    /* Chunk by chunk, each chunk's word once its units have landed (kernels.h): every
     * thread's stores are made visible system-wide before the block's one store of the word.
     * The chunk index is the block's, so every thread takes the barrier equally often. */
    unsigned long long chunks = (units + blockDim.x - 1) / blockDim.x;
    for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        unsigned long long u = c * blockDim.x + threadIdx.x;
        if (u < units)
            copy_rect_unit<T>(p, u);
        __threadfence_system();
        __syncthreads();
        if (threadIdx.x == 0)
            ((volatile unsigned int *)p.flags)[c] = 1;
    }
}

extern "C" __global__ void ob_copy_rect(const ob_rect_piece piece)
{
    switch (piece.unit) {
    case 16:
        copy_rect_units<uint4>(piece);
        break;
    case 8:
        copy_rect_units<unsigned long long>(piece);
        break;
    case 4:
        copy_rect_units<unsigned int>(piece);
        break;
    case 2:
        copy_rect_units<unsigned short>(piece);
        break;
    default:
        copy_rect_units<unsigned char>(piece);
        break;
    }
}
