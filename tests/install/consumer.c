/*
 * A program of a user of the installed ompbatch: built against <prefix> with pkg-config (the
 * Makefile) and with CMake's find_package (CMakeLists.txt). It copies random pieces between
 * host buffers through a batch (the host backend: no GPU needed), checks every byte, checks
 * that the library it runs with is the version of the header it was built with, and that an
 * error comes back with its message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ompbatch.h>

enum { PIECES = 200, MAX_PIECE = 3000, SPACE = PIECES * MAX_PIECE };

int main(void)
{
    if (ompbatch_version() != OMPBATCH_VERSION) {
        fprintf(stderr, "FAIL: header version %d, library %d\n", OMPBATCH_VERSION,
                ompbatch_version());
        return 1;
    }
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    unsigned char *src = malloc(SPACE), *dst = malloc(SPACE);
    if (src == NULL || dst == NULL)
        return 1;
    for (size_t i = 0; i < SPACE; i++)
        src[i] = (unsigned char)(rand() & 0xff);
    memset(dst, 0xA5, SPACE);
    ompbatch_batch *batch = NULL;
    int status = ompbatch_batch_create(&batch, OMPBATCH_HOST_DEVICE, NULL, NULL);
    size_t offsets[PIECES], sizes[PIECES];
    for (int i = 0; i < PIECES && status == OMPBATCH_OK; i++) {
        sizes[i] = 1 + (size_t)rand() % MAX_PIECE;
        offsets[i] = (size_t)i * MAX_PIECE + (size_t)rand() % (MAX_PIECE - sizes[i] + 1);
        status = ompbatch_batch_add(batch, dst + offsets[i], OMPBATCH_HOST_DEVICE,
                                    src + offsets[i], OMPBATCH_HOST_DEVICE, sizes[i], 0);
    }
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_submit(batch);
    if (status == OMPBATCH_OK)
        status = ompbatch_batch_wait(batch);
    if (status != OMPBATCH_OK) {
        fprintf(stderr, "FAIL: %s: %s\n", ompbatch_err_name(status), ompbatch_last_error());
        return 1;
    }
    /* Every piece arrived; every byte between pieces is still the poison. */
    size_t next = 0;
    for (int i = 0; i < PIECES; i++) {
        for (size_t b = next; b < offsets[i]; b++)
            if (dst[b] != 0xA5) {
                fprintf(stderr, "FAIL (seed %u): byte %zu outside the pieces written\n", seed, b);
                return 1;
            }
        if (memcmp(dst + offsets[i], src + offsets[i], sizes[i]) != 0) {
            fprintf(stderr, "FAIL (seed %u): piece %d differs\n", seed, i);
            return 1;
        }
        next = offsets[i] + sizes[i];
    }
    int bad = ompbatch_batch_reset(batch) == OMPBATCH_OK
                  ? ompbatch_batch_add(batch, NULL, OMPBATCH_HOST_DEVICE, src,
                                       OMPBATCH_HOST_DEVICE, 8, 0)
                  : OMPBATCH_OK;
    if (bad != OMPBATCH_ERR_NULL_POINTER || strstr(ompbatch_last_error(), "dst") == NULL) {
        fprintf(stderr, "FAIL: a NULL dst gave %s (%s)\n", ompbatch_err_name(bad),
                ompbatch_last_error());
        return 1;
    }
    if (ompbatch_batch_destroy(batch) != OMPBATCH_OK)
        return 1;
    free(src);
    free(dst);
    printf("consumer: ompbatch %d.%d.%d, %d pieces copied exactly\n", OMPBATCH_VERSION_MAJOR,
           OMPBATCH_VERSION_MINOR, OMPBATCH_VERSION_PATCH, PIECES);
    return 0;
}
