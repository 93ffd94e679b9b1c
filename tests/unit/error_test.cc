// The calling thread's error record (plugin/core/error.c): the copy an error names is kept beside
// its message, so that a caller can renumber it without reading the words.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

extern "C" {
#include "plugin/core/error.h"
}

namespace {

size_t named_copy()
{
    size_t copy = SIZE_MAX;
    return ob_error_copy(&copy) ? copy : SIZE_MAX;
}

TEST(ErrorRecord, APlainFailureNamesNoCopy)
{
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ob_fail(OMPBATCH_ERR_NULL_POINTER, "batch is NULL"));
    EXPECT_STREQ("batch is NULL", ompbatch_last_error());
    EXPECT_EQ(SIZE_MAX, named_copy());
    // Renumbering an error that names no copy changes nothing.
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER,
              ob_error_renumber_copy(OMPBATCH_ERR_NULL_POINTER, 9, " (note)"));
    EXPECT_STREQ("batch is NULL", ompbatch_last_error());
}

TEST(ErrorRecord, ACopysFailureKeepsItsIndexThroughContexts)
{
    ob_fail_copy(OMPBATCH_ERR_OVERFLOW, 3, "dst %d overflows", 7);
    EXPECT_STREQ("copy 3: dst 7 overflows", ompbatch_last_error());
    EXPECT_EQ(3u, named_copy());
    ob_fail_context(OMPBATCH_ERR_OVERFLOW, "rect at copy %d: ", 2);
    EXPECT_STREQ("rect at copy 2: copy 3: dst 7 overflows", ompbatch_last_error());
    EXPECT_EQ(3u, named_copy());
    // The copy's prefix is replaced where it stands; what came before it stays.
    ob_error_renumber_copy(OMPBATCH_ERR_OVERFLOW, 41, " (in device %d's part)", 5);
    EXPECT_STREQ("rect at copy 2: copy 41 (in device 5's part): dst 7 overflows",
                 ompbatch_last_error());
    EXPECT_EQ(41u, named_copy());
}

TEST(ErrorRecord, ALowerLayersFailureIsNamedForItsCopy)
{
    ob_fail(OMPBATCH_ERR_DRIVER, "cuMemcpyAsync failed: CUDA_ERROR_INVALID_VALUE");
    EXPECT_EQ(SIZE_MAX, named_copy());
    ob_fail_copy_context(OMPBATCH_ERR_DRIVER, 6, " (merged with %d neighbours)", 2);
    EXPECT_STREQ("copy 6 (merged with 2 neighbours): cuMemcpyAsync failed: "
                 "CUDA_ERROR_INVALID_VALUE",
                 ompbatch_last_error());
    EXPECT_EQ(6u, named_copy());
    ob_error_renumber_copy(OMPBATCH_ERR_DRIVER, 12, " (in device %d's part)", 0);
    EXPECT_STREQ("copy 12 (in device 0's part): cuMemcpyAsync failed: CUDA_ERROR_INVALID_VALUE",
                 ompbatch_last_error());
    ob_fail(OMPBATCH_ERR_DRIVER, "x");
    ob_fail_in_copy(OMPBATCH_ERR_DRIVER, 0);
    EXPECT_STREQ("copy 0: x", ompbatch_last_error());
    EXPECT_EQ(0u, named_copy());
}

TEST(ErrorRecord, ASavedErrorComesBackWhole)
{
    ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, 4, "src is device memory");
    ob_error_saved saved;
    ob_error_save(&saved);
    ob_fail(OMPBATCH_ERR_DRIVER, "the wait after it failed too");
    EXPECT_EQ(SIZE_MAX, named_copy());
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ob_error_restore(OMPBATCH_ERR_INVALID_ARGUMENT, &saved));
    EXPECT_STREQ("copy 4: src is device memory", ompbatch_last_error());
    EXPECT_EQ(4u, named_copy());
}

TEST(ErrorRecord, AContextThatPushesTheCopyOutOfTheMessageForgetsTheCopy)
{
    std::string text(400, 'x');
    ob_fail_copy(OMPBATCH_ERR_INVALID_ARGUMENT, 8, "%s", text.c_str());
    EXPECT_EQ(8u, named_copy());
    // Two long prefixes push "copy 8: " past the end of the 512-byte message.
    std::string context(150, 'c');
    ob_fail_context(OMPBATCH_ERR_INVALID_ARGUMENT, "%s: ", context.c_str());
    ob_fail_context(OMPBATCH_ERR_INVALID_ARGUMENT, "%s: ", context.c_str());
    ob_fail_context(OMPBATCH_ERR_INVALID_ARGUMENT, "%s: ", context.c_str());
    ob_fail_context(OMPBATCH_ERR_INVALID_ARGUMENT, "%s: ", context.c_str());
    EXPECT_LT(std::strlen(ompbatch_last_error()), 512u);
    EXPECT_EQ(SIZE_MAX, named_copy());
}

} // namespace
