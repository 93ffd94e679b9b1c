// The public API on the host backend (no CUDA driver in these processes): argument checks,
// error messages, statistics, and byte-exact copies on random data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ompbatch.h"
#include "tests/support/rect_reference.h"
#include "tests/support/test_random.h"

extern "C" {
#include "plugin/core/alloc.h"
#include "plugin/plan/plan_cache.h"
#include "plugin/cuda/omp_runtime.h"
}

namespace {


const int H = OMPBATCH_HOST_DEVICE;

bool message_has(const char *needle)
{
    return std::strstr(ompbatch_last_error(), needle) != nullptr;
}

struct Batch {
    ompbatch_batch *b = nullptr;
    explicit Batch(int device = H, const ompbatch_batch_options *o = nullptr)
    {
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_create(&b, device, nullptr, o))
            << ompbatch_last_error();
    }
    ~Batch() { EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(b)); }
    ompbatch_stats stats() const
    {
        ompbatch_stats s;
        std::memset(&s, 0xff, sizeof(s));
        s.struct_size = sizeof(s);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_get_stats(b, &s));
        return s;
    }
};

TEST(Status, EveryCodeHasANameAndAMessage)
{
#define CHECK_STATUS_(name, value, msg)                                                          \
    EXPECT_STREQ("OMPBATCH_ERR_" #name, ompbatch_err_name(value));                              \
    EXPECT_STREQ(msg, ompbatch_strerror(value));
    OMPBATCH_STATUS_LIST(CHECK_STATUS_)
#undef CHECK_STATUS_
    EXPECT_STREQ("OMPBATCH_ERR_UNKNOWN", ompbatch_err_name(-999));
    EXPECT_STREQ("unknown status", ompbatch_strerror(42));
}

TEST(Version, RuntimeMatchesHeader)
{
    EXPECT_EQ(OMPBATCH_VERSION, ompbatch_version());
}

TEST(DriverInfo, ReportsWhyThereIsNoDriver)
{
    ompbatch_driver_info info;
    std::memset(&info, 0xff, sizeof(info));
    info.struct_size = sizeof(info);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_get_driver_info(&info));
    EXPECT_EQ(0, info.driver_loaded);
    EXPECT_EQ(0, info.device_count);
    EXPECT_EQ(OMPBATCH_FORM_NONE, info.batch_form);
    ASSERT_NE(nullptr, info.reason);
    EXPECT_GT(std::strlen(info.reason), 0u);
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_get_driver_info(nullptr));
    info.struct_size = 4;
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_get_driver_info(&info));
    EXPECT_TRUE(message_has("struct_size"));
}

TEST(BatchCreate, RejectsBadArgumentsNamingThem)
{
    ompbatch_batch *b = reinterpret_cast<ompbatch_batch *>(0x1);
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_create(nullptr, H, nullptr, nullptr));
    EXPECT_TRUE(message_has("out"));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE, ompbatch_batch_create(&b, 7, nullptr, nullptr));
    EXPECT_EQ(nullptr, b);
    EXPECT_TRUE(message_has("device_num 7"));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE, ompbatch_batch_create(&b, -5, nullptr, nullptr));
    int fake_stream;
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_create(&b, H, &fake_stream, nullptr));
    EXPECT_TRUE(message_has("stream"));
    ompbatch_batch_options o{};
    o.struct_size = 3;
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_create(&b, H, nullptr, &o));
    EXPECT_TRUE(message_has("struct_size"));
    // A newer header's larger options are accepted while its extra fields stay zero.
    struct {
        ompbatch_batch_options known;
        uint64_t future;
    } newer{};
    newer.known.struct_size = sizeof(newer);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&b, H, nullptr, &newer.known));
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(b));
    newer.future = 1;
    EXPECT_EQ(OMPBATCH_ERR_UNSUPPORTED, ompbatch_batch_create(&b, H, nullptr, &newer.known));
    EXPECT_TRUE(message_has("knows only"));
    o.struct_size = sizeof(o);
    o.prefer_overlap = 2;
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_create(&b, H, nullptr, &o));
    EXPECT_TRUE(message_has("prefer_overlap"));
}

TEST(BatchCreate, WithoutADriverOrRuntimeTheHostIsAlsoDeviceZero)
{
    // omp_get_initial_device() equals the device count, 0 here.
    Batch batch(0);
    EXPECT_NE(nullptr, batch.b);
}

TEST(BatchAdd, RejectsBadCopiesNamingTheCopyIndex)
{
    Batch batch;
    char a[16], b[16];
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, b, H, a, H, 16, 0));
    EXPECT_EQ(1u, batch.stats().copies_added);
    EXPECT_EQ(0u, batch.stats().copies_planned);
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_add(batch.b, nullptr, H, a, H, 4, 0));
    EXPECT_TRUE(message_has("copy 1: dst is NULL")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_add(batch.b, b, H, nullptr, H, 4, 0));
    EXPECT_TRUE(message_has("copy 1: src is NULL"));
    void *high = reinterpret_cast<void *>(UINTPTR_MAX - 8);
    EXPECT_EQ(OMPBATCH_ERR_OVERFLOW, ompbatch_batch_add(batch.b, high, H, a, H, 16, 0));
    EXPECT_TRUE(message_has("copy 1: dst"));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE, ompbatch_batch_add(batch.b, b, 3, a, H, 4, 0));
    EXPECT_TRUE(message_has("copy 1: dst_device_num 3"));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE, ompbatch_batch_add(batch.b, b, H, a, 9, 4, 0));
    EXPECT_TRUE(message_has("src_device_num 9"));
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_add(nullptr, b, H, a, H, 4, 0));
    // Rejected copies were not added; a zero-byte copy with NULL pointers is fine.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, nullptr, H, nullptr, H, 0, 0));
    EXPECT_TRUE(message_has("batch is NULL")) << "a success must not erase the last failure";
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    ompbatch_stats s = batch.stats();
    EXPECT_EQ(2u, s.copies_added);
    EXPECT_EQ(1u, s.copies_zero);
}

