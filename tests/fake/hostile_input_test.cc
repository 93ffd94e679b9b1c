// Hostile input to every public function, counted by category: each case expects its status
// and a message naming the argument or copy, and none may crash or write anything. After all
// of them the batches they were thrown at still move bytes exactly. Runs against the fake
// driver, so that device numbers, device memory and streams are real to the library. Prints
// "hostile inputs: <category> <n>, ... = <total>" for the README's reliability figures.
#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tests/support/fake_fixture.h"

namespace
{

struct Env;

struct Case {
    const char *category;
    const char *what;
    std::function<int(Env &)> call;
    int expect;
    const char *needle; // in ompbatch_last_error(); nullptr when the call succeeds
};

// What every case is thrown at, made afresh for each: batches in every state (open, submitted,
// of the host, destroyed, not a batch at all), buffers of every kind, a stream of the other
// GPU, and argument arrays of every hostile shape.
struct Env {
    Buffer pinned{PINNED, 1 << 16}, dev{DEVICE, 1 << 16}, other_dev{DEVICE, 4096, 1};
    std::vector<unsigned char> host = std::vector<unsigned char>(1 << 16, 0x5A);
    ompbatch_batch *b = nullptr, *submitted = nullptr, *host_batch = nullptr, *dead = nullptr;
    alignas(16) unsigned char junk[4096];
    ompbatch_batch *not_batch = reinterpret_cast<ompbatch_batch *>(junk);
    const ob_driver *d = nullptr;
    CUstream other_stream = nullptr;
    ompbatch_stats stats;
    char text[128];
    ompbatch_batch *out = nullptr;
    void *high = reinterpret_cast<void *>(UINTPTR_MAX - 8);
    unsigned char *p = pinned.ptr;
    unsigned char *g = dev.ptr;
    void *one_dst[1] = {g};
    const void *one_src[1] = {p};
    size_t one_len[1] = {16}, zero_off[1] = {0}, huge_off[1] = {SIZE_MAX - 4};
    // A pair of copies (so that they are classified) whose second reaches past half the
    // address space without wrapping it, and a NULL entry with an offset.
    void *two_dst[2] = {g, g};
    const void *two_src[2] = {p, p + 64};
    size_t two_len[2] = {16, 16}, far_off[2] = {0, (size_t)1 << 63};
    void *null_dst[1] = {nullptr};
    size_t some_off[1] = {64};
    void *peer_dst[2] = {other_dev.ptr + 512, nullptr};
    const void *peer_src[2] = {g, nullptr};
    size_t peer_len[2] = {100, 0};
    void *host_dst[1] = {host.data()};
    const void *dev_src[1] = {g};

    void Init()
    {
        pinned.fill(3);
        std::memset(junk, 0x3C, sizeof(junk));
        std::memset(&stats, 0, sizeof(stats));
        stats.struct_size = sizeof(stats);
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&b, 0, nullptr, nullptr));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&submitted, 0, nullptr, nullptr));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(submitted, dev.ptr, 0, pinned.ptr, H, 64, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(submitted));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(submitted));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&host_batch, H, nullptr, nullptr));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&dead, 0, nullptr, nullptr));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(dead));
        d = ob_driver_get();
        ASSERT_EQ(OMPBATCH_OK, ob_driver_push_context(1));
        ASSERT_EQ(CUDA_SUCCESS, d->fn.cuStreamCreate(&other_stream, CU_STREAM_NON_BLOCKING));
        ASSERT_EQ(OMPBATCH_OK, ob_driver_pop_context());
    }

    ~Env()
    {
        ompbatch_batch_destroy(b);
        ompbatch_batch_destroy(submitted);
        ompbatch_batch_destroy(host_batch);
        if (other_stream != nullptr && ob_driver_push_context(1) == OMPBATCH_OK) {
            EXPECT_EQ(CUDA_SUCCESS, d->fn.cuStreamDestroy(other_stream));
            EXPECT_EQ(OMPBATCH_OK, ob_driver_pop_context());
        }
    }
};

