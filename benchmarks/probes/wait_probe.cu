/* Kernels of wait_probe.c: the copy of up to 32 pieces given as the launch's parameter, one block
 * a piece, with and without a completion word that the last block to finish writes into pinned
 * host memory. */
struct wp_piece {
    unsigned long long dst, src, bytes;
};
struct wp_pieces {
    unsigned long long count;
    wp_piece piece[32];
};

__device__ void copy_piece(const wp_piece &p)
{
    const uint4 *s = (const uint4 *)p.src;
    uint4 *d = (uint4 *)p.dst;
    for (unsigned long long i = threadIdx.x; i < p.bytes / 16; i += blockDim.x)
        d[i] = s[i];
}

extern "C" __global__ void wp_copy(const __grid_constant__ wp_pieces t)
{
    if (blockIdx.x < t.count)
        copy_piece(t.piece[blockIdx.x]);
}

extern "C" __global__ void wp_copy_word(const __grid_constant__ wp_pieces t, unsigned int *counter,
                                        unsigned int *word, unsigned int value)
{
    if (blockIdx.x < t.count)
        copy_piece(t.piece[blockIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        if (atomicAdd(counter, 1u) == gridDim.x - 1) {
            *counter = 0;
            __threadfence_system();
            *(volatile unsigned int *)word = value;
        }
    }
}

/* The same with a 16-slot parameter (392 bytes against 776): what the parameter's size costs
 * the launch. */
struct wp_pieces16 {
    unsigned long long count;
    wp_piece piece[16];
};

extern "C" __global__ void wp_copy_word16(const __grid_constant__ wp_pieces16 t,
                                          unsigned int *counter, unsigned int *word,
                                          unsigned int value)
{
    if (blockIdx.x < t.count)
        copy_piece(t.piece[blockIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        if (atomicAdd(counter, 1u) == gridDim.x - 1) {
            *counter = 0;
            __threadfence_system();
            *(volatile unsigned int *)word = value;
        }
    }
}