// Every map-type bit an OpenMP runtime uses is accepted; any other bit is refused, naming the
// copy and the stray bits, and the batch stays usable.
TEST(BatchAdd, MapTypesWithUnknownBitsAreRefused)
{
    std::vector<unsigned char> src = random_bytes(4096, 61), dst(4096, 0xA5);
    Batch batch;
    size_t added = 0;
    for (int bit = 0; bit < 64; bit++) {
        uint64_t map_type = 1ULL << bit;
        int status = ompbatch_batch_add(batch.b, &dst[added * 64], H, &src[added * 64], H, 32,
                                        map_type);
        if (map_type & OMPBATCH_MAP_KNOWN_BITS) {
            EXPECT_EQ(OMPBATCH_OK, status) << "bit " << bit << ": " << ompbatch_last_error();
            added++;
        } else {
            EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, status) << "bit " << bit;
            EXPECT_TRUE(message_has(("copy " + std::to_string(added) + ": map_type").c_str()))
                << ompbatch_last_error();
            EXPECT_TRUE(message_has("has bits no OpenMP map type uses")) << ompbatch_last_error();
        }
    }
    EXPECT_EQ(31u, added) << "bits 0-13, 44 and 48-63";
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    for (size_t i = 0; i < added; i++)
        EXPECT_EQ(0, std::memcmp(&dst[i * 64], &src[i * 64], 32)) << i;
    // A mapped transfer checks them too.
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_batch_add_mapped(batch.b, src.data(), 8, OMPBATCH_MAP_TO | (1ULL << 20)));
}

// A destroyed batch is dead, not a crash: every batch function names it, a second destroy
// too, and a pointer that never was a batch is refused (for the last 256 destroys; older
// pointers are freed memory, as with free).
TEST(BatchLifecycle, UseAfterDestroyAndDoubleDestroyAreErrors)
{
    unsigned char a[64] = {1}, b[64] = {0};
    ompbatch_batch *batch = nullptr;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&batch, H, nullptr, nullptr));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch, b, H, a, H, 64, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(batch));
    ompbatch_stats stats;
    std::memset(&stats, 0, sizeof(stats));
    stats.struct_size = sizeof(stats);
    char text[64];
    const int results[] = {
        ompbatch_batch_add(batch, b, H, a, H, 64, 0),
        ompbatch_batch_submit(batch),
        ompbatch_batch_wait(batch),
        ompbatch_batch_reset(batch),
        ompbatch_batch_forget_memory(batch),
        ompbatch_batch_get_stats(batch, &stats),
        ompbatch_batch_describe(batch, text, sizeof(text), nullptr),
        ompbatch_batch_destroy(batch),
    };
    for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
        EXPECT_EQ(OMPBATCH_ERR_BAD_STATE, results[i]) << "call " << i;
    EXPECT_TRUE(message_has("was destroyed")) << ompbatch_last_error();
    EXPECT_EQ(0, b[0]) << "a destroyed batch copied";
    // Something that never was a batch.
    alignas(16) unsigned char junk[4096];
    std::memset(junk, 0x5A, sizeof(junk));
    ompbatch_batch *fake_batch = reinterpret_cast<ompbatch_batch *>(junk);
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(fake_batch));
    EXPECT_TRUE(message_has("is not a batch")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_destroy(fake_batch));
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(nullptr)) << "like free(NULL)";
}

// The window of 256 destroyed batches is the program's own: the batches the one-shot calls
// make and destroy inside the library do not push a program's destroyed batch out of it (its
// struct freed, a new batch could be given the same address, and a stale pointer would then
// reach that live batch).
TEST(BatchLifecycle, TheLibrarysOwnBatchesDoNotUseUpTheDestroyedWindow)
{
    std::vector<unsigned char> src = random_bytes(256, 17), dst(256, 0xA5);
    ompbatch_batch *dead = nullptr;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&dead, H, nullptr, nullptr));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(dead));
    void *dsts[] = {dst.data()};
    const void *srcs[] = {src.data()};
    size_t length[] = {256};
    // Exactly as many as the window holds: the last one would free the dead batch's struct,
    // and the next batch created would be given that memory back first.
    for (int i = 0; i < 256; i++)
        ASSERT_EQ(OMPBATCH_OK, ompbatch_target_memcpy_batch(dsts, srcs, length, nullptr,
                                                            nullptr, 1, H, H))
            << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), 256));
    ompbatch_batch *live[4] = {};
    for (auto &b : live) {
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&b, H, nullptr, nullptr));
        EXPECT_NE(dead, b) << "a live batch at a destroyed batch's address";
    }
    EXPECT_EQ(OMPBATCH_ERR_BAD_STATE, ompbatch_batch_submit(dead));
    EXPECT_TRUE(message_has("was destroyed")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_BAD_STATE, ompbatch_batch_destroy(dead));
    for (auto *b : live)
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(b));
}

TEST(BatchLifecycle, AddingAfterSubmitNeedsAReset)
{
    Batch batch;
    char a[8] = "abcdefg", b[8];
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, b, H, a, H, 8, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(OMPBATCH_ERR_BAD_STATE, ompbatch_batch_add(batch.b, b, H, a, H, 8, 0));
    EXPECT_TRUE(message_has("reset"));
    EXPECT_EQ(OMPBATCH_ERR_BAD_STATE, ompbatch_batch_submit(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    EXPECT_EQ(0u, batch.stats().copies_added);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, b, H, a, H, 8, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(0, std::memcmp(a, b, 8));
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(nullptr));
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_wait(nullptr));
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_reset(nullptr));
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_submit(nullptr));
}