// The environment's names, as the cases use them.
#define USE_ENV(e)                                                                              \
    [[maybe_unused]] Buffer &pinned = (e).pinned, &dev = (e).dev, &other_dev = (e).other_dev;   \
    [[maybe_unused]] std::vector<unsigned char> &host = (e).host;                               \
    [[maybe_unused]] ompbatch_batch *b = (e).b, *submitted = (e).submitted,                     \
                                    *host_batch = (e).host_batch, *dead = (e).dead,             \
                                    *not_batch = (e).not_batch;                                 \
    [[maybe_unused]] CUstream other_stream = (e).other_stream;                                  \
    [[maybe_unused]] ompbatch_stats &stats = (e).stats;                                         \
    [[maybe_unused]] auto &text = (e).text;                                                     \
    [[maybe_unused]] auto &junk = (e).junk;                                                     \
    [[maybe_unused]] ompbatch_batch *&out = (e).out;                                            \
    [[maybe_unused]] void *high = (e).high;                                                     \
    [[maybe_unused]] unsigned char *p = (e).p, *g = (e).g;                                      \
    [[maybe_unused]] auto &one_dst = (e).one_dst;                                               \
    [[maybe_unused]] auto &one_src = (e).one_src;                                               \
    [[maybe_unused]] auto &one_len = (e).one_len;                                               \
    [[maybe_unused]] auto &zero_off = (e).zero_off;                                             \
    [[maybe_unused]] auto &huge_off = (e).huge_off;                                             \
    [[maybe_unused]] auto &two_dst = (e).two_dst;                                               \
    [[maybe_unused]] auto &two_src = (e).two_src;                                               \
    [[maybe_unused]] auto &two_len = (e).two_len;                                               \
    [[maybe_unused]] auto &far_off = (e).far_off;                                               \
    [[maybe_unused]] auto &null_dst = (e).null_dst;                                             \
    [[maybe_unused]] auto &some_off = (e).some_off;                                             \
    [[maybe_unused]] auto &peer_dst = (e).peer_dst;                                             \
    [[maybe_unused]] auto &peer_src = (e).peer_src;                                             \
    [[maybe_unused]] auto &peer_len = (e).peer_len;                                             \
    [[maybe_unused]] auto &host_dst = (e).host_dst;                                             \
    [[maybe_unused]] auto &dev_src = (e).dev_src

