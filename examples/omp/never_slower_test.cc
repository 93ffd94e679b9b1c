// hook_bench's never-slower verdict: the sign test's tail against hand-computed binomial sums,
// the count of pairs, and the three verdicts at their edges.
#include <gtest/gtest.h>

extern "C" {
#include "examples/omp/never_slower.h"
}

TEST(SignTest, TailMatchesTheBinomialSums)
{
    EXPECT_DOUBLE_EQ(sign_test_p(5, 5), 1.0 / 32);
    EXPECT_DOUBLE_EQ(sign_test_p(4, 5), 6.0 / 32);
    EXPECT_DOUBLE_EQ(sign_test_p(9, 11), (55.0 + 11 + 1) / 2048);
    EXPECT_DOUBLE_EQ(sign_test_p(3, 4), 5.0 / 16);
    EXPECT_DOUBLE_EQ(sign_test_p(1, 1), 0.5);
    EXPECT_DOUBLE_EQ(sign_test_p(0, 7), 1.0);
    EXPECT_DOUBLE_EQ(sign_test_p(8, 7), 0.0);
}

TEST(SignTest, StaysFiniteForManyRepetitions)
{
    // 2^-3000 underflows a double: the relative weights must not.
    double half = sign_test_p(1500, 3000), all = sign_test_p(3000, 3000);
    EXPECT_GT(half, 0.5);
    EXPECT_LT(half, 0.52);
    EXPECT_GE(all, 0.0);
    EXPECT_LT(all, 1e-300);
    EXPECT_LT(sign_test_p(1600, 3000), 0.001);
}

TEST(Pairs, CountOnlyThoseOverThreePercent)
{
    const double off[] = {100, 100, 100, 100, 200};
    const double on[] = {103, 103.5, 90, 200, 207};
    // 103 is exactly 3% over: not counted; 103.5, 200 and 207 (3.5% over 200) are.
    EXPECT_EQ(pairs_slower(off, on, 5), 3);
}

TEST(Verdict, NeedsTheMediansAndThePairsToAgree)
{
    EXPECT_EQ(never_slower_verdict(100, 103, 5, 5), VERDICT_SAME);
    EXPECT_EQ(never_slower_verdict(100, 90, 5, 5), VERDICT_SAME);
    EXPECT_EQ(never_slower_verdict(100, 104, 5, 5), VERDICT_SLOWER);
    EXPECT_EQ(never_slower_verdict(100, 104, 4, 5), VERDICT_INCONCLUSIVE);
    EXPECT_EQ(never_slower_verdict(100, 150, 3, 5), VERDICT_INCONCLUSIVE);
    EXPECT_EQ(never_slower_verdict(100, 104, 9, 11), VERDICT_SLOWER);
    EXPECT_EQ(never_slower_verdict(100, 104, 8, 11), VERDICT_INCONCLUSIVE);
    // Four pairs can never be significant.
    EXPECT_EQ(never_slower_verdict(100, 200, 4, 4), VERDICT_INCONCLUSIVE);
    EXPECT_EQ(never_slower_min_reps(), 5);
}