// Scattered pieces of random sizes between two arenas, with poisoned destinations.
TEST(HostBackend, ScatteredCopiesAreByteExact)
{
    const size_t arena = 1 << 20;
    std::vector<unsigned char> src = random_bytes(arena, 1);
    std::vector<unsigned char> dst(arena, 0xA5), expect(arena, 0xA5);
    TestRng rng(test_seed() + 2);
    Batch batch;
    size_t at = 0, count = 0;
    while (at + 5000 < arena) {
        size_t bytes = 1 + rng() % 4000;
        size_t from = rng() % (arena - bytes);
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, &dst[at], H, &src[from], H, bytes, 0));
        std::memcpy(&expect[at], &src[from], bytes);
        at += bytes + rng() % 64;
        count++;
    }
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
    EXPECT_TRUE(dst == expect);
    ompbatch_stats s = batch.stats();
    EXPECT_EQ(count, s.copies_added);
    EXPECT_EQ(static_cast<unsigned>(OMPBATCH_PATH_HOST), s.paths);
    EXPECT_EQ(s.copies_planned, s.copies_done);
    EXPECT_EQ(0u, s.driver_calls);
}

TEST(HostBackend, ContiguousPiecesMergeAndStayExact)
{
    std::vector<unsigned char> src = random_bytes(64 * 256, 3);
    std::vector<unsigned char> dst(64 * 256, 0x5A);
    Batch batch;
    for (int i = 63; i >= 0; i--)  // reverse order: merging sorts by address
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_batch_add(batch.b, &dst[i * 256], H, &src[i * 256], H, 256, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(dst == src);
    ompbatch_stats s = batch.stats();
    EXPECT_EQ(64u, s.copies_added);
    EXPECT_EQ(1u, s.copies_planned);
    EXPECT_EQ(64u * 256u, s.bytes);
}

// Overlapping copies must behave as if performed one after another in the order added.
TEST(HostBackend, DependentCopiesFollowAddOrder)
{
    for (int round = 0; round < 20; round++) {
        std::vector<unsigned char> mem = random_bytes(4096, 100 + round);
        std::vector<unsigned char> expect = mem;
        TestRng rng(test_seed() + 200 + round);
        Batch batch;
        for (int i = 0; i < 40; i++) {
            size_t bytes = 1 + rng() % 200;
            size_t from = rng() % (4096 - bytes), to = rng() % (4096 - bytes);
            if (from < to + bytes && to < from + bytes)
                continue;  // a single copy may not overlap itself
            ASSERT_EQ(OMPBATCH_OK,
                      ompbatch_batch_add(batch.b, &mem[to], H, &mem[from], H, bytes, 0));
            std::memmove(&expect[to], &expect[from], bytes);
        }
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        ASSERT_TRUE(mem == expect) << "round " << round;
        EXPECT_GT(batch.stats().sub_batches, 1u);
    }
}

TEST(HostBackend, SelfOverlappingCopyIsRejectedAtSubmit)
{
    char buf[64] = {};
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, buf + 8, H, buf, H, 16, 0));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_submit(batch.b));
    EXPECT_TRUE(message_has("copy 0:"));
    EXPECT_EQ(0u, batch.stats().copies_done);
}

TEST(Describe, PrintsThePlanAndReportsTheLength)
{
    Batch batch;
    char a[64], b[64];
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, b, H, a, H, 32, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, b + 32, H, a + 32, H, 32, 0));
    size_t needed = 0;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_describe(batch.b, nullptr, 0, &needed));
    std::string text(needed + 1, '\0');
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_describe(batch.b, &text[0], text.size(), nullptr));
    EXPECT_NE(std::string::npos, text.find("2 copies added"));
    EXPECT_NE(std::string::npos, text.find("1 planned"));
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_describe(batch.b, nullptr, 5, nullptr));
}

TEST(Stats, RejectsBadStructSize)
{
    Batch batch;
    ompbatch_stats s{};
    s.struct_size = 2;
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_get_stats(batch.b, &s));
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_get_stats(batch.b, nullptr));
    // A newer, larger struct gets zeros past the fields this library knows.
    struct {
        ompbatch_stats known;
        uint64_t future[2];
    } newer;
    std::memset(&newer, 0xff, sizeof(newer));
    newer.known.struct_size = sizeof(newer);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_get_stats(batch.b, &newer.known));
    EXPECT_EQ(sizeof(newer), newer.known.struct_size);
    EXPECT_EQ(0u, newer.known.copies_added);
    EXPECT_EQ(0u, newer.future[0]);
    EXPECT_EQ(0u, newer.future[1]);
    // An older, smaller struct gets only its own fields.
    struct {
        size_t struct_size;
        uint64_t copies_added;
        uint64_t guard;
    } old = {sizeof(size_t) + sizeof(uint64_t), 99, 0x1234};
    ASSERT_EQ(OMPBATCH_OK,
              ompbatch_batch_get_stats(batch.b, reinterpret_cast<ompbatch_stats *>(&old)));
    EXPECT_EQ(0u, old.copies_added);
    EXPECT_EQ(0x1234u, old.guard);
}

TEST(OneShot, CopiesWithOffsetsAndSkipsZeroLengths)
{
    std::vector<unsigned char> s0 = random_bytes(300, 7), s1 = random_bytes(300, 8);
    std::vector<unsigned char> d0(300, 0xA5), d1(300, 0xA5);
    void *dst[] = {d0.data(), d1.data(), nullptr};
    const void *src[] = {s0.data(), s1.data(), nullptr};
    size_t length[] = {100, 150, 0};
    size_t dst_off[] = {10, 0, 0};
    size_t src_off[] = {0, 140, 0};
    ASSERT_EQ(OMPBATCH_OK, ompbatch_target_memcpy_batch(dst, src, length, dst_off, src_off, 3,
                                                        H, H))
        << ompbatch_last_error();
    EXPECT_EQ(0, std::memcmp(&d0[10], &s0[0], 100));
    EXPECT_EQ(0xA5, d0[9]);
    EXPECT_EQ(0xA5, d0[110]);
    EXPECT_EQ(0, std::memcmp(&d1[0], &s1[140], 150));
    EXPECT_EQ(0xA5, d1[150]);
    EXPECT_EQ(OMPBATCH_OK,
              ompbatch_target_memcpy_batch(nullptr, nullptr, nullptr, nullptr, nullptr, 0, H, H));
}

