// Environment tunables (plugin/core/config.c) and verbose logging.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "ompbatch.h"

extern "C" {
#include "plugin/core/config.h"
#include "plugin/core/workers.h"
}

namespace {

class Config : public ::testing::Test {
protected:
    void TearDown() override
    {
        for (const char *name :
             {"OMPBATCH_DISABLE", "OMPBATCH_VERBOSE", "OMPBATCH_MAX_COPIES", "OMPBATCH_BATCH_FORM",
              "OMPBATCH_CUDA_LIBRARY", "OMPBATCH_STRATEGY", "OMPBATCH_PACK_THREADS",
              "OMPBATCH_CALIBRATE", "OMPBATCH_COST_CACHE", "OMPBATCH_COST", "OMPBATCH_STAGING_MB",
              "OMPBATCH_NVTX", "OMPBATCH_STRIDED", "OMPBATCH_BUS_KB", "OMPBATCH_HOST_BUSY",
              "OMPBATCH_DIRECT_REGIONS",
              "XDG_CACHE_HOME"})
            unsetenv(name);
        ob_config_reload();
    }
    // Reloads the configuration and returns what it printed on stderr.
    static std::string reload()
    {
        testing::internal::CaptureStderr();
        ob_config_reload();
        return testing::internal::GetCapturedStderr();
    }
};

TEST_F(Config, DefaultsWithoutVariables)
{
    unsetenv("OMPBATCH_CUDA_LIBRARY");
    EXPECT_EQ("", reload());
    const ob_config *c = ob_config_get();
    EXPECT_EQ(0, c->disable);
    EXPECT_EQ(0, c->verbose);
    EXPECT_EQ(4096u, c->max_copies);
    EXPECT_EQ(OB_FORM_AUTO, c->form);
    EXPECT_STREQ("libcuda.so.1", c->cuda_library);
    EXPECT_EQ(1, c->nvtx);
}

TEST_F(Config, ReadsEveryVariable)
{
    setenv("OMPBATCH_DISABLE", "1", 1);
    setenv("OMPBATCH_VERBOSE", "3", 1);
    setenv("OMPBATCH_MAX_COPIES", "17", 1);
    setenv("OMPBATCH_BATCH_FORM", "12080", 1);
    setenv("OMPBATCH_CUDA_LIBRARY", "/opt/driver/libcuda.so.1", 1);
    setenv("OMPBATCH_NVTX", "0", 1);
    EXPECT_EQ("", reload());
    const ob_config *c = ob_config_get();
    EXPECT_EQ(0, c->nvtx);
    EXPECT_EQ(1, c->disable);
    EXPECT_EQ(3, c->verbose);
    EXPECT_EQ(17u, c->max_copies);
    EXPECT_EQ(OB_FORM_FORCE_12080, c->form);
    EXPECT_STREQ("/opt/driver/libcuda.so.1", c->cuda_library);
    setenv("OMPBATCH_BATCH_FORM", "percopy", 1);
    reload();
    EXPECT_EQ(OB_FORM_FORCE_PER_COPY, ob_config_get()->form);
    setenv("OMPBATCH_BATCH_FORM", "13000", 1);
    reload();
    EXPECT_EQ(OB_FORM_FORCE_13000, ob_config_get()->form);
}

TEST_F(Config, BadValuesAreNamedAndReplacedByDefaults)
{
    setenv("OMPBATCH_DISABLE", "yes", 1);
    setenv("OMPBATCH_VERBOSE", "9", 1);
    setenv("OMPBATCH_MAX_COPIES", "0", 1);
    setenv("OMPBATCH_BATCH_FORM", "fast", 1);
    std::string err = reload();
    EXPECT_NE(std::string::npos, err.find("ignoring OMPBATCH_DISABLE=\"yes\": expected an integer from 0 to 1"))
        << err;
    EXPECT_NE(std::string::npos, err.find("OMPBATCH_VERBOSE=\"9\"")) << err;
    EXPECT_NE(std::string::npos, err.find("OMPBATCH_MAX_COPIES=\"0\"")) << err;
    EXPECT_NE(std::string::npos, err.find("OMPBATCH_BATCH_FORM=\"fast\": expected auto, 13000, 12080 or percopy\n"))
        << err;
    const ob_config *c = ob_config_get();
    EXPECT_EQ(0, c->disable);
    EXPECT_EQ(0, c->verbose);
    EXPECT_EQ(4096u, c->max_copies);
    EXPECT_EQ(OB_FORM_AUTO, c->form);
}

// Integers are the digits alone (a minus sign at most): blanks and a plus sign are refused.
TEST_F(Config, IntegersWithBlanksOrAPlusSignAreRefused)
{
    for (const char *value : {" +17", "+17", " 17", "17 ", "\t17"}) {
        SCOPED_TRACE(value);
        setenv("OMPBATCH_MAX_COPIES", value, 1);
        EXPECT_EQ("ompbatch: ignoring OMPBATCH_MAX_COPIES=\"" + std::string(value) +
                      "\": expected an integer from 1 to 16777216\n",
                  reload());
        EXPECT_EQ(4096u, ob_config_get()->max_copies);
    }
    setenv("OMPBATCH_MAX_COPIES", "17", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(17u, ob_config_get()->max_copies);
}

// A string variable longer than the 511 characters kept for it is refused whole, with a
// warning: cut short, a path would name another file and the last cost override another
// figure. 511 characters are kept as they are.
TEST_F(Config, OverLongStringsAreRefusedWholeNotCutShort)
{
    std::string cost;
    while (cost.size() < 470)
        cost += "d2d.direct.fixed=1,";
    std::string last = "d2d.staged.fixed=";
    std::string fits = cost + last + std::string(511 - cost.size() - last.size(), '5');
    ASSERT_EQ(511u, fits.size());
    setenv("OMPBATCH_COST", fits.c_str(), 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(fits, ob_config_get()->cost);
    std::string too_long = fits + "9";
    setenv("OMPBATCH_COST", too_long.c_str(), 1);
    EXPECT_EQ("ompbatch: ignoring OMPBATCH_COST=\"" + too_long +
                  "\": expected at most 511 characters\n",
              reload());
    EXPECT_STREQ("", ob_config_get()->cost);
    unsetenv("OMPBATCH_COST");

    std::string dir = "/tmp/" + std::string(520, 'd') + "/cache";
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    setenv("OMPBATCH_COST_CACHE", dir.c_str(), 1);
    std::string err = reload();
    EXPECT_NE(std::string::npos,
              err.find("ignoring OMPBATCH_COST_CACHE=\"" + dir + "\": expected at most 511"))
        << err;
    EXPECT_STREQ("/xdg/ompbatch", ob_config_get()->cost_cache);
    // A default directory too long for the 511 characters: no cache, not a shorter directory.
    unsetenv("OMPBATCH_COST_CACHE");
    std::string xdg = "/" + std::string(505, 'x');
    setenv("XDG_CACHE_HOME", xdg.c_str(), 1);
    EXPECT_EQ("", reload());
    EXPECT_STREQ("", ob_config_get()->cost_cache);

    std::string library = "/opt/" + std::string(510, 'l') + "/libcuda.so.1";
    setenv("OMPBATCH_CUDA_LIBRARY", library.c_str(), 1);
    err = reload();
    EXPECT_NE(std::string::npos,
              err.find("ignoring OMPBATCH_CUDA_LIBRARY=\"" + library + "\": expected at most 511"))
        << err;
    EXPECT_STREQ("libcuda.so.1", ob_config_get()->cuda_library);
}

// Which pieces strided updates copy: runtime by default, spec on request, a bad value named.
TEST_F(Config, StridedIsReadAndABadValueNamed)
{
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_STRIDED_RUNTIME, ob_config_get()->strided);
    setenv("OMPBATCH_STRIDED", "spec", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_STRIDED_SPEC, ob_config_get()->strided);
    setenv("OMPBATCH_STRIDED", "runtime", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_STRIDED_RUNTIME, ob_config_get()->strided);
    setenv("OMPBATCH_STRIDED", "specification", 1);
    EXPECT_EQ("ompbatch: ignoring OMPBATCH_STRIDED=\"specification\": expected runtime or spec\n",
              reload());
    EXPECT_EQ(OB_STRIDED_RUNTIME, ob_config_get()->strided);
}

// OMPBATCH_HOST_BUSY: the host's load decides (auto), or the host is taken for idle or busy
// whatever it runs; a busy host has callers work alone. A bad value is named.
TEST_F(Config, HostBusyIsReadAndDecidesWhetherTheHostIsBusy)
{
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_HOST_BUSY_AUTO, ob_config_get()->host_busy);
    setenv("OMPBATCH_HOST_BUSY", "1", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_HOST_BUSY_ALWAYS, ob_config_get()->host_busy);
    ob_workers_forget_lateness_for_testing();
    EXPECT_TRUE(ob_host_saturated());
    EXPECT_TRUE(ob_workers_late());
    setenv("OMPBATCH_HOST_BUSY", "0", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_HOST_BUSY_NEVER, ob_config_get()->host_busy);
    ob_workers_forget_lateness_for_testing();
    EXPECT_FALSE(ob_host_saturated());
    EXPECT_FALSE(ob_workers_late());
    setenv("OMPBATCH_HOST_BUSY", "auto", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_HOST_BUSY_AUTO, ob_config_get()->host_busy);
    setenv("OMPBATCH_HOST_BUSY", "yes", 1);
    EXPECT_EQ("ompbatch: ignoring OMPBATCH_HOST_BUSY=\"yes\": expected auto, 0 or 1\n", reload());
    EXPECT_EQ(OB_HOST_BUSY_AUTO, ob_config_get()->host_busy);
}

// OMPBATCH_DIRECT_REGIONS: timed per kernel by default, or fixed either way; a bad value is
// named and the default kept.
TEST_F(Config, DirectRegionsIsReadAndBadValuesNamed)
{
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_DIRECT_REGIONS_TIMED, ob_config_get()->direct_regions);
    setenv("OMPBATCH_DIRECT_REGIONS", "1", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_DIRECT_REGIONS_ALWAYS, ob_config_get()->direct_regions);
    setenv("OMPBATCH_DIRECT_REGIONS", "0", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_DIRECT_REGIONS_NEVER, ob_config_get()->direct_regions);
    setenv("OMPBATCH_DIRECT_REGIONS", "timed", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_DIRECT_REGIONS_TIMED, ob_config_get()->direct_regions);
    setenv("OMPBATCH_DIRECT_REGIONS", "always", 1);
    EXPECT_EQ("ompbatch: ignoring OMPBATCH_DIRECT_REGIONS=\"always\": expected timed, 0 or 1\n",
              reload());
    EXPECT_EQ(OB_DIRECT_REGIONS_TIMED, ob_config_get()->direct_regions);
}

