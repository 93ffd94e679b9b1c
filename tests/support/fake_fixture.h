// What the tests that drive the library through the fake driver share: the fake's control
// functions, buffers of each memory kind allocated through it, batches, and a fixture that
// reloads the fake before every test.
#ifndef OMPBATCH_TESTS_FAKE_FIXTURE_H
#define OMPBATCH_TESTS_FAKE_FIXTURE_H

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ompbatch.h"
#include "tests/support/test_random.h"

extern "C" {
#include "plugin/cuda/driver.h"
#include "tests/fake_cuda/fake_cuda_control.h"
}


const int H = OMPBATCH_HOST_DEVICE;


inline bool message_has(const char *needle)
{
    return std::strstr(ompbatch_last_error(), needle) != nullptr;
}

inline bool message_has(const std::string &needle)
{
    return message_has(needle.c_str());
}

// The path Bazel gave the test, kept before any test changes the variable.
inline const std::string &fake_library_path()
{
    static const std::string path = [] {
        const char *p = std::getenv("OMPBATCH_CUDA_LIBRARY");
        return std::string(p ? p : "");
    }();
    return path;
}

inline fake_cuda_control &fake()
{
    static fake_cuda_control ctl = fake_cuda_control_open(fake_library_path().c_str());
    return ctl;
}

enum Kind { PAGEABLE, PINNED, DEVICE, MANAGED };

// A buffer of one memory kind, allocated through the fake as the library sees it.
struct Buffer {
    Kind kind;
    int device;
    size_t bytes;
    unsigned char *ptr = nullptr;
    Buffer(Kind k, size_t n, int dev = 0) : kind(k), device(dev), bytes(n)
    {
        const ob_driver *d = ob_driver_get();
        EXPECT_EQ(OMPBATCH_OK, ob_driver_push_context(dev));
        CUdeviceptr p = 0;
        void *h = nullptr;
        switch (kind) {
        case PAGEABLE:
            ptr = static_cast<unsigned char *>(std::malloc(n));
            break;
        case PINNED:
            EXPECT_EQ(CUDA_SUCCESS, d->fn.cuMemAllocHost(&h, n));
            ptr = static_cast<unsigned char *>(h);
            break;
        case DEVICE:
            EXPECT_EQ(CUDA_SUCCESS, d->fn.cuMemAlloc(&p, n));
            ptr = reinterpret_cast<unsigned char *>(p);
            break;
        case MANAGED:
            EXPECT_EQ(CUDA_SUCCESS, d->fn.cuMemAllocManaged(&p, n, CU_MEM_ATTACH_GLOBAL));
            ptr = reinterpret_cast<unsigned char *>(p);
            break;
        }
        EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
        // The fake's memory is host memory, so the test can poison it directly.
        std::memset(ptr, 0xA5, n);
    }
    ~Buffer()
    {
        const ob_driver *d = ob_driver_get();
        EXPECT_EQ(OMPBATCH_OK, ob_driver_push_context(device));
        if (kind == PAGEABLE)
            std::free(ptr);
        else if (kind == PINNED)
            EXPECT_EQ(CUDA_SUCCESS, d->fn.cuMemFreeHost(ptr));
        else
            EXPECT_EQ(CUDA_SUCCESS, d->fn.cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)));
        EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    void fill(uint64_t salt)
    {
        auto v = random_bytes(bytes, salt);
        std::memcpy(ptr, v.data(), bytes);
    }
};

struct Batch {
    ompbatch_batch *b = nullptr;
    explicit Batch(int device = 0, void *stream = nullptr, const ompbatch_batch_options *o = nullptr)
    {
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_create(&b, device, stream, o))
            << ompbatch_last_error();
    }
    ~Batch() { ompbatch_batch_destroy(b); }
    ompbatch_stats stats() const
    {
        ompbatch_stats s;
        std::memset(&s, 0, sizeof(s));
        s.struct_size = sizeof(s);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_get_stats(b, &s));
        return s;
    }
};

// Each test starts from a freshly loaded fake driver with the given environment.
class FakeDriver : public ::testing::Test {
protected:
    void load(int version = 13000, const char *form = nullptr, const char *disable = nullptr)
    {
        ASSERT_NE(nullptr, fake().handle) << fake().error;
        fake().reset_config();
        fake().reset();
        fake().set_driver_version(version);
        fake().deinit();
        form ? setenv("OMPBATCH_BATCH_FORM", form, 1) : unsetenv("OMPBATCH_BATCH_FORM");
        disable ? setenv("OMPBATCH_DISABLE", disable, 1) : unsetenv("OMPBATCH_DISABLE");
        ob_driver_reload_for_testing();
        ASSERT_TRUE(ob_driver_get()->loaded) << ob_driver_get()->reason;
    }
    void SetUp() override { load(); }
    void TearDown() override
    {
        fake_cuda_stats s;
        fake().get_stats(&s);
        EXPECT_EQ(0u, s.dependent_copies) << "the library put dependent copies in one batch";
        EXPECT_EQ(0u, s.legacy_stream_copies) << "the library used the legacy stream";
        EXPECT_EQ(0u, s.stream_context_mismatches);
        unsetenv("OMPBATCH_BATCH_FORM");
        unsetenv("OMPBATCH_DISABLE");
        unsetenv("OMPBATCH_MAX_COPIES");
    }
    static fake_cuda_batch_record last_batch(size_t back = 0)
    {
        fake_cuda_batch_record r;
        EXPECT_EQ(0, fake().get_batch_record(back, &r));
        return r;
    }
};

#endif