TEST(OneShot, ReportsTheFailingCopyAndBadArrays)
{
    unsigned char a[8], b[8];
    void *dst[] = {b, nullptr};
    const void *src[] = {a, a};
    size_t length[] = {8, 8};
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER,
              ompbatch_target_memcpy_batch(dst, src, length, nullptr, nullptr, 2, H, H));
    EXPECT_TRUE(message_has("copy 1: dst is NULL")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER,
              ompbatch_target_memcpy_batch(dst, nullptr, length, nullptr, nullptr, 2, H, H));
    EXPECT_TRUE(message_has("src is NULL"));
    size_t huge[] = {SIZE_MAX - 2, 0};
    size_t one[] = {8, 0};
    EXPECT_EQ(OMPBATCH_ERR_OVERFLOW,
              ompbatch_target_memcpy_batch(dst, src, one, huge, nullptr, 1, H, H));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE,
              ompbatch_target_memcpy_batch(dst, src, one, nullptr, nullptr, 1, 4, H));
}

// ---- rectangular copies ----------------------------------------------------------------------

int add_rect(ompbatch_batch *b, unsigned char *dst, const unsigned char *src, const RectShape &r)
{
    return ompbatch_batch_add_rect(b, dst, H, src, H, r.element, r.dims, r.volume.data(),
                                   r.dst_off.data(), r.src_off.data(), r.dst_dim.data(),
                                   r.src_dim.data(), 0);
}

TEST(Rect, RandomRectanglesAreExactAndLeaveTheRestAlone)
{
    TestRng rng(test_seed() ^ 0x7ec7);
    for (int trial = 0; trial < 400; trial++) {
        // Three rectangles in one batch, then one by the one-shot call.
        RectShape r[3] = {random_rect(rng), random_rect(rng), random_rect(rng)};
        std::vector<unsigned char> src[3], dst[3], want[3];
        Batch batch;
        for (int k = 0; k < 3; k++) {
            src[k] = random_bytes(r[k].src_bytes(), 100 * trial + k);
            dst[k] = random_bytes(r[k].dst_bytes(), 100 * trial + k + 50);
            want[k] = dst[k];
            rect_reference(r[k], want[k].data(), src[k].data());
            ASSERT_EQ(OMPBATCH_OK, add_rect(batch.b, dst[k].data(), src[k].data(), r[k]))
                << ompbatch_last_error();
        }
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        for (int k = 0; k < 3; k++)
            ASSERT_EQ(want[k], dst[k]) << "trial " << trial << " rect " << k;
        std::vector<unsigned char> one = random_bytes(r[0].dst_bytes(), 100 * trial + 99);
        std::vector<unsigned char> one_want = one;
        rect_reference(r[0], one_want.data(), src[0].data());
        ASSERT_EQ(OMPBATCH_OK,
                  ompbatch_target_memcpy_rect(one.data(), src[0].data(), r[0].element, r[0].dims,
                                              r[0].volume.data(), r[0].dst_off.data(),
                                              r[0].src_off.data(), r[0].dst_dim.data(),
                                              r[0].src_dim.data(), H, H))
            << ompbatch_last_error();
        ASSERT_EQ(one_want, one) << "trial " << trial << " one-shot";
    }
}

TEST(Rect, RunsWidenOverDimensionsCopiedWhole)
{
    // 4 x 5 x 6 of 8-byte elements of 10 x 5 x 6 arrays: the inner two dimensions whole on
    // both sides, so the four outer indices follow one another: one run; then the innermost
    // only partly, so one run per (i, j).
    std::vector<unsigned char> src = random_bytes(10 * 5 * 6 * 8, 1), dst(10 * 5 * 6 * 8, 0xA5);
    size_t vol[] = {4, 5, 6}, off0[] = {0, 0, 0}, soff[] = {3, 0, 0}, dim[] = {10, 5, 6};
    Batch whole;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add_rect(whole.b, dst.data(), H, src.data(), H, 8, 3,
                                                   vol, off0, soff, dim, dim, 0));
    EXPECT_EQ(1u, whole.stats().copies_added); // rows 3..6 of src follow one another
    size_t part[] = {4, 5, 5};
    Batch rows;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add_rect(rows.b, dst.data(), H, src.data(), H, 8, 3,
                                                   part, off0, soff, dim, dim, 0));
    EXPECT_EQ(20u, rows.stats().copies_added);
    size_t none[] = {4, 0, 6};
    Batch empty;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add_rect(empty.b, dst.data(), H, src.data(), H, 8, 3,
                                                   none, off0, soff, dim, dim, 0));
    EXPECT_EQ(0u, empty.stats().copies_added);
}