// The staged strategy's variables: their values, their defaults and bad values, named.
TEST_F(Config, StrategyVariablesAreReadAndBadOnesNamed)
{
    setenv("OMPBATCH_STRATEGY", "staged", 1);
    setenv("OMPBATCH_PACK_THREADS", "3", 1);
    setenv("OMPBATCH_CALIBRATE", "force", 1);
    setenv("OMPBATCH_COST_CACHE", "/var/cache/ob", 1);
    setenv("OMPBATCH_COST", "d2d.staged.fixed=1", 1);
    setenv("OMPBATCH_STAGING_MB", "7", 1);
    setenv("OMPBATCH_BUS_KB", "5", 1);
    EXPECT_EQ("", reload());
    const ob_config *c = ob_config_get();
    EXPECT_EQ(size_t(5) << 10, c->bus_bytes);
    EXPECT_EQ(OB_STRATEGY_STAGED, c->strategy);
    EXPECT_EQ(3u, c->pack_threads);
    EXPECT_EQ(OB_CALIBRATE_FORCE, c->calibrate);
    EXPECT_STREQ("/var/cache/ob", c->cost_cache);
    EXPECT_STREQ("d2d.staged.fixed=1", c->cost);
    EXPECT_EQ(size_t(7) << 20, c->staging_bytes);
    setenv("OMPBATCH_STRATEGY", "direct", 1);
    setenv("OMPBATCH_CALIBRATE", "0", 1);
    setenv("OMPBATCH_COST_CACHE", "off", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_STRATEGY_DIRECT, ob_config_get()->strategy);
    EXPECT_EQ(OB_CALIBRATE_OFF, ob_config_get()->calibrate);
    EXPECT_STREQ("", ob_config_get()->cost_cache);
    // Defaults: auto, calibrate, the cache under XDG_CACHE_HOME.
    for (const char *name : {"OMPBATCH_STRATEGY", "OMPBATCH_CALIBRATE", "OMPBATCH_COST_CACHE",
                             "OMPBATCH_PACK_THREADS", "OMPBATCH_BUS_KB"})
        unsetenv(name);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    EXPECT_EQ("", reload());
    EXPECT_EQ(OB_STRATEGY_AUTO, ob_config_get()->strategy);
    EXPECT_EQ(OB_CALIBRATE_ON, ob_config_get()->calibrate);
    EXPECT_STREQ("/xdg/ompbatch", ob_config_get()->cost_cache);
    EXPECT_GE(ob_config_get()->pack_threads, 1u);
    EXPECT_LE(ob_config_get()->pack_threads, 8u);
    EXPECT_EQ(size_t(1024) << 10, ob_config_get()->bus_bytes);
    // Bad values: named on stderr, defaults used.
    setenv("OMPBATCH_BUS_KB", "-1", 1);
    setenv("OMPBATCH_STRATEGY", "fastest", 1);
    setenv("OMPBATCH_CALIBRATE", "sometimes", 1);
    setenv("OMPBATCH_PACK_THREADS", "0", 1);
    std::string err = reload();
    EXPECT_NE(std::string::npos,
              err.find("ignoring OMPBATCH_STRATEGY=\"fastest\": expected auto, direct or staged"))
        << err;
    EXPECT_NE(std::string::npos,
              err.find("ignoring OMPBATCH_CALIBRATE=\"sometimes\": expected 0, 1 or force"))
        << err;
    EXPECT_NE(std::string::npos, err.find("OMPBATCH_PACK_THREADS=\"0\"")) << err;
    EXPECT_NE(std::string::npos,
              err.find("ignoring OMPBATCH_BUS_KB=\"-1\": expected an integer from 0 to 1048576"))
        << err;
    EXPECT_EQ(size_t(1024) << 10, ob_config_get()->bus_bytes);
    EXPECT_EQ(OB_STRATEGY_AUTO, ob_config_get()->strategy);
    EXPECT_EQ(OB_CALIBRATE_ON, ob_config_get()->calibrate);
}

TEST_F(Config, VerboseLoggingReportsPlansAndErrors)
{
    setenv("OMPBATCH_VERBOSE", "2", 1);
    reload();
    char a[64] = "0123456789abcdefghijklmnopqrstuvwxyz", b[64];
    ompbatch_batch *batch = nullptr;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&batch, OMPBATCH_HOST_DEVICE, nullptr, nullptr));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch, b, -1, a, -1, 16, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch, b + 32, -1, a + 32, -1, 4, 0));
    testing::internal::CaptureStderr();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch));
    EXPECT_EQ(OMPBATCH_ERR_BAD_STATE, ompbatch_batch_add(batch, b, -1, a, -1, 4, 0));
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(std::string::npos, err.find("ompbatch: device -1: 2 copies -> 2 planned")) << err;
    EXPECT_NE(std::string::npos, err.find("ompbatch: error: the batch was submitted")) << err;
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(batch));
    // Level 0 prints nothing.
    unsetenv("OMPBATCH_VERBOSE");
    reload();
    testing::internal::CaptureStderr();
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_submit(nullptr));
    EXPECT_EQ("", testing::internal::GetCapturedStderr());
}

}  // namespace