// Every case, in categories.
const std::vector<Case> &AllCases()
{
    static const std::vector<Case> all = [] {
        std::vector<Case> cases = {
            // NULL pointers and arrays.
            {"null", "create out", [](Env &e) { USE_ENV(e); return ompbatch_batch_create(nullptr, 0, nullptr, nullptr); },
             OMPBATCH_ERR_NULL_POINTER, "out"},
            {"null", "add batch", [](Env &e) { USE_ENV(e); return ompbatch_batch_add(nullptr, g, 0, p, H, 8, 0); },
             OMPBATCH_ERR_NULL_POINTER, "batch is NULL"},
            {"null", "add dst", [](Env &e) { USE_ENV(e); return ompbatch_batch_add(b, nullptr, 0, p, H, 8, 0); },
             OMPBATCH_ERR_NULL_POINTER, "copy 0: dst is NULL"},
            {"null", "add src", [](Env &e) { USE_ENV(e); return ompbatch_batch_add(b, g, 0, nullptr, H, 8, 0); },
             OMPBATCH_ERR_NULL_POINTER, "copy 0: src is NULL"},
            {"null", "add_mapped batch",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_add_mapped(nullptr, host.data(), 8, OMPBATCH_MAP_TO); },
             OMPBATCH_ERR_NULL_POINTER, "batch is NULL"},
            {"null", "submit", [](Env &e) { USE_ENV(e); return ompbatch_batch_submit(nullptr); },
             OMPBATCH_ERR_NULL_POINTER, "batch is NULL"},
            {"null", "wait", [](Env &e) { USE_ENV(e); return ompbatch_batch_wait(nullptr); }, OMPBATCH_ERR_NULL_POINTER,
             "batch is NULL"},
            {"null", "reset", [](Env &e) { USE_ENV(e); return ompbatch_batch_reset(nullptr); }, OMPBATCH_ERR_NULL_POINTER,
             "batch is NULL"},
            {"null", "forget_memory", [](Env &e) { USE_ENV(e); return ompbatch_batch_forget_memory(nullptr); },
             OMPBATCH_ERR_NULL_POINTER, "batch is NULL"},
            {"null", "get_stats batch", [](Env &e) { USE_ENV(e); return ompbatch_batch_get_stats(nullptr, &stats); },
             OMPBATCH_ERR_NULL_POINTER, "batch is NULL"},
            {"null", "get_stats stats", [](Env &e) { USE_ENV(e); return ompbatch_batch_get_stats(b, nullptr); },
             OMPBATCH_ERR_NULL_POINTER, "stats is NULL"},
            {"null", "describe batch",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_describe(nullptr, text, 8, nullptr); },
             OMPBATCH_ERR_NULL_POINTER, "batch is NULL"},
            {"null", "describe buf", [](Env &e) { USE_ENV(e); return ompbatch_batch_describe(b, nullptr, 8, nullptr); },
             OMPBATCH_ERR_NULL_POINTER, "buf is NULL"},
            {"null", "memcpy_batch dst array",
             [](Env &e) { USE_ENV(e);
                 return ompbatch_target_memcpy_batch(nullptr, one_src, one_len, zero_off, zero_off, 1,
                                                     0, H);
             },
             OMPBATCH_ERR_NULL_POINTER, "dst"},
            {"null", "memcpy_batch src array",
             [](Env &e) { USE_ENV(e);
                 return ompbatch_target_memcpy_batch(one_dst, nullptr, one_len, zero_off, zero_off, 1,
                                                     0, H);
             },
             OMPBATCH_ERR_NULL_POINTER, "src"},
            {"null", "memcpy_batch length array",
             [](Env &e) { USE_ENV(e);
                 return ompbatch_target_memcpy_batch(one_dst, one_src, nullptr, zero_off, zero_off, 1,
                                                     0, H);
             },
             OMPBATCH_ERR_NULL_POINTER, "length"},
            {"null", "get_driver_info", [](Env &e) { USE_ENV(e); return ompbatch_get_driver_info(nullptr); },
             OMPBATCH_ERR_NULL_POINTER, "info"},
            {"null", "hook_get_stats", [](Env &e) { USE_ENV(e); return ompbatch_hook_get_stats(nullptr); },
             OMPBATCH_ERR_NULL_POINTER, "stats"},
            // Zero counts: allowed, and nothing happens.
            {"zero", "memcpy_batch of none",
             [](Env &e) { USE_ENV(e);
                 return ompbatch_target_memcpy_batch(nullptr, nullptr, nullptr, nullptr, nullptr, 0, 0,
                                                     H);
             },
             OMPBATCH_OK, nullptr},
            {"zero", "a zero-byte copy of NULLs",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_add(b, nullptr, 0, nullptr, H, 0, 0); }, OMPBATCH_OK, nullptr},
            {"zero", "memcpy_batch between GPUs with a zero length",
             [](Env &e) { USE_ENV(e);
                 return ompbatch_target_memcpy_batch(peer_dst, peer_src, peer_len, nullptr, nullptr,
                                                     2, 1, 0);
             },
             OMPBATCH_OK, nullptr},
            {"zero", "a NULL zero-byte copy between GPUs in a batch spanning them",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, other_dev.ptr + 1024, 1, g, 0, 100, 0);
                 ompbatch_batch_add(b, nullptr, 1, nullptr, 0, 0, 0);
                 int status = ompbatch_batch_submit(b);
                 if (status == OMPBATCH_OK)
                     status = ompbatch_batch_wait(b);
                 ompbatch_batch_reset(b);
                 return status;
             },
             OMPBATCH_OK, nullptr},
            // Sizes that wrap the address space.
            {"overflow", "dst + bytes", [](Env &e) { USE_ENV(e); return ompbatch_batch_add(b, high, 0, p, H, 64, 0); },
             OMPBATCH_ERR_OVERFLOW, "dst"},
            {"overflow", "src + bytes", [](Env &e) { USE_ENV(e); return ompbatch_batch_add(b, g, 0, high, H, 64, 0); },
             OMPBATCH_ERR_OVERFLOW, "src"},
            {"overflow", "bytes SIZE_MAX",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_add(b, g, 0, p, H, SIZE_MAX, 0); }, OMPBATCH_ERR_OVERFLOW,
             "overflows"},
            {"overflow", "memcpy_batch offset",
             [](Env &e) { USE_ENV(e);
                 return ompbatch_target_memcpy_batch(one_dst, one_src, one_len, huge_off, zero_off, 1,
                                                     0, H);
             },
             OMPBATCH_ERR_OVERFLOW, "copy 0"},
            {"overflow", "memcpy_batch offset past half the address space",
             [](Env &e) { USE_ENV(e);
                 return ompbatch_target_memcpy_batch(two_dst, two_src, two_len, far_off, nullptr, 2,
                                                     0, H);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "copy 1: dst"},
            {"null", "memcpy_batch NULL entry with an offset",
             [](Env &e) { USE_ENV(e);
                 return ompbatch_target_memcpy_batch(null_dst, one_src, one_len, some_off, nullptr,
                                                     1, 0, H);
             },
             OMPBATCH_ERR_NULL_POINTER, "copy 0: dst is NULL"},
            // Device numbers out of range or not matching.
            {"device", "create 7", [](Env &e) { USE_ENV(e); return ompbatch_batch_create(&out, 7, nullptr, nullptr); },
             OMPBATCH_ERR_INVALID_DEVICE, "7"},
            {"device", "create -5", [](Env &e) { USE_ENV(e); return ompbatch_batch_create(&out, -5, nullptr, nullptr); },
             OMPBATCH_ERR_INVALID_DEVICE, "-5"},
            {"device", "create INT_MAX",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_create(&out, INT_MAX, nullptr, nullptr); },
             OMPBATCH_ERR_INVALID_DEVICE, "device_num"},
            {"device", "create INT_MIN",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_create(&out, INT_MIN, nullptr, nullptr); },
             OMPBATCH_ERR_INVALID_DEVICE, "device_num"},
            {"device", "add dst device 9", [](Env &e) { USE_ENV(e); return ompbatch_batch_add(b, g, 9, p, H, 8, 0); },
             OMPBATCH_ERR_INVALID_DEVICE, "dst_device_num 9"},
            {"device", "add src device -7", [](Env &e) { USE_ENV(e); return ompbatch_batch_add(b, g, 0, p, -7, 8, 0); },
             OMPBATCH_ERR_INVALID_DEVICE, "src_device_num -7"},
            {"device", "memcpy_batch device 99",
             [](Env &e) { USE_ENV(e);
                 return ompbatch_target_memcpy_batch(one_dst, one_src, one_len, zero_off, zero_off, 1,
                                                     99, H);
             },
             OMPBATCH_ERR_INVALID_DEVICE, "99"},
            // Options and statistics of the wrong size or value.
            {"struct", "stats struct_size 0",
             [](Env &e) { USE_ENV(e);
                 ompbatch_stats s;
                 std::memset(&s, 0, sizeof(s));
                 return ompbatch_batch_get_stats(b, &s);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "struct_size"},
            {"struct", "options strategy 7",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_options o;
                 std::memset(&o, 0, sizeof(o));
                 o.struct_size = sizeof(o);
                 o.strategy = 7;
                 return ompbatch_batch_create(&out, 0, nullptr, &o);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "strategy"},
            {"struct", "options struct_size 1",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_options o;
                 std::memset(&o, 0, sizeof(o));
                 o.struct_size = 1;
                 return ompbatch_batch_create(&out, 0, nullptr, &o);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "struct_size"},
            // Streams the library cannot use.
            {"stream", "legacy default",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_create(&out, 0, CU_STREAM_LEGACY, nullptr); },
             OMPBATCH_ERR_INVALID_ARGUMENT, "legacy"},
            {"stream", "per-thread",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_create(&out, 0, CU_STREAM_PER_THREAD, nullptr); },
             OMPBATCH_ERR_INVALID_ARGUMENT, "per-thread"},
            {"stream", "another device's",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_create(&out, 0, other_stream, nullptr); },
             OMPBATCH_ERR_INVALID_ARGUMENT, "another context"},
            {"stream", "not a stream", [](Env &e) { USE_ENV(e); return ompbatch_batch_create(&out, 0, junk, nullptr); },
             OMPBATCH_ERR_DRIVER, "cuStreamGetCtx failed"},
            {"stream", "a stream for the host",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_create(&out, H, other_stream, nullptr); },
             OMPBATCH_ERR_INVALID_ARGUMENT, "stream must be NULL"},
            // Memory that is not what the copy says (two copies, so that the library classifies
            // them; a lone copy goes to the driver as it is, which under unified addressing may be
            // legal and otherwise fails there, naming the copy).
            {"memory", "device memory named as host",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, g + 8192, 0, p + 8192, H, 8, 0);
                 ompbatch_batch_add(b, host.data(), H, g, H, 64, 0);
                 return ompbatch_batch_submit(b);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "names the host"},
            {"memory", "past the end of its allocation",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, g + 8192, 0, p + 8192, H, 8, 0);
                 ompbatch_batch_add(b, g + (1 << 16) - 8, 0, p, H, 64, 0);
                 return ompbatch_batch_submit(b);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "runs past the end of its allocation"},
            {"memory", "another device's memory",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, g + 8192, 0, p + 8192, H, 8, 0);
                 ompbatch_batch_add(b, other_dev.ptr, 0, p, H, 64, 0);
                 return ompbatch_batch_submit(b);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "of another device"},
            {"memory", "pageable memory named as the device",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, g + 8192, 0, p + 8192, H, 8, 0);
                 ompbatch_batch_add(b, host.data(), 0, p, H, 64, 0);
                 return ompbatch_batch_submit(b);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "not memory of device 0"},
            {"memory", "device memory as a host batch's destination",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(host_batch);
                 ompbatch_batch_add(host_batch, g, H, host.data(), H, 64, 0);
                 return ompbatch_batch_submit(host_batch);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "names the host"},
            {"memory", "device memory as a host batch's source",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(host_batch);
                 ompbatch_batch_add(host_batch, host.data(), H, g, H, 64, 0);
                 return ompbatch_batch_submit(host_batch);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "names the host"},
            {"memory", "device memory to memcpy_batch(host, host)",
             [](Env &e) { USE_ENV(e);
                 return ompbatch_target_memcpy_batch(host_dst, dev_src, one_len, nullptr, nullptr, 1,
                                                     H, H);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "names the host"},
            {"memory", "mapped range without a runtime",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 return ompbatch_batch_add_mapped(b, host.data(), 64, OMPBATCH_MAP_TO);
             },
             OMPBATCH_ERR_NO_OFFLOAD_RUNTIME, "runtime"},
            // Copies whose source and destination overlap.
            {"overlap", "the same range",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, g, 0, g, 0, 64, 0);
                 return ompbatch_batch_submit(b);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "overlap"},
            {"overlap", "forward by one byte",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, g + 1, 0, g, 0, 64, 0);
                 return ompbatch_batch_submit(b);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "overlap"},
            {"overlap", "backward by one byte",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, g, 0, g + 1, 0, 64, 0);
                 return ompbatch_batch_submit(b);
             },
             OMPBATCH_ERR_INVALID_ARGUMENT, "overlap"},
            // The batch's life.
            {"lifecycle", "add after submit",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_add(submitted, g, 0, p, H, 8, 0); }, OMPBATCH_ERR_BAD_STATE,
             "reset it"},
            {"lifecycle", "forget with copies pending",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, g, 0, p, H, 8, 0);
                 return ompbatch_batch_forget_memory(b);
             },
             OMPBATCH_ERR_BAD_STATE, "not yet submitted"},
            {"lifecycle", "forget with copies pending, all naming another GPU",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, other_dev.ptr, 1, p, H, 8, 0);
                 return ompbatch_batch_forget_memory(b);
             },
             OMPBATCH_ERR_BAD_STATE, "holds 1 copies not yet submitted"},
            {"lifecycle", "forget after a failed submit across GPUs",
             [](Env &e) { USE_ENV(e);
                 ompbatch_batch_reset(b);
                 ompbatch_batch_add(b, other_dev.ptr, 1, p, H, 8, 0);
                 ompbatch_batch_add(b, g + 8192, 0, p + 8192, H, 8, 0);
                 ompbatch_batch_add(b, p + 16384, 0, p, H, 64, 0);
                 int submitted_status = ompbatch_batch_submit(b);
                 int status = ompbatch_batch_forget_memory(b);
                 ompbatch_batch_reset(b);
                 return submitted_status == OMPBATCH_ERR_INVALID_ARGUMENT ? status : -1;
             },
             OMPBATCH_OK, nullptr},
            {"lifecycle", "add to a destroyed batch",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_add(dead, g, 0, p, H, 8, 0); }, OMPBATCH_ERR_BAD_STATE,
             "was destroyed"},
            {"lifecycle", "submit a destroyed batch", [](Env &e) { USE_ENV(e); return ompbatch_batch_submit(dead); },
             OMPBATCH_ERR_BAD_STATE, "was destroyed"},
            {"lifecycle", "wait for a destroyed batch", [](Env &e) { USE_ENV(e); return ompbatch_batch_wait(dead); },
             OMPBATCH_ERR_BAD_STATE, "was destroyed"},
            {"lifecycle", "stats of a destroyed batch",
             [](Env &e) { USE_ENV(e); return ompbatch_batch_get_stats(dead, &stats); }, OMPBATCH_ERR_BAD_STATE,
             "was destroyed"},
            {"lifecycle", "destroy twice", [](Env &e) { USE_ENV(e); return ompbatch_batch_destroy(dead); },
             OMPBATCH_ERR_BAD_STATE, "was destroyed"},
            {"lifecycle", "submit a non-batch", [](Env &e) { USE_ENV(e); return ompbatch_batch_submit(not_batch); },
             OMPBATCH_ERR_INVALID_ARGUMENT, "is not a batch"},
            {"lifecycle", "destroy a non-batch", [](Env &e) { USE_ENV(e); return ompbatch_batch_destroy(not_batch); },
             OMPBATCH_ERR_INVALID_ARGUMENT, "is not a batch"},
        };
        // Map types: every bit no OpenMP runtime uses, alone.
        for (int bit = 0; bit < 64; bit++) {
            uint64_t map_type = 1ULL << bit;
            if (map_type & OMPBATCH_MAP_KNOWN_BITS)
                continue;
            cases.push_back({"map_type", "an unknown bit",
                             [map_type](Env &e) {
                                 USE_ENV(e);
                                 ompbatch_batch_reset(b);
                                 return ompbatch_batch_add(b, g, 0, p, H, 8, map_type);
                             },
                             OMPBATCH_ERR_INVALID_ARGUMENT, "has bits no OpenMP map type uses"});
        }
        return cases;
    }();
    return all;
}