TEST(Rect, BadRectanglesAreRefusedNamingTheRectangleAndTheDimension)
{
    unsigned char a[512], b[512];
    size_t vol[] = {2, 4}, off[] = {0, 6}, zero[] = {0, 0}, dim[] = {4, 8}, nodim[] = {4, 0};
    Batch batch;
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, b, H, a, H, 8, 0));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_add_rect(batch.b, b, H, a, H, 4, 2,
                                                                     vol, zero, off, dim, dim, 0));
    EXPECT_TRUE(message_has("rect at copy 1: dimension 1: src offset 6 + volume 4 exceeds the "
                            "src dimension 8"))
        << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_add_rect(batch.b, b, H, a, H, 4, 2,
                                                                     vol, off, zero, dim, dim, 0));
    EXPECT_TRUE(message_has("dimension 1: dst offset 6")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_batch_add_rect(batch.b, b, H, a, H, 0, 2, vol, zero, zero, dim, dim, 0));
    EXPECT_TRUE(message_has("element_size is 0"));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_batch_add_rect(batch.b, b, H, a, H, 4, 0, vol, zero, zero, dim, dim, 0));
    EXPECT_TRUE(message_has("num_dims 0 is not from 1 to 16"));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_add_rect(batch.b, b, H, a, H, 4,
                                                                     OMPBATCH_RECT_MAX_DIMS + 1,
                                                                     vol, zero, zero, dim, dim, 0));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT, ompbatch_batch_add_rect(batch.b, b, H, a, H, 4, 2,
                                                                     vol, zero, zero, nodim, dim,
                                                                     0));
    EXPECT_TRUE(message_has("dimension 1: the dst dimension is 0")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_add_rect(batch.b, b, H, a, H, 4, 2, vol,
                                                                 zero, nullptr, dim, dim, 0));
    EXPECT_TRUE(message_has("src_offsets is NULL"));
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_add_rect(batch.b, nullptr, H, a, H, 4, 2,
                                                                 vol, zero, zero, dim, dim, 0));
    EXPECT_TRUE(message_has("rect at copy 1: dst is NULL")) << ompbatch_last_error();
    size_t huge[] = {SIZE_MAX / 2, 8};
    size_t huge_vol[] = {1, 1};
    EXPECT_EQ(OMPBATCH_ERR_OVERFLOW, ompbatch_batch_add_rect(batch.b, b, H, a, H, 4, 2, huge_vol,
                                                             zero, zero, huge, dim, 0));
    EXPECT_TRUE(message_has("the dst array")) << ompbatch_last_error();
    // 2^25 runs of one byte, inside arrays that fit: refused before the batch grows.
    size_t wide[] = {size_t(1) << 13, size_t(1) << 12, 2}, wide_vol[] = {size_t(1) << 13,
                                                                         size_t(1) << 12, 1};
    size_t zero3[] = {0, 0, 0};
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_batch_add_rect(batch.b, b, H, a, H, 1, 3, wide_vol, zero3, zero3, wide,
                                      wide, 0));
    EXPECT_TRUE(message_has("more than 16777216 contiguous runs (dimensions 0 to 1)"))
        << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_batch_add_rect(batch.b, b, H, a, H, 4, 2, vol, zero, zero, dim, dim,
                                      uint64_t(1) << 30));
    EXPECT_TRUE(message_has("rect at copy 1: copy 1: map_type")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE, ompbatch_batch_add_rect(batch.b, b, 7, a, H, 4, 2, vol,
                                                                   zero, zero, dim, dim, 0));
    // Nothing of the refused rectangles was added.
    EXPECT_EQ(1u, batch.stats().copies_added);
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER, ompbatch_batch_add_rect(nullptr, b, H, a, H, 4, 2, vol,
                                                                 zero, zero, dim, dim, 0));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(OMPBATCH_ERR_BAD_STATE, ompbatch_batch_add_rect(batch.b, b, H, a, H, 4, 2, vol,
                                                              zero, zero, dim, dim, 0));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE,
              ompbatch_target_memcpy_rect(b, a, 4, 2, vol, zero, zero, dim, dim, H, 9));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_target_memcpy_rect(b, a, 4, 2, vol, zero, off, dim, dim, H, H));
    EXPECT_TRUE(message_has("rect at copy 0: dimension 1: src offset")) << ompbatch_last_error();
}

TEST(Threads, BatchesOnDifferentThreadsAreIndependent)
{
    std::vector<std::thread> threads;
    std::vector<int> ok(8, 0);
    for (int t = 0; t < 8; t++) {
        threads.emplace_back([t, &ok] {
            std::vector<unsigned char> src = random_bytes(1 << 16, 500 + t);
            std::vector<unsigned char> dst(1 << 16, 0xA5);
            int good = 1;
            for (int round = 0; round < 50 && good; round++) {
                ompbatch_batch *b = nullptr;
                good &= ompbatch_batch_create(&b, H, nullptr, nullptr) == OMPBATCH_OK;
                for (int i = 0; i < 64 && good; i += 2)  // every other piece: no merging
                    good &= ompbatch_batch_add(b, &dst[i * 1024], H, &src[i * 1024], H, 1024,
                                               0) == OMPBATCH_OK;
                good &= ompbatch_batch_submit(b) == OMPBATCH_OK;
                good &= ompbatch_batch_destroy(b) == OMPBATCH_OK;
            }
            for (int i = 0; i < 64; i++)
                for (int k = 0; k < 1024; k++)
                    good &= dst[i * 1024 + k] == (i % 2 ? 0xA5 : src[i * 1024 + k]);
            ok[t] = good;
        });
    }
    for (auto &th : threads)
        th.join();
    for (int t = 0; t < 8; t++)
        EXPECT_EQ(1, ok[t]) << "thread " << t;
}

