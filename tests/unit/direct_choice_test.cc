// Whether regions on present data get device addresses, chosen per kernel by timing both ways
// (plugin/hook/hook_direct_choice.c): the ways alternate while timing, the faster median wins,
// a tie forwards, chosen kernels are timed again after a while, kernels whose IDs sit side by
// side keep a choice each, those beyond the table (or on a thread without one) get device
// addresses untimed, and the variable fixes the choice.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <thread>

extern "C" {
#include "plugin/core/alloc.h"
#include "plugin/core/config.h"
#include "plugin/hook/hook_direct_choice.h"
}

namespace {

class DirectChoice : public ::testing::Test {
protected:
    void SetUp() override
    {
        unsetenv("OMPBATCH_DIRECT_REGIONS");
        ob_config_reload();
        ob_direct_choice_forget_for_testing();
    }
    void TearDown() override
    {
        unsetenv("OMPBATCH_DIRECT_REGIONS");
        ob_config_reload();
    }
    // Runs regions of c's kernel until it chooses: each takes direct_ns or forward_ns (+ the
    // noise of its index), as the way it is told to use. Returns the regions run.
    static int time_until_chosen(ob_direct_choice *c, const uint64_t *direct_ns,
                                 const uint64_t *forward_ns)
    {
        int regions = 0, direct = 0, forwarded = 0;
        while (c->chosen < 0 && regions < 100) {
            ob_direct_mode mode = ob_direct_choice_next(c);
            EXPECT_TRUE(mode == OB_DIRECT_TIME_YES || mode == OB_DIRECT_TIME_NO);
            if (mode == OB_DIRECT_TIME_YES)
                ob_direct_choice_timed(c, 1, direct_ns[direct++]);
            else
                ob_direct_choice_timed(c, 0, forward_ns[forwarded++]);
            regions++;
            // The ways alternate: neither is ever two regions ahead.
            EXPECT_LE(direct - forwarded, 1);
            EXPECT_LE(forwarded - direct, 1);
        }
        return regions;
    }
};

int kernel_a, kernel_b;

// Region times (ns) of a slower and a faster way, five regions each.
const uint64_t slow[] = {65000, 64000, 66000, 63000, 65500};
const uint64_t fast[] = {57000, 58000, 56000, 57500, 57200};

TEST_F(DirectChoice, TheFasterMedianIsChosenAfterFiveRegionsEachWay)
{
    // Device addresses faster by their median although their worst region is the slowest.
    const uint64_t direct[] = {20000, 21000, 90000, 19000, 20500};
    const uint64_t forward[] = {25000, 24000, 26000, 23000, 25500};
    ob_direct_choice *c = ob_direct_choice_of(&kernel_a);
    EXPECT_EQ(&kernel_a, c->kernel);
    EXPECT_EQ(-1, c->chosen);
    EXPECT_EQ(OB_DIRECT_TIME_YES, ob_direct_choice_next(c)) << "device addresses are timed first";
    ob_direct_choice_timed(c, 1, direct[0]);
    EXPECT_EQ(OB_DIRECT_TIME_NO, ob_direct_choice_next(c));
    ob_direct_choice_timed(c, 0, forward[0]);
    int regions = time_until_chosen(c, direct + 1, forward + 1);
    EXPECT_EQ(2 * OB_DIRECT_CHOICE_SAMPLES - 2, regions);
    EXPECT_EQ(1, c->chosen);
    EXPECT_EQ(OB_DIRECT_YES, ob_direct_choice_next(c));
    // Timings after the choice change nothing.
    for (int i = 0; i < 20; i++)
        ob_direct_choice_timed(c, 1, 1000000);
    EXPECT_EQ(OB_DIRECT_YES, ob_direct_choice_next(c));
}

TEST_F(DirectChoice, ForwardedWinsWhenDeviceAddressesAreSlowerOrTied)
{
    ob_direct_choice *c = ob_direct_choice_of(&kernel_a);
    time_until_chosen(c, slow, fast);
    EXPECT_EQ(0, c->chosen);
    EXPECT_EQ(OB_DIRECT_NO, ob_direct_choice_next(c));

    const uint64_t same[] = {30000, 30000, 30000, 30000, 30000};
    ob_direct_choice *t = ob_direct_choice_of(&kernel_b);
    ASSERT_NE(t, c);
    time_until_chosen(t, same, same);
    EXPECT_EQ(0, t->chosen) << "a tie keeps the runtime's own way";
    // kernel_a kept its choice beside kernel_b's.
    EXPECT_EQ(OB_DIRECT_NO, ob_direct_choice_next(ob_direct_choice_of(&kernel_a)));
}

TEST_F(DirectChoice, AChosenKernelIsTimedAgainAfterAWhile)
{
    ob_direct_choice *c = ob_direct_choice_of(&kernel_a);
    time_until_chosen(c, fast, slow);
    ASSERT_EQ(1, c->chosen);
    int chosen_regions = 0;
    while (ob_direct_choice_next(c) == OB_DIRECT_YES && chosen_regions < 10000)
        chosen_regions++;
    EXPECT_EQ(OB_DIRECT_CHOICE_RETIME - 1, chosen_regions);
    EXPECT_EQ(-1, c->chosen);
    // The host changed meanwhile: now forwarding wins. The region that asked last above was
    // told to time device addresses.
    ob_direct_choice_timed(c, 1, slow[0]);
    time_until_chosen(c, slow + 1, fast);
    EXPECT_EQ(0, c->chosen);
}

// A program's region IDs are bytes side by side: a hundred of them keep a choice each, and
// each keeps its own after all the others were timed.
TEST_F(DirectChoice, KernelsSideBySideKeepTheirOwnChoices)
{
    static char region_ids[100];
    std::set<ob_direct_choice *> slots;
    for (int k = 0; k < 100; k++) {
        ob_direct_choice *c = ob_direct_choice_of(&region_ids[k]);
        ASSERT_NE(nullptr, c) << "kernel " << k;
        EXPECT_EQ(&region_ids[k], c->kernel);
        slots.insert(c);
        // Even kernels find device addresses faster, odd ones forwarding.
        if (k % 2 == 0)
            time_until_chosen(c, fast, slow);
        else
            time_until_chosen(c, slow, fast);
    }
    EXPECT_EQ(100u, slots.size());
    for (int k = 0; k < 100; k++)
        EXPECT_EQ(k % 2 == 0 ? OB_DIRECT_YES : OB_DIRECT_NO,
                  ob_direct_choice_next(ob_direct_choice_of(&region_ids[k])))
            << "kernel " << k;
}

// More kernels than the table holds: those that find no slot get device addresses untimed,
// as before any timing, and take no other kernel's slot.
TEST_F(DirectChoice, KernelsBeyondTheTableGetDeviceAddressesUntimed)
{
    static char region_ids[2000];
    int without = 0;
    for (int k = 0; k < 2000; k++) {
        ob_direct_choice *c = ob_direct_choice_of(&region_ids[k]);
        if (c == nullptr) {
            without++;
            EXPECT_EQ(OB_DIRECT_YES, ob_direct_choice_next(nullptr));
            ob_direct_choice_timed(nullptr, 0, 1000); // nothing to keep it in, no harm
        } else {
            EXPECT_EQ(&region_ids[k], c->kernel);
        }
    }
    EXPECT_GE(without, 2000 - 256);
    EXPECT_EQ(&region_ids[0], ob_direct_choice_of(&region_ids[0])->kernel);
    EXPECT_EQ(nullptr, ob_direct_choice_of(nullptr));
}

// A thread whose table cannot be allocated: no choices, device addresses untimed; its next
// region tries again.
TEST_F(DirectChoice, AThreadWithoutATableGetsDeviceAddressesUntimed)
{
    std::thread([] {
        ob_alloc_fail_after_for_testing(0);
        ob_direct_choice *c = ob_direct_choice_of(&kernel_a);
        ob_alloc_fail_after_for_testing(-1);
        EXPECT_EQ(nullptr, c);
        EXPECT_EQ(OB_DIRECT_YES, ob_direct_choice_next(c));
        ob_direct_choice *again = ob_direct_choice_of(&kernel_a);
        ASSERT_NE(nullptr, again);
        EXPECT_EQ(OB_DIRECT_TIME_YES, ob_direct_choice_next(again));
    }).join();
}

TEST_F(DirectChoice, TheVariableFixesTheChoiceWithoutTiming)
{
    ob_direct_choice *c = ob_direct_choice_of(&kernel_a);
    setenv("OMPBATCH_DIRECT_REGIONS", "1", 1);
    ob_config_reload();
    EXPECT_EQ(nullptr, ob_direct_choice_of(&kernel_b)) << "no choice kept while fixed";
    EXPECT_EQ(OB_DIRECT_YES, ob_direct_choice_next(nullptr));
    for (int i = 0; i < 20; i++)
        EXPECT_EQ(OB_DIRECT_YES, ob_direct_choice_next(c));
    setenv("OMPBATCH_DIRECT_REGIONS", "0", 1);
    ob_config_reload();
    for (int i = 0; i < 20; i++)
        EXPECT_EQ(OB_DIRECT_NO, ob_direct_choice_next(c));
    EXPECT_EQ(OB_DIRECT_NO, ob_direct_choice_next(nullptr));
    EXPECT_EQ(-1, c->chosen);
    EXPECT_EQ(0u, c->taken[0] + c->taken[1]);
}

} // namespace