// "null_add_dst", "map_type_an_unknown_bit_9": the case's category and what it does, as a
// test name (repeated names numbered).
std::vector<std::string> CaseNames()
{
    std::vector<std::string> names;
    std::map<std::string, int> seen;
    for (const Case &c : AllCases()) {
        std::string name = std::string(c.category) + "_" + c.what;
        for (char &ch : name)
            if (!std::isalnum(static_cast<unsigned char>(ch)))
                ch = '_';
        int n = seen[name]++;
        names.push_back(n == 0 ? name : name + "_" + std::to_string(n + 1));
    }
    return names;
}

class Hostile : public FakeDriver, public ::testing::WithParamInterface<size_t> {
};

// Each case expects its status and a message naming the argument or copy; it writes nothing,
// hands out no batch when refused, and the batches it was thrown at still move bytes exactly.
TEST_P(Hostile, IsRefusedOrHarmlessAndTheBatchesStillWork)
{
    const Case &c = AllCases()[GetParam()];
    Env e;
    e.Init();
    if (HasFatalFailure())
        return;
    unsigned char *g = e.g, *p = e.p;
    std::vector<unsigned char> dev_before(g, g + e.dev.bytes);
    int status = c.call(e);
    EXPECT_EQ(c.expect, status) << ompbatch_err_name(status) << ": " << ompbatch_last_error();
    if (c.needle != nullptr) {
        EXPECT_NE(nullptr, std::strstr(ompbatch_last_error(), c.needle)) << ompbatch_last_error();
    }
    if (c.expect != OMPBATCH_OK) {
        EXPECT_EQ(nullptr, e.out) << "a refused create handed out a batch";
    }
    if (e.out != nullptr)
        ompbatch_batch_destroy(e.out);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(e.b));
    // Nothing was written: the device slab (the one good submit, waited for before the
    // snapshot, copied to its first 64 bytes) and the host buffer are as they were.
    EXPECT_EQ(0, std::memcmp(g, dev_before.data(), e.dev.bytes)) << "a refused copy wrote";
    for (unsigned char byte : e.host)
        ASSERT_EQ(0x5A, byte) << "a refused copy wrote to host memory";
    // Every batch thrown at still works.
    for (ompbatch_batch *batch : {e.b, e.submitted}) {
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch));
        e.pinned.fill(reinterpret_cast<uintptr_t>(batch));
        for (int i = 0; i < 8; i++)
            ASSERT_EQ(OMPBATCH_OK,
                      ompbatch_batch_add(batch, g + 1024 + i * 256, 0, p + i * 256, H, 100, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch));
        for (int i = 0; i < 8; i++)
            EXPECT_EQ(0, std::memcmp(g + 1024 + i * 256, p + i * 256, 100)) << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Every, Hostile, ::testing::Range<size_t>(0, AllCases().size()),
                         [](const ::testing::TestParamInfo<size_t> &info) {
                             return CaseNames()[info.param];
                         });

// The reliability figure of docs/testing.md: the cases by category.
TEST(HostileCount, EveryCategoryHasCases)
{
    std::map<std::string, int> tally;
    for (const Case &c : AllCases())
        tally[c.category]++;
    std::string line;
    size_t total = 0;
    for (const auto &t : tally) {
        line += (line.empty() ? "" : ", ") + t.first + " " + std::to_string(t.second);
        total += static_cast<size_t>(t.second);
    }
    std::printf("hostile inputs: %s = %zu, each refused or harmless\n", line.c_str(), total);
    EXPECT_GE(tally.size(), 8u);
    EXPECT_GE(total, 90u);
}

} // namespace