// Whatever a refill does -- the same copies, one different at the start, middle or end, one
// more, one fewer, a description half way, an allocation failure on its first add -- the bytes
// are right and the plan is reused exactly when the copies are the same.
TEST(Refill, ComparedAsAddedWhateverChanges)
{
    const size_t n = 50, piece = 96;
    std::vector<unsigned char> src = random_bytes(n * 256 + 512, 71);
    Batch batch;
    uint64_t salt = 72;
    // differ: the index of the copy whose destination and source move by one byte.
    auto fill = [&](size_t count, size_t differ, std::vector<unsigned char> &dst) -> int {
        for (size_t i = 0; i < count; i++) {
            size_t shift = i == differ ? 1 : 0;
            int status = ompbatch_batch_add(batch.b, &dst[i * 256 + shift], H,
                                            &src[i * 256 + shift], H, piece, 0);
            if (status != OMPBATCH_OK)
                return status;
        }
        return OMPBATCH_OK;
    };
    // Same buffers every round (a refill names the same addresses), fresh bytes.
    std::vector<unsigned char> dst(src.size());
    auto round = [&](size_t count, size_t differ) {
        std::vector<unsigned char> fresh = random_bytes(src.size(), salt++);
        std::copy(fresh.begin(), fresh.end(), src.begin());
        std::fill(dst.begin(), dst.end(), 0xA5);
        EXPECT_EQ(OMPBATCH_OK, fill(count, differ, dst)) << ompbatch_last_error();
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        std::vector<unsigned char> expect(src.size(), 0xA5);
        for (size_t i = 0; i < count; i++) {
            size_t shift = i == differ ? 1 : 0;
            std::memcpy(&expect[i * 256 + shift], &src[i * 256 + shift], piece);
        }
        EXPECT_EQ(expect, dst) << count << " copies, copy " << differ << " differing";
        ompbatch_stats s = batch.stats();
        EXPECT_EQ(count, s.copies_added);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
        return s.plan_reused;
    };
    const size_t none = SIZE_MAX;
    EXPECT_EQ(0u, round(n, none));
    EXPECT_EQ(1u, round(n, none));
    for (size_t differ : {size_t{0}, n / 2, n - 1}) {
        EXPECT_EQ(0u, round(n, differ)) << "copy " << differ << " differs";
        EXPECT_EQ(1u, round(n, differ)) << "the same again";
        EXPECT_EQ(1u, round(n, none)) << "back to the first copies, whose plan was kept";
        EXPECT_EQ(1u, round(n, none));
    }
    EXPECT_EQ(0u, round(n + 1, none)) << "one copy more";
    EXPECT_EQ(1u, round(n, none)) << "one copy fewer: the kept plan of n";
    EXPECT_EQ(1u, round(n, none));
    // A description in the middle of a refill that matches so far plans what was added.
    {
        ASSERT_EQ(OMPBATCH_OK, fill(n / 2, none, dst));
        size_t needed = 0;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_describe(batch.b, nullptr, 0, &needed));
        std::string text(needed + 1, '\0');
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_describe(batch.b, &text[0], text.size(), nullptr));
        EXPECT_NE(std::string::npos, text.find(std::to_string(n / 2) + " copies")) << text;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    }
    EXPECT_EQ(0u, round(n, none)) << "after a description";
    EXPECT_EQ(1u, round(n, none));
    // A batch planned once has handed its keys' memory to the plan: the first add of its
    // refill allocates, and when that fails the add fails cleanly and the next one carries on.
    {
        Batch fresh;
        std::fill(dst.begin(), dst.end(), 0xA5);
        for (size_t i = 0; i < n; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(fresh.b, &dst[i * 256], H, &src[i * 256], H,
                                                      piece, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(fresh.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(fresh.b));
        std::vector<unsigned char> fresh_bytes = random_bytes(src.size(), salt++);
        std::copy(fresh_bytes.begin(), fresh_bytes.end(), src.begin());
        std::fill(dst.begin(), dst.end(), 0xA5);
        ob_alloc_fail_after_for_testing(0);
        EXPECT_EQ(OMPBATCH_ERR_NO_MEMORY,
                  ompbatch_batch_add(fresh.b, &dst[1], H, &src[1], H, piece, 0));
        ob_alloc_fail_after_for_testing(-1);
        EXPECT_TRUE(message_has("cannot grow the batch")) << ompbatch_last_error();
        EXPECT_EQ(0u, fresh.stats().copies_added);
        for (size_t i = 0; i < n; i++)
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add(fresh.b, &dst[i * 256 + (i >= n / 2)], H,
                                                      &src[i * 256 + (i >= n / 2)], H, piece, 0));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(fresh.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(fresh.b));
        EXPECT_EQ(0u, fresh.stats().plan_reused);
        EXPECT_EQ(n, fresh.stats().copies_added);
        for (size_t i = 0; i < n; i++) {
            size_t from = i * 256 + (i >= n / 2 ? 1 : 0);
            ASSERT_EQ(0, std::memcmp(&dst[from], &src[from], piece)) << i;
        }
    }
    EXPECT_EQ(1u, round(n, none)) << "another batch's refills change nothing here";
    // A refill that matches the plan's copies for a while and then departs writes the copies
    // matched so far out (they were only compared): when that allocation fails, the departing
    // add fails cleanly, the matched copies stay, and a later add carries on.
    {
        Batch fresh;
        auto fill_from = [&](size_t from, size_t to, size_t shift_from) -> int {
            for (size_t i = from; i < to; i++) {
                size_t at = i * 256 + (i >= shift_from ? 1 : 0);
                int status = ompbatch_batch_add(fresh.b, &dst[at], H, &src[at], H, piece, 0);
                if (status != OMPBATCH_OK)
                    return status;
            }
            return OMPBATCH_OK;
        };
        ASSERT_EQ(OMPBATCH_OK, fill_from(0, n, n));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(fresh.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(fresh.b));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(fresh.b));
        std::vector<unsigned char> fresh_bytes = random_bytes(src.size(), salt++);
        std::copy(fresh_bytes.begin(), fresh_bytes.end(), src.begin());
        std::fill(dst.begin(), dst.end(), 0xA5);
        const size_t depart = n / 2;
        ASSERT_EQ(OMPBATCH_OK, fill_from(0, depart, n)) << "the same copies as planned";
        ob_alloc_fail_after_for_testing(0);
        EXPECT_EQ(OMPBATCH_ERR_NO_MEMORY, fill_from(depart, depart + 1, depart));
        ob_alloc_fail_after_for_testing(-1);
        EXPECT_TRUE(message_has("cannot grow the batch")) << ompbatch_last_error();
        EXPECT_EQ(depart, fresh.stats().copies_added);
        ASSERT_EQ(OMPBATCH_OK, fill_from(depart, n, depart)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(fresh.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(fresh.b));
        EXPECT_EQ(0u, fresh.stats().plan_reused);
        EXPECT_EQ(n, fresh.stats().copies_done);
        std::vector<unsigned char> expect(src.size(), 0xA5);
        for (size_t i = 0; i < n; i++) {
            size_t at = i * 256 + (i >= depart ? 1 : 0);
            std::memcpy(&expect[at], &src[at], piece);
        }
        EXPECT_EQ(expect, dst);
        // The next refill of those copies reuses the new plan.
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(fresh.b));
        ASSERT_EQ(OMPBATCH_OK, fill_from(0, n, depart));
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(fresh.b)) << ompbatch_last_error();
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(fresh.b));
        EXPECT_EQ(1u, fresh.stats().plan_reused);
    }
}

