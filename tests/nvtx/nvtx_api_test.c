/*
 * Submissions through the API, for nvtx_test.sh to find in an NVTX tool's record: a batch of
 * 5 host copies submitted twice, then ompbatch_target_memcpy_batch with 3. The copies are
 * checked too, so a range around a submission that lost its bytes cannot pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompbatch.h"

static int check(int status, const char *what)
{
    if (status != OMPBATCH_OK)
        fprintf(stderr, "FAIL: %s: %s (%s)\n", what, ompbatch_err_name(status),
                ompbatch_last_error());
    return status == OMPBATCH_OK;
}

int main(void)
{
    enum { PIECES = 5, PIECE = 96 };
    unsigned char src[PIECES * PIECE], dst[PIECES * PIECE];
    srand(7);
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(rand() & 0xff);
    ompbatch_batch *batch = NULL;
    if (!check(ompbatch_batch_create(&batch, OMPBATCH_HOST_DEVICE, NULL, NULL), "create"))
        return 1;
    int ok = 1;
    for (int round = 0; round < 2 && ok; round++) {
        memset(dst, 0xA5, sizeof dst);
        for (int i = 0; i < PIECES && ok; i++)
            ok = check(ompbatch_batch_add(batch, dst + i * PIECE, OMPBATCH_HOST_DEVICE,
                                          src + i * PIECE, OMPBATCH_HOST_DEVICE, PIECE, 0),
                       "add");
        ok = ok && check(ompbatch_batch_submit(batch), "submit") &&
             check(ompbatch_batch_wait(batch), "wait") &&
             check(ompbatch_batch_reset(batch), "reset");
        if (ok && memcmp(dst, src, sizeof dst) != 0) {
            fprintf(stderr, "FAIL: round %d: the batch's bytes differ\n", round);
            ok = 0;
        }
    }
    ok = check(ompbatch_batch_destroy(batch), "destroy") && ok;

    memset(dst, 0x5A, sizeof dst);
    void *dsts[3] = {dst, dst + 100, dst + 300};
    const void *srcs[3] = {src + 7, src + 150, src + 301};
    size_t lengths[3] = {60, 33, 120};
    ok = ok && check(ompbatch_target_memcpy_batch(dsts, srcs, lengths, NULL, NULL, 3,
                                                  OMPBATCH_HOST_DEVICE, OMPBATCH_HOST_DEVICE),
                     "target_memcpy_batch");
    for (int i = 0; i < 3 && ok; i++)
        if (memcmp(dsts[i], srcs[i], lengths[i]) != 0) {
            fprintf(stderr, "FAIL: target_memcpy_batch copy %d differs\n", i);
            ok = 0;
        }
    printf("nvtx api program: %s\n", ok ? "copies right" : "FAILED");
    return ok ? 0 : 1;
}
