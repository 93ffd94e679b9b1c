/* The fake-runtime test programs' check: counts a failure and says where, then goes on, so one
 * run reports every difference. */
#ifndef OMPBATCH_TESTS_FAKE_RUNTIME_FAKE_CHECK_H
#define OMPBATCH_TESTS_FAKE_RUNTIME_FAKE_CHECK_H

#include <stdio.h>

static int failed;

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            failed++;                                                                           \
            fprintf(stderr, "FAIL line %d: ", __LINE__);                                        \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fputc('\n', stderr);                                                                \
        }                                                                                       \
    } while (0)

#endif