// A batch keeps the plans of earlier copy sets (plan_cache.h): submits that cycle through up
// to nine sets of 32 copies or more (the batch's own plan and eight kept) reuse every plan
// after the first round; ten sets in turn always evict the one coming next. Sets of 4 to 31
// copies have OB_PLAN_CACHE_SMALL_SLOTS slots of their own: one more than that in turn are all
// reused, two more evict each other (and make the batch keep few plans until one is found
// again), and none of that evicts a large set's plan; a single copy is not kept. Forgetting
// memory drops every kept plan. Each round's bytes are checked.
TEST(Refill, PlansOfEarlierCopySetsAreKept)
{
    const size_t piece = 40, stride = 64, window = 64 * stride + 64;
    const size_t small = OB_PLAN_CACHE_SMALL_SLOTS;
    // Sets 0-19 large, 20 on small (one more than the slots: the batch holds its own plan),
    // then as many again one past that, and three more.
    const size_t evicting = 21 + small, sets = evicting + small + 2 + 3;
    std::vector<unsigned char> src = random_bytes(sets * 64 * stride + 64, 91);
    std::vector<unsigned char> dst(src.size(), 0xA5), expect(dst.size(), 0xA5);
    uint64_t salt = 92;
    Batch batch;
    // Set k: `count` copies shifted by k bytes inside its own window, so that no two sets share
    // a key. Each run writes fresh bytes into the set's sources and poisons its destinations,
    // and compares the window; the whole destination is compared at the end, so that a copy
    // outside its window is caught too.
    auto run = [&](size_t set, size_t count) {
        size_t base = set * 64 * stride;
        std::vector<unsigned char> fresh = random_bytes(window, salt++);
        std::copy(fresh.begin(), fresh.end(), src.begin() + (long)base);
        std::fill(dst.begin() + (long)base, dst.begin() + (long)(base + window), 0xA5);
        std::fill(expect.begin() + (long)base, expect.begin() + (long)(base + window), 0xA5);
        for (size_t i = 0; i < count; i++) {
            size_t at = base + i * stride + set % 7;
            EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_add(batch.b, &dst[at], H, &src[at], H, piece, 0))
                << ompbatch_last_error();
            std::memcpy(&expect[at], &src[at], piece);
        }
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b)) << ompbatch_last_error();
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch.b));
        EXPECT_EQ(0, std::memcmp(&expect[base], &dst[base], window)) << "set " << set;
        uint64_t reused = batch.stats().plan_reused;
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
        return reused;
    };
    for (int round = 0; round < 3; round++)
        for (size_t set = 0; set < 9; set++)
            EXPECT_EQ(round > 0 ? 1u : 0u, run(set, 64)) << "nine sets, round " << round;
    for (int round = 0; round < 2; round++)
        for (size_t set = 10; set < 20; set++)
            EXPECT_EQ(0u, run(set, 64)) << "ten new sets evict each other, set " << set;
    // Eight large sets kept (the batch's own plan is then the last small set's).
    for (size_t set = 0; set < 9; set++)
        run(set, 64);
    for (int round = 0; round < 3; round++)
        for (size_t set = 20; set < 21 + small; set++)
            EXPECT_EQ(round > 0 ? 1u : 0u, run(set, 4 + set % 28))
                << small + 1 << " small sets, round " << round << ", set " << set;
    for (size_t set = 1; set < 9; set++)
        EXPECT_EQ(1u, run(set, 64)) << "large set " << set << " kept beside the small ones";
    // One more small set than that in turn evict each other, until OB_PLAN_CACHE_GIVE_UP misses
    // in a row make the batch keep only a few plans (and evict no more).
    for (size_t round = 0; round < 2; round++)
        for (size_t set = evicting; set < evicting + small + 2; set++) {
            uint64_t reused = run(set, 31);
            if (round * (small + 2) + (set - evicting) < OB_PLAN_CACHE_GIVE_UP) {
                EXPECT_EQ(0u, reused) << small + 2 << " small sets evict each other, set " << set;
            }
        }
    // Three sets in turn after that are kept again once one of them is found.
    const size_t three = evicting + small + 2;
    for (size_t round = 0; round < OB_PLAN_CACHE_SPARSE_KEEP + 3; round++)
        for (size_t set = three; set < three + 3; set++)
            run(set, 10);
    for (size_t set = three; set < three + 3; set++)
        EXPECT_EQ(1u, run(set, 10)) << "three small sets found again, set " << set;
    // One copy: reused only as the batch's own last plan, never kept.
    EXPECT_EQ(0u, run(9, 1));
    EXPECT_EQ(1u, run(9, 1)) << "the batch's own plan";
    EXPECT_EQ(0u, run(10, 1));
    EXPECT_EQ(0u, run(9, 1)) << "a single copy is not kept";
    for (size_t set = 0; set < 3; set++)
        run(set, 64);
    run(3, 5);
    EXPECT_EQ(1u, run(0, 64)) << "kept";
    EXPECT_EQ(1u, run(3, 5)) << "kept";
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_forget_memory(batch.b));
    for (size_t set = 1; set < 3; set++)
        EXPECT_EQ(0u, run(set, 64)) << "forgotten, set " << set;
    EXPECT_EQ(0u, run(3, 5)) << "forgotten, small set";
    EXPECT_TRUE(expect == dst) << "a copy wrote outside its set's window";
}

