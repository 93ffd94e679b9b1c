/* Kernels of overlap_probe.c: the copy of up to 32 pieces given as the launch's parameter, one
 * block a piece, the last block to finish writing a completion word into pinned host memory.
 * op_copy_go first waits, one thread a block, for a go word in pinned host memory (a
 * system-scope acquire load) that the host sets once it has packed the pieces' sources. */
struct op_piece {
    unsigned long long dst, src, bytes;
};
struct op_pieces {
    unsigned long long count;
    op_piece piece[32];
};

__device__ void copy_piece(const op_piece &p)
{
    const uint4 *s = (const uint4 *)p.src;
    uint4 *d = (uint4 *)p.dst;
    for (unsigned long long i = threadIdx.x; i < p.bytes / 16; i += blockDim.x)
        d[i] = s[i];
}

__device__ void signal_done(unsigned int *counter, unsigned int *word, unsigned int value)
{
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

extern "C" __global__ void op_copy(const __grid_constant__ op_pieces t, unsigned int *counter,
                                   unsigned int *word, unsigned int value)
{
    if (blockIdx.x < t.count)
        copy_piece(t.piece[blockIdx.x]);
    signal_done(counter, word, value);
}

extern "C" __global__ void op_copy_go(const __grid_constant__ op_pieces t, unsigned int *counter,
                                      unsigned int *word, unsigned int value, unsigned int *go)
{
    if (threadIdx.x == 0) {
        unsigned int seen;
        do {
            asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(seen) : "l"(go) : "memory");
        } while (seen != value);
    }
    __syncthreads();
    if (blockIdx.x < t.count)
        copy_piece(t.piece[blockIdx.x]);
    signal_done(counter, word, value);
}
