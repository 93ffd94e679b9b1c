/* The C test programs' one check (the GoogleTest suites have their own): every check is
 * counted, a failing one prints where it failed and why and the program goes on, so one run
 * reports every difference. OB_CHECK_EQ prints both values. Thread-safe: the hook's programs
 * check from several host threads. */
#ifndef OMPBATCH_TESTS_SUPPORT_CHECK_H
#define OMPBATCH_TESTS_SUPPORT_CHECK_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

static atomic_ulong ob_checks_passed, ob_checks_failed;

/* A check that passed. */
static inline void ob_check_pass(void)
{
    atomic_fetch_add(&ob_checks_passed, 1);
}

/* A check that failed at file:line: counted, and "FAIL file:line: message" on stderr (for
 * helpers that check on their caller's behalf). */
static inline void ob_check_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void ob_check_fail_at(const char *file, int line, const char *fmt, ...)
{
    atomic_fetch_add(&ob_checks_failed, 1);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* OB_CHECK(cond, printf-style message): counts the check; prints "FAIL file:line: message"
 * when cond is false (the message's arguments are evaluated only then). */
#define OB_CHECK(cond, ...)                                                                     \
    do {                                                                                        \
        if (cond)                                                                               \
            ob_check_pass();                                                                    \
        else                                                                                    \
            ob_check_fail_at(__FILE__, __LINE__, __VA_ARGS__);                                  \
    } while (0)

/* Two integers (of any integer type, compared as unsigned 64-bit values) must be equal; a
 * failure prints both expressions and both values. */
#define OB_CHECK_EQ(a, b)                                                                       \
    do {                                                                                        \
        unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);          \
        OB_CHECK(a_ == b_, "%s == %s: %llu (%#llx) vs %llu (%#llx)", #a, #b, a_, a_, b_, b_);  \
    } while (0)

/* Failed checks so far. */
static inline unsigned long ob_check_failures(void)
{
    return atomic_load(&ob_checks_failed);
}

/* Prints "<program>: N checks passed, M failed" and gives main() its exit status. */
static inline int ob_check_finish(const char *program)
{
    unsigned long ok = atomic_load(&ob_checks_passed), bad = atomic_load(&ob_checks_failed);
    printf("%s: %lu checks passed, %lu failed\n", program, ok, bad);
    fflush(stdout);
    return bad == 0 ? 0 : 1;
}

#endif