// Every allocation of a host batch's life fails in turn: each run either completes with the
// right bytes or stops with OMPBATCH_ERR_NO_MEMORY and a message, and never crashes.
TEST(OutOfMemory, EveryAllocationFailureIsReportedCleanly)
{
    std::vector<unsigned char> src = random_bytes(1 << 16, 31);
    int failures = 0;
    for (long allowed = 0; allowed < 200; allowed++) {
        std::vector<unsigned char> dst(1 << 16, 0xA5);
        ob_alloc_fail_after_for_testing(allowed);
        ompbatch_batch *b = nullptr;
        int status = ompbatch_batch_create(&b, H, nullptr, nullptr);
        for (int i = 0; i < 300 && status == OMPBATCH_OK; i++)  // overlapping: two levels
            status = ompbatch_batch_add(b, &dst[i * 128], H, i % 2 ? &dst[(i - 1) * 128] : &src[i * 200],
                                        H, 100, 0);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_submit(b);
        ob_alloc_fail_after_for_testing(-1);
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(b));
        if (status == OMPBATCH_OK) {
            for (int i = 0; i < 300; i += 2)
                ASSERT_EQ(0, std::memcmp(&dst[i * 128], &src[i * 200], 100)) << i;
            break;
        }
        EXPECT_EQ(OMPBATCH_ERR_NO_MEMORY, status) << "allocation " << allowed;
        EXPECT_NE(std::string::npos, std::string(ompbatch_last_error()).find("cannot"))
            << ompbatch_last_error();
        failures++;
    }
    EXPECT_GE(failures, 4);  // create, add growth, plan, dependency sweep
}

// ---- mapped transfers through a stand-in OpenMP runtime (host offload: no CUDA) ----------

struct FakeRuntime {
    static std::vector<unsigned char> *host;
    static std::vector<unsigned char> *shadow;
    static void *mapped(const void *p, int dev)
    {
        auto *c = static_cast<const unsigned char *>(p);
        if (dev != 0 || c < host->data() || c >= host->data() + host->size() / 2)
            return nullptr;  // only the first half of `host` is mapped, on device 0
        return shadow->data() + (c - host->data());
    }
    static int initial() { return 2; }
    static int count() { return 2; }
};
std::vector<unsigned char> *FakeRuntime::host;
std::vector<unsigned char> *FakeRuntime::shadow;

class Mapped : public ::testing::Test {
protected:
    std::vector<unsigned char> host = random_bytes(8192, 11);
    std::vector<unsigned char> shadow = std::vector<unsigned char>(8192, 0xA5);
    ob_omp_runtime runtime{1, FakeRuntime::mapped, FakeRuntime::initial, FakeRuntime::count};
    void SetUp() override
    {
        FakeRuntime::host = &host;
        FakeRuntime::shadow = &shadow;
        ob_omp_runtime_set_for_testing(&runtime);
    }
    void TearDown() override { ob_omp_runtime_set_for_testing(nullptr); }
};

TEST_F(Mapped, ToAndFromMoveBytesBetweenHostAndTheMappedCopy)
{
    Batch batch(0);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_add_mapped(batch.b, &host[100], 1000, OMPBATCH_MAP_TO))
        << ompbatch_last_error();
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(0, std::memcmp(&shadow[100], &host[100], 1000));
    EXPECT_EQ(0xA5, shadow[99]);
    EXPECT_EQ(0xA5, shadow[1100]);
    std::vector<unsigned char> fresh = random_bytes(500, 12);
    std::memcpy(&shadow[2000], fresh.data(), 500);
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch.b));
    ASSERT_EQ(OMPBATCH_OK,
              ompbatch_batch_add_mapped(batch.b, &host[2000], 500,
                                        OMPBATCH_MAP_FROM | OMPBATCH_MAP_ALWAYS));
    ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch.b));
    EXPECT_EQ(0, std::memcmp(&host[2000], fresh.data(), 500));
}

TEST_F(Mapped, HostAndInitialDeviceNumbersAreTheHost)
{
    Batch batch(2);  // omp_get_initial_device()
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE,
              ompbatch_batch_add_mapped(batch.b, &host[0], 8, OMPBATCH_MAP_TO));
    EXPECT_TRUE(message_has("host"));
}

TEST_F(Mapped, UnmappedAndPartlyMappedRangesAreRejected)
{
    Batch batch(0);
    EXPECT_EQ(OMPBATCH_ERR_NOT_MAPPED,
              ompbatch_batch_add_mapped(batch.b, &host[5000], 16, OMPBATCH_MAP_TO));
    EXPECT_TRUE(message_has("not mapped on device 0")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_NOT_MAPPED,
              ompbatch_batch_add_mapped(batch.b, &host[4000], 200, OMPBATCH_MAP_TO));
    EXPECT_TRUE(message_has("partly mapped")) << ompbatch_last_error();
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_batch_add_mapped(batch.b, &host[0], 8,
                                        OMPBATCH_MAP_TO | OMPBATCH_MAP_FROM));
    EXPECT_TRUE(message_has("exactly one"));
    EXPECT_EQ(OMPBATCH_ERR_INVALID_ARGUMENT,
              ompbatch_batch_add_mapped(batch.b, &host[0], 8, OMPBATCH_MAP_DELETE));
    EXPECT_EQ(OMPBATCH_ERR_NULL_POINTER,
              ompbatch_batch_add_mapped(batch.b, nullptr, 8, OMPBATCH_MAP_TO));
    EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_add_mapped(batch.b, nullptr, 0, OMPBATCH_MAP_TO));
}

TEST(MappedWithoutRuntime, SaysThatNoOffloadRuntimeIsLoaded)
{
    Batch batch;
    char x[8];
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE,
              ompbatch_batch_add_mapped(batch.b, x, 8, OMPBATCH_MAP_TO));
    ompbatch_batch *dev = nullptr;
    // Without a driver or a runtime there is no device to make a batch for.
    EXPECT_EQ(OMPBATCH_ERR_INVALID_DEVICE, ompbatch_batch_create(&dev, 1, nullptr, nullptr));
}

}  // namespace
