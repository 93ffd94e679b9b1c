/* hook_bench's never-slower verdict for one shape, from its repetitions with the hook off and on.
 *
 * Each repetition times the runtime alone and the hook back to back, so the repetitions come in
 * pairs. A shape is SLOWER when the hook-on median is more than 3% above the runtime alone's and
 * the pairs agree: the hook took more than 3% longer in so many of them that a fair coin would
 * show as many heads less than 5 times in 100 (a one-sided sign test). The pairs matter under
 * CPU contention, where a thread descheduled among the busy ones moves a median of a few
 * repetitions by half in either direction (regions that do the same work hooked or not, 0.49x
 * to 1.44x at 21 repetitions); a shape whose medians differ by more than 3% but whose pairs do
 * not agree is INCONCLUSIVE and listed as such, never counted as passing. Under 5 repetitions no
 * count of pairs is significant, so nothing can be called slower: hook_bench says so. */
#ifndef OMPBATCH_EXAMPLES_NEVER_SLOWER_H
#define OMPBATCH_EXAMPLES_NEVER_SLOWER_H

#define NEVER_SLOWER_LIMIT 1.03
#define NEVER_SLOWER_SIGNIFICANCE 0.05

typedef enum { VERDICT_SAME = 0, VERDICT_INCONCLUSIVE, VERDICT_SLOWER } verdict;

/* The chance that a fair coin thrown `n` times shows at least `k` heads. The binomial weights
 * are taken relative to the largest (at n/2), so no term overflows or underflows for any n. */
static inline double sign_test_p(int k, int n)
{
    if (k <= 0)
        return 1.0;
    if (k > n)
        return 0.0;
    int mode = n / 2;
    double total = 1.0, tail = k <= mode ? 1.0 : 0.0, w = 1.0;
    for (int i = mode; i < n; i++) {
        w *= (double)(n - i) / (double)(i + 1);
        total += w;
        if (i + 1 >= k)
            tail += w;
    }
    w = 1.0;
    for (int i = mode; i > 0; i--) {
        w *= (double)i / (double)(n - i + 1);
        total += w;
        if (i - 1 >= k)
            tail += w;
    }
    return tail / total;
}

/* How many of the `n` pairs (off[r], on[r]) took the hook more than 3% longer. */
static inline int pairs_slower(const double *off, const double *on, int n)
{
    int slower = 0;
    for (int r = 0; r < n; r++)
        slower += on[r] > NEVER_SLOWER_LIMIT * off[r];
    return slower;
}

/* The verdict of a shape whose medians are off_med and on_med and whose hook took more than 3%
 * longer in `slower` of its `n` pairs. */
static inline verdict never_slower_verdict(double off_med, double on_med, int slower, int n)
{
    if (!(on_med > NEVER_SLOWER_LIMIT * off_med))
        return VERDICT_SAME;
    return sign_test_p(slower, n) < NEVER_SLOWER_SIGNIFICANCE ? VERDICT_SLOWER
                                                               : VERDICT_INCONCLUSIVE;
}

/* The fewest repetitions at which every pair agreeing is significant. */
static inline int never_slower_min_reps(void)
{
    int n = 1;
    while (sign_test_p(n, n) >= NEVER_SLOWER_SIGNIFICANCE)
        n++;
    return n;
}

#endif
