// GPU tests: every transfer ompbatch makes on a real CUDA device is checked byte for byte against
// a reference model that applies the same copies one after another (sequential semantics), on
// fresh random data with poisoned destinations.
//
// Without a usable GPU every test skips ("no CUDA driver: <reason>"); with OMPBATCH_REQUIRE_GPU=1
// (bazel test --config=gpu, and the GPU pack's runner) a missing GPU is a failure instead.
//
// Most suites run once per batch form, chosen with OMPBATCH_BATCH_FORM and a driver reload
// (ob_driver_reload_for_testing): V12080/..., V13000/... and PerCopy/... . Buffers never outlive
// a test, so none is alive across a reload. Random data comes from OMPBATCH_TEST_SEED (printed
// at start-up and in every failure) and the test's name: rerun one test with
// OMPBATCH_TEST_SEED=<seed> --gtest_filter=<name> to get the same bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <ostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ompbatch.h"
#include "tests/harness/harness.h"
#include "tests/support/rect_reference.h"

extern "C" {
#include "plugin/core/config.h"
#include "plugin/cuda/driver.h"
}

namespace {

constexpr int kDevice = 0;                     // every test runs on CUDA device 0
constexpr int kHost = OMPBATCH_HOST_DEVICE;
constexpr unsigned char kPoison = 0xA5;
constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

bool RequireGpu()
{
    const char *value = std::getenv("OMPBATCH_REQUIRE_GPU");
    return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

std::string SizeName(size_t bytes)
{
    if (bytes >= kMiB && bytes % kMiB == 0)
        return std::to_string(bytes / kMiB) + "MiB";
    if (bytes >= kKiB && bytes % kKiB == 0)
        return std::to_string(bytes / kKiB) + "KiB";
    return std::to_string(bytes) + "B";
}

// ---- batch forms ----------------------------------------------------------------------------

enum class Form { k12080, k13000, kPerCopy };

const char *FormEnv(Form form)
{
    switch (form) {
    case Form::k12080:
        return "12080";
    case Form::k13000:
        return "13000";
    case Form::kPerCopy:
        return "percopy";
    }
    return "?";
}

ompbatch_batch_form FormValue(Form form)
{
    switch (form) {
    case Form::k12080:
        return OMPBATCH_FORM_V12080;
    case Form::k13000:
        return OMPBATCH_FORM_V13000;
    case Form::kPerCopy:
        return OMPBATCH_FORM_PER_COPY;
    }
    return OMPBATCH_FORM_NONE;
}

const char *FormName(int form)
{
    switch (form) {
    case OMPBATCH_FORM_V12080:
        return "cuMemcpyBatchAsync v12080";
    case OMPBATCH_FORM_V13000:
        return "cuMemcpyBatchAsync v13000";
    case OMPBATCH_FORM_PER_COPY:
        return "per-copy cuMemcpyAsync";
    case OMPBATCH_FORM_NONE:
        return "none";
    }
    return "unknown";
}

std::string PathNames(unsigned paths)
{
    std::string out;
    auto add = [&](unsigned bit, const char *name) {
        if (paths & bit)
            out += (out.empty() ? "" : "|") + std::string(name);
    };
    add(OMPBATCH_PATH_BATCH, "BATCH");
    add(OMPBATCH_PATH_PER_COPY, "PER_COPY");
    add(OMPBATCH_PATH_HOST, "HOST");
    add(OMPBATCH_PATH_KERNEL, "KERNEL");
    add(OMPBATCH_PATH_STAGED, "STAGED");
    return out.empty() ? "NONE" : out;
}

std::string StatsText(const ompbatch_stats &s)
{
    std::ostringstream out;
    out << "stats: added " << s.copies_added << ", zero " << s.copies_zero << ", planned "
        << s.copies_planned << ", staged " << s.staged_copies << ", kernels "
        << s.kernel_launches << ", refused " << s.staging_refused << ", attr_groups "
        << s.attr_groups << ", sub_batches "
        << s.sub_batches << ", driver_calls " << s.driver_calls << ", bytes " << s.bytes
        << ", done " << s.copies_done << ", paths " << PathNames(s.paths);
    return out.str();
}

// The first lines of a plan description: enough to see routes and steps without 1024 copies.
std::string PlanExcerpt(const std::string &plan, int max_lines = 40)
{
    std::string out;
    int lines = 0;
    size_t at = 0;
    while (at < plan.size() && lines < max_lines) {
        size_t end = plan.find('\n', at);
        if (end == std::string::npos)
            end = plan.size();
        out += "    " + plan.substr(at, end - at) + "\n";
        at = end + 1;
        lines++;
    }
    if (at < plan.size())
        out += "    ...\n";
    return out;
}

::testing::AssertionResult LibraryFailure(const std::string &call, int status)
{
    // Read the message first: any later ompbatch call on this thread clears it.
    std::string message = ompbatch_last_error();
    return ::testing::AssertionFailure()
           << call << " returned " << ompbatch_err_name(status) << " (" << status
           << "): " << (message.empty() ? "<no message>" : message);
}

::testing::AssertionResult HarnessFailure(const std::string &call, int status)
{
    return ::testing::AssertionFailure() << call << " returned " << status << ": "
                                         << harness_last_error();
}

// ---- buffers ----------------------------------------------------------------------------------

// A harness buffer owned by one test; freed when it goes out of scope.
class Buffer {
public:
    explicit Buffer(std::string name) : name_(std::move(name)) { std::memset(&b_, 0, sizeof(b_)); }
    ~Buffer()
    {
        if (b_.ptr != nullptr) {
            int status = harness_free(&b_);
            EXPECT_EQ(status, 0) << "freeing " << name_ << ": " << harness_last_error();
        }
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;

    ::testing::AssertionResult Alloc(harness_mem_kind kind, size_t bytes)
    {
        int status = harness_alloc(&b_, kind, kDevice, bytes);
        if (status != 0)
            return HarnessFailure("harness_alloc(" + name_ + ", " + harness_mem_kind_name(kind) +
                                      ", " + std::to_string(bytes) + " bytes)",
                                  status);
        return ::testing::AssertionSuccess();
    }

    char *At(size_t offset) const { return static_cast<char *>(b_.ptr) + offset; }
    // The device number to give ompbatch for this buffer: device memory is the device's,
    // every host kind (managed included) is named by the host.
    int DeviceNum() const { return b_.kind == HARNESS_MEM_DEVICE ? kDevice : kHost; }
    size_t Bytes() const { return b_.bytes; }
    harness_mem_kind Kind() const { return b_.kind; }
    const harness_buffer *Raw() const { return &b_; }
    const std::string &Name() const { return name_; }
    std::string Describe() const
    {
        return name_ + " (" + harness_mem_kind_name(b_.kind) + ", " + std::to_string(b_.bytes) +
               " bytes)";
    }

private:
    std::string name_;
    harness_buffer b_;
};

struct BatchDeleter {
    void operator()(ompbatch_batch *batch) const { (void)ompbatch_batch_destroy(batch); }
};
using BatchPtr = std::unique_ptr<ompbatch_batch, BatchDeleter>;

// A stream made with cuStreamCreate through the driver table, as a user would make it.
class UserStream {
public:
    UserStream() = default;
    ~UserStream()
    {
        int status = harness_stream_destroy(kDevice, stream_);
        EXPECT_EQ(status, 0) << "destroying the user stream: " << harness_last_error();
    }
    UserStream(const UserStream &) = delete;
    UserStream &operator=(const UserStream &) = delete;

    ::testing::AssertionResult Create(unsigned int flags)
    {
        int status = harness_stream_create(kDevice, flags, &stream_);
        if (status != 0)
            return HarnessFailure("harness_stream_create", status);
        return ::testing::AssertionSuccess();
    }
    CUstream Get() const { return stream_; }

private:
    CUstream stream_ = nullptr;
};

// ---- the scenario: real buffers, their reference images and the copies ------------------------

struct Op {
    Buffer *dst;
    size_t dst_off;
    Buffer *src;
    size_t src_off;
    size_t bytes;
};

struct Outcome {
    ompbatch_stats stats;
    std::string plan;
};

// Holds what every buffer must contain. Buffers are filled with random bytes or poison; copies are
// submitted to the library in one batch and applied to the images one after another, in the order
// they were added: the semantics the library promises.
class Scenario {
public:
    Scenario(harness_rng *rng, uint64_t seed) : rng_(rng), seed_(seed) {}

    ::testing::AssertionResult FillRandom(Buffer &buffer)
    {
        std::vector<uint8_t> &image = images_[&buffer];
        image.resize(buffer.Bytes());
        harness_fill_random(rng_, image.data(), image.size());
        int status = harness_write(buffer.Raw(), 0, image.data(), image.size());
        if (status != 0)
            return HarnessFailure("harness_write(" + buffer.Name() + ")", status);
        return ::testing::AssertionSuccess();
    }

    ::testing::AssertionResult Poison(Buffer &buffer)
    {
        images_[&buffer].assign(buffer.Bytes(), kPoison);
        int status = harness_poison(buffer.Raw(), kPoison);
        if (status != 0)
            return HarnessFailure("harness_poison(" + buffer.Name() + ")", status);
        return ::testing::AssertionSuccess();
    }

    void Add(Buffer &dst, size_t dst_off, Buffer &src, size_t src_off, size_t bytes)
    {
        ops_.push_back(Op{&dst, dst_off, &src, src_off, bytes});
    }

    const std::vector<Op> &Ops() const { return ops_; }
    void ClearOps() { ops_.clear(); }

    // Applies the pending copies to the images, in order.
    void ApplyToModel()
    {
        for (const Op &op : ops_) {
            if (op.bytes == 0)
                continue;
            std::vector<uint8_t> &dst = images_.at(op.dst);
            const std::vector<uint8_t> &src = images_.at(op.src);
            std::memmove(dst.data() + op.dst_off, src.data() + op.src_off, op.bytes);
        }
        applied_.insert(applied_.end(), ops_.begin(), ops_.end());
    }

    // Creates a batch on device 0, adds the pending copies in order, submits, waits, reads the
    // stats and the plan, destroys the batch and applies the copies to the model.
    ::testing::AssertionResult Run(Outcome *outcome, const ompbatch_batch_options *options = nullptr,
                                   CUstream stream = nullptr)
    {
        ompbatch_batch *raw = nullptr;
        int status = ompbatch_batch_create(&raw, kDevice, stream, options);
        if (status != OMPBATCH_OK)
            return LibraryFailure("ompbatch_batch_create", status);
        BatchPtr batch(raw);
        auto result = RunOn(batch.get(), outcome);
        if (!result)
            return result;
        status = ompbatch_batch_destroy(batch.release());
        if (status != OMPBATCH_OK)
            return LibraryFailure("ompbatch_batch_destroy", status);
        return ::testing::AssertionSuccess();
    }

    // The same on an existing, open batch (left submitted and waited for).
    ::testing::AssertionResult RunOn(ompbatch_batch *batch, Outcome *outcome)
    {
        for (size_t i = 0; i < ops_.size(); i++) {
            const Op &op = ops_[i];
            int status = ompbatch_batch_add(batch, op.dst->At(op.dst_off), op.dst->DeviceNum(),
                                            op.src->At(op.src_off), op.src->DeviceNum(), op.bytes,
                                            0);
            if (status != OMPBATCH_OK)
                return LibraryFailure("ompbatch_batch_add of copy " + std::to_string(i) + " (" +
                                          op.src->Describe() + " -> " + op.dst->Describe() + ")",
                                      status);
        }
        int status = ompbatch_batch_submit(batch);
        if (status != OMPBATCH_OK) {
            auto failure = LibraryFailure("ompbatch_batch_submit", status);
            return failure << "\n  plan:\n" << PlanExcerpt(Describe(batch));
        }
        status = ompbatch_batch_wait(batch);
        if (status != OMPBATCH_OK) {
            auto failure = LibraryFailure("ompbatch_batch_wait", status);
            return failure << "\n  plan:\n" << PlanExcerpt(Describe(batch));
        }
        std::memset(&outcome->stats, 0, sizeof(outcome->stats));
        outcome->stats.struct_size = sizeof(outcome->stats);
        status = ompbatch_batch_get_stats(batch, &outcome->stats);
        if (status != OMPBATCH_OK)
            return LibraryFailure("ompbatch_batch_get_stats", status);
        outcome->plan = Describe(batch);
        ApplyToModel();
        return ::testing::AssertionSuccess();
    }

    // Compares a buffer with its image; on a difference, says where it is relative to the
    // copies (inside which copy's destination, or outside all of them: a stray write).
    ::testing::AssertionResult Matches(const Buffer &buffer, const Outcome *outcome = nullptr)
    {
        const std::vector<uint8_t> &image = images_.at(&buffer);
        size_t first = 0;
        int status = harness_compare_buffer(image.data(), buffer.Raw(), image.size(), &first);
        if (status == 0)
            return ::testing::AssertionSuccess();
        if (status < 0)
            return HarnessFailure("harness_compare_buffer(" + buffer.Name() + ")", status);
        std::string difference = harness_last_error();
        auto failure = ::testing::AssertionFailure();
        failure << buffer.Describe() << " differs from sequential semantics: " << difference
                << "\n  where: " << Locate(buffer, first)
                << "\n  reproduce with OMPBATCH_TEST_SEED=" << seed_;
        if (outcome != nullptr)
            failure << "\n  " << StatsText(outcome->stats) << "\n  plan:\n"
                    << PlanExcerpt(outcome->plan);
        return failure;
    }

private:
    static std::string Describe(ompbatch_batch *batch)
    {
        size_t needed = 0;
        if (ompbatch_batch_describe(batch, nullptr, 0, &needed) != OMPBATCH_OK)
            return std::string("<describe failed: ") + ompbatch_last_error() + ">";
        std::string text(needed + 1, '\0');
        if (ompbatch_batch_describe(batch, &text[0], text.size(), nullptr) != OMPBATCH_OK)
            return std::string("<describe failed: ") + ompbatch_last_error() + ">";
        text.resize(needed);
        return text;
    }

    std::string Locate(const Buffer &buffer, size_t offset) const
    {
        // The last copy writing the byte decides it under sequential semantics.
        for (size_t i = applied_.size(); i-- > 0;) {
            const Op &op = applied_[i];
            if (op.dst == &buffer && offset >= op.dst_off && offset - op.dst_off < op.bytes) {
                std::ostringstream out;
                out << "byte " << (offset - op.dst_off) << " of copy #" << i << " ("
                    << op.bytes << " bytes from " << op.src->Name() << "+" << op.src_off
                    << " to " << buffer.Name() << "+" << op.dst_off << ")";
                return out.str();
            }
        }
        return "outside every copy's destination: a stray write, an overrun or lost poison";
    }

    harness_rng *rng_;
    uint64_t seed_;
    std::map<const Buffer *, std::vector<uint8_t>> images_;
    std::vector<Op> ops_;
    std::vector<Op> applied_;
};

// ---- layouts ------------------------------------------------------------------------------------

struct Piece {
    size_t src;
    size_t dst;
    size_t bytes;
};

struct Layout {
    std::vector<Piece> pieces;
    size_t src_bytes = 0;
    size_t dst_bytes = 0;
};

size_t Gap(harness_rng *rng)
{
    return 1 + static_cast<size_t>(harness_rng_below(rng, 64));
}

std::vector<size_t> Shuffled(harness_rng *rng, size_t n)
{
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n; i > 1; i--)
        std::swap(order[i - 1], order[harness_rng_below(rng, i)]);
    return order;
}

// Pieces separated by random gaps on both sides and scattered in a random order on the
// destination side: no two pieces are contiguous on either side, so nothing can be merged, and
// every gap byte of the destination must keep its poison.
Layout Scattered(harness_rng *rng, const std::vector<size_t> &sizes)
{
    Layout layout;
    layout.pieces.resize(sizes.size());
    size_t at = Gap(rng);
    for (size_t i = 0; i < sizes.size(); i++) {
        layout.pieces[i].bytes = sizes[i];
        layout.pieces[i].src = at;
        at += sizes[i] + Gap(rng);
    }
    layout.src_bytes = at;
    at = Gap(rng);
    for (size_t slot : Shuffled(rng, sizes.size())) {
        layout.pieces[slot].dst = at;
        at += sizes[slot] + Gap(rng);
    }
    layout.dst_bytes = at;
    return layout;
}

Layout Scattered(harness_rng *rng, size_t count, size_t bytes)
{
    return Scattered(rng, std::vector<size_t>(count, bytes));
}

// Pieces contiguous on both sides within each run; runs are separated by a gap on both sides.
Layout Contiguous(size_t count, size_t bytes, size_t runs)
{
    Layout layout;
    size_t per_run = (count + runs - 1) / runs;
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        if (i > 0 && i % per_run == 0)
            at += 3 * bytes + 5; // a gap: the next run is not contiguous with this one
        layout.pieces.push_back(Piece{at, at, bytes});
        at += bytes;
    }
    layout.src_bytes = layout.dst_bytes = at;
    return layout;
}

// ---- fixtures -------------------------------------------------------------------------------------

// Skips (or, with OMPBATCH_REQUIRE_GPU=1, fails) without a GPU; seeds the test's generator.
class Gpu : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (!harness_gpu_available()) {
            if (RequireGpu()) {
                FAIL() << "OMPBATCH_REQUIRE_GPU is set, so a missing GPU is a failure: no CUDA "
                          "driver: "
                       << harness_skip_reason();
            }
            GTEST_SKIP() << "no CUDA driver: " << harness_skip_reason();
        }
        // The suites below check the direct strategy's routes and stats; GpuStrategy sets
        // the strategy of each of its batches itself.
        ASSERT_EQ(setenv("OMPBATCH_STRATEGY", "direct", 1), 0);
        ob_config_reload();
        const ::testing::TestInfo *info = ::testing::UnitTest::GetInstance()->current_test_info();
        name_ = std::string(info->test_suite_name()) + "." + info->name();
        seed_ = harness_seed();
        harness_rng_init(&rng_, seed_, name_.c_str());
        trace_.reset(new ::testing::ScopedTrace(
            __FILE__, __LINE__, "OMPBATCH_TEST_SEED=" + std::to_string(seed_) + " " + name_));
    }

    void TearDown() override { trace_.reset(); }

    // Makes the library use `form`, reloading the driver when it uses another one. Skips when
    // the driver does not serve the form (a 12.8 driver has no v13000).
    void UseForm(Form form)
    {
        const ob_driver *driver = ob_driver_get();
        if (driver->loaded && driver->forced && driver->form == FormValue(form))
            return;
        ASSERT_EQ(setenv("OMPBATCH_BATCH_FORM", FormEnv(form), 1), 0);
        ob_driver_reload_for_testing();
        driver = ob_driver_get();
        ASSERT_TRUE(driver->loaded) << "the driver did not load again after "
                                       "ob_driver_reload_for_testing: "
                                    << driver->reason;
        ASSERT_GE(driver->device_count, 1);
        if (driver->form != FormValue(form) || !driver->forced) {
            GTEST_SKIP() << "driver " << driver->version << " does not serve "
                         << FormName(FormValue(form)) << " (OMPBATCH_BATCH_FORM=" << FormEnv(form)
                         << " gave " << FormName(driver->form) << ")";
        }
    }

    std::string name_;
    uint64_t seed_ = 0;
    harness_rng rng_{};
    std::unique_ptr<::testing::ScopedTrace> trace_;
};

// A GPU test parameterized by a case that carries its batch form.
template <typename Case>
class GpuFormTest : public Gpu, public ::testing::WithParamInterface<Case> {
protected:
    void SetUp() override
    {
        Gpu::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        UseForm(this->GetParam().form);
    }
};

template <typename Case>
std::string CaseName(const ::testing::TestParamInfo<Case> &info)
{
    return info.param.Name();
}

// Instantiates a suite once per batch form; the form is the prefix of the suite's name.
#define OMPBATCH_INSTANTIATE_FOR_EVERY_FORM(Suite, Case, cases)                                   \
    INSTANTIATE_TEST_SUITE_P(V12080, Suite, ::testing::ValuesIn(cases(Form::k12080)),             \
                             CaseName<Case>);                                                     \
    INSTANTIATE_TEST_SUITE_P(V13000, Suite, ::testing::ValuesIn(cases(Form::k13000)),             \
                             CaseName<Case>);                                                     \
    INSTANTIATE_TEST_SUITE_P(PerCopy, Suite, ::testing::ValuesIn(cases(Form::kPerCopy)),          \
                             CaseName<Case>)

enum class Direction { kH2D, kD2H, kD2D, kH2H };

const char *DirectionName(Direction direction)
{
    switch (direction) {
    case Direction::kH2D:
        return "H2D";
    case Direction::kD2H:
        return "D2H";
    case Direction::kD2D:
        return "D2D";
    case Direction::kH2H:
        return "H2H";
    }
    return "?";
}

harness_mem_kind SourceKind(Direction direction, harness_mem_kind host)
{
    return direction == Direction::kH2D || direction == Direction::kH2H ? host
                                                                         : HARNESS_MEM_DEVICE;
}

harness_mem_kind DestinationKind(Direction direction, harness_mem_kind host)
{
    return direction == Direction::kD2H || direction == Direction::kH2H ? host
                                                                         : HARNESS_MEM_DEVICE;
}

const harness_mem_kind kHostKinds[] = {HARNESS_MEM_PAGEABLE, HARNESS_MEM_PINNED,
                                       HARNESS_MEM_MANAGED};

// Every direction with every host memory kind; D2D once (it has no host side).
template <typename Make>
void ForEachDirectionAndKind(Make make)
{
    for (Direction direction : {Direction::kH2D, Direction::kD2H, Direction::kH2H})
        for (harness_mem_kind host : kHostKinds)
            make(direction, host);
    make(Direction::kD2D, HARNESS_MEM_DEVICE);
}

std::string DirectionKindName(Direction direction, harness_mem_kind host)
{
    std::string name = DirectionName(direction);
    if (direction != Direction::kD2D)
        name += std::string("_") + harness_mem_kind_name(host);
    return name;
}

// Which path a group of copies must take, where the library promises one.
enum class ExpectedPath { kHost, kDevice };

// Host-to-host copies between pageable or pinned buffers run as a memcpy on the host backend.
// Managed memory goes to the driver, except for a lone copy: the planner does not classify a
// plan of one copy (plugin/plan/plan.c, plan_lone_copy) and memcpys any lone host-to-host copy.
ExpectedPath PathFor(Direction direction, harness_mem_kind host, size_t count)
{
    if (direction != Direction::kH2H)
        return ExpectedPath::kDevice;
    // A lone copy of a device batch always goes to the driver (plugin/plan/plan.c): its pointers
    // are not classified, so host memcpy would not be known to be safe.
    if (count == 1)
        return ExpectedPath::kDevice;
    return host == HARNESS_MEM_MANAGED ? ExpectedPath::kDevice : ExpectedPath::kHost;
}

// ---- the driver ---------------------------------------------------------------------------------

TEST_F(Gpu, DriverReportsLoadedWithAtLeastOneDevice)
{
    ompbatch_driver_info info;
    std::memset(&info, 0, sizeof(info));
    info.struct_size = sizeof(info);
    int status = ompbatch_get_driver_info(&info);
    ASSERT_EQ(status, OMPBATCH_OK) << LibraryFailure("ompbatch_get_driver_info", status).message();
    EXPECT_EQ(info.driver_loaded, 1) << info.reason;
    EXPECT_GE(info.device_count, 1);
    EXPECT_STREQ(info.reason, "");
    EXPECT_NE(info.batch_form, OMPBATCH_FORM_NONE);
    std::printf("driver %s: version %d, %d device(s), %s%s\n", info.library, info.driver_version,
                info.device_count, FormName(info.batch_form), info.forced ? " (forced)" : "");
    RecordProperty("driver_version", info.driver_version);
    RecordProperty("device_count", info.device_count);
}

TEST_F(Gpu, DriverOfCuda13ServesBothBatchForms)
{
    const ob_driver *driver = ob_driver_get();
    if (driver->version < 13000) {
        GTEST_SKIP() << "driver " << driver->version << " is older than 13.0";
    }
    EXPECT_NE(driver->fn.cuMemcpyBatchAsync_v12080, nullptr)
        << "cuGetProcAddress(cuMemcpyBatchAsync, 12080) found nothing";
    EXPECT_NE(driver->fn.cuMemcpyBatchAsync_v13000, nullptr)
        << "cuGetProcAddress(cuMemcpyBatchAsync, 13000) found nothing";
}

// A host batch copies with memcpy: on a thread with no context current, pageable and pinned
// host memory still copy byte for byte, and device memory is refused (memcpy would read or
// write it on the CPU), naming the copy, with nothing written.
TEST_F(Gpu, AHostBatchCopiesHostMemoryAndRefusesDeviceMemory)
{
    Buffer pinned("pinned"), pageable("pageable"), device("device");
    ASSERT_TRUE(pinned.Alloc(HARNESS_MEM_PINNED, 64 * kKiB));
    ASSERT_TRUE(pageable.Alloc(HARNESS_MEM_PAGEABLE, 64 * kKiB));
    ASSERT_TRUE(device.Alloc(HARNESS_MEM_DEVICE, 64 * kKiB));
    std::vector<uint8_t> data(64 * kKiB);
    harness_fill_random(&rng_, data.data(), data.size());
    ASSERT_EQ(harness_write(pinned.Raw(), 0, data.data(), data.size()), 0) << harness_last_error();
    ASSERT_EQ(harness_poison(pageable.Raw(), kPoison), 0) << harness_last_error();
    ASSERT_EQ(harness_poison(device.Raw(), kPoison), 0) << harness_last_error();
    std::string failure;
    std::thread worker([&] {
        ompbatch_batch *batch = nullptr;
        int status = ompbatch_batch_create(&batch, kHost, nullptr, nullptr);
        for (size_t i = 0; i < 16 && status == OMPBATCH_OK; i++)
            status = ompbatch_batch_add(batch, pageable.At(i * 4096), kHost, pinned.At(i * 4096),
                                        kHost, 1000 + i, 0);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_submit(batch);
        if (status == OMPBATCH_OK)
            status = ompbatch_batch_wait(batch);
        if (status != OMPBATCH_OK)
            failure = std::string("host copies: ") + ompbatch_last_error();
        if (status == OMPBATCH_OK && (status = ompbatch_batch_reset(batch)) == OMPBATCH_OK) {
            ompbatch_batch_add(batch, pageable.At(0), kHost, pinned.At(0), kHost, 64, 0);
            ompbatch_batch_add(batch, device.At(0), kHost, pinned.At(0), kHost, 64, 0);
            status = ompbatch_batch_submit(batch);
            if (status != OMPBATCH_ERR_INVALID_ARGUMENT ||
                std::strstr(ompbatch_last_error(), "copy 1: dst") == nullptr ||
                std::strstr(ompbatch_last_error(), "names the host") == nullptr)
                failure = std::string("device memory in a host batch: ") +
                          ompbatch_err_name(status) + ": " + ompbatch_last_error();
        }
        ompbatch_batch_destroy(batch);
    });
    worker.join();
    EXPECT_EQ(failure, "");
    std::vector<uint8_t> back(64 * kKiB);
    ASSERT_EQ(harness_read(pageable.Raw(), 0, back.data(), back.size()), 0) << harness_last_error();
    for (size_t i = 0; i < 16; i++) {
        EXPECT_EQ(harness_compare(data.data() + i * 4096, back.data() + i * 4096, 1000 + i,
                                  nullptr),
                  0)
            << "piece " << i << ": " << harness_last_error();
        EXPECT_EQ(back[i * 4096 + 1000 + i], kPoison) << "past piece " << i;
    }
    ASSERT_EQ(harness_read(device.Raw(), 0, back.data(), back.size()), 0) << harness_last_error();
    std::vector<uint8_t> poison(64 * kKiB, kPoison);
    EXPECT_EQ(harness_compare(poison.data(), back.data(), back.size(), nullptr), 0)
        << "a refused copy wrote device memory: " << harness_last_error();
}

// ---- the harness itself -----------------------------------------------------------------------

TEST_F(Gpu, HarnessRoundTripsAndPoisonsEveryMemoryKind)
{
    for (harness_mem_kind kind : {HARNESS_MEM_PAGEABLE, HARNESS_MEM_PINNED, HARNESS_MEM_DEVICE,
                                  HARNESS_MEM_MANAGED}) {
        SCOPED_TRACE(harness_mem_kind_name(kind));
        Buffer buffer(std::string("buffer_") + harness_mem_kind_name(kind));
        ASSERT_TRUE(buffer.Alloc(kind, kMiB + 3));
        std::vector<uint8_t> data(buffer.Bytes()), back(buffer.Bytes());
        harness_fill_random(&rng_, data.data(), data.size());
        ASSERT_EQ(harness_write(buffer.Raw(), 0, data.data(), data.size()), 0)
            << harness_last_error();
        ASSERT_EQ(harness_read(buffer.Raw(), 0, back.data(), back.size()), 0)
            << harness_last_error();
        EXPECT_EQ(harness_compare(data.data(), back.data(), data.size(), nullptr), 0)
            << harness_last_error();
        ASSERT_EQ(harness_poison(buffer.Raw(), kPoison), 0) << harness_last_error();
        std::vector<uint8_t> poison(buffer.Bytes(), kPoison);
        EXPECT_EQ(harness_compare_buffer(poison.data(), buffer.Raw(), poison.size(), nullptr), 0)
            << harness_last_error();
    }
}

// ---- rectangles ------------------------------------------------------------------------------

// Random rectangles between every pair of memory kinds (host kinds, device, managed), by the
// one-shot call and by a batch of several: the destination is poisoned first and must end as
// the element-by-element reference, gaps included.
TEST_F(Gpu, RectanglesAreExactBetweenEveryPairOfMemoryKinds)
{
    const harness_mem_kind kinds[] = {HARNESS_MEM_PAGEABLE, HARNESS_MEM_PINNED,
                                      HARNESS_MEM_DEVICE, HARNESS_MEM_MANAGED};
    TestRng rng(seed_ ^ 0x4ec7);
    for (harness_mem_kind from : kinds)
        for (harness_mem_kind to : kinds)
            for (int trial = 0; trial < 6; trial++) {
                SCOPED_TRACE(std::string(harness_mem_kind_name(from)) + " to " +
                             harness_mem_kind_name(to) + ", trial " + std::to_string(trial));
                RectShape r = random_rect(rng, 40);
                Buffer src("src"), dst("dst");
                ASSERT_TRUE(src.Alloc(from, r.src_bytes()));
                ASSERT_TRUE(dst.Alloc(to, r.dst_bytes()));
                std::vector<uint8_t> image(r.src_bytes()), want(r.dst_bytes(), kPoison),
                    got(r.dst_bytes());
                harness_fill_random(&rng_, image.data(), image.size());
                ASSERT_EQ(harness_write(src.Raw(), 0, image.data(), image.size()), 0)
                    << harness_last_error();
                ASSERT_EQ(harness_poison(dst.Raw(), kPoison), 0) << harness_last_error();
                rect_reference(r, want.data(), image.data());
                int status;
                if (trial % 2 == 0) {
                    status = ompbatch_target_memcpy_rect(
                        dst.At(0), src.At(0), r.element, r.dims, r.volume.data(),
                        r.dst_off.data(), r.src_off.data(), r.dst_dim.data(), r.src_dim.data(),
                        dst.DeviceNum(), src.DeviceNum());
                } else {
                    ompbatch_batch *batch = nullptr;
                    ASSERT_EQ(ompbatch_batch_create(&batch, kDevice, nullptr, nullptr),
                              OMPBATCH_OK)
                        << ompbatch_last_error();
                    status = ompbatch_batch_add_rect(batch, dst.At(0), dst.DeviceNum(),
                                                     src.At(0), src.DeviceNum(), r.element,
                                                     r.dims, r.volume.data(), r.dst_off.data(),
                                                     r.src_off.data(), r.dst_dim.data(),
                                                     r.src_dim.data(), 0);
                    if (status == OMPBATCH_OK)
                        status = ompbatch_batch_submit(batch);
                    if (status == OMPBATCH_OK)
                        status = ompbatch_batch_wait(batch);
                    EXPECT_EQ(ompbatch_batch_destroy(batch), OMPBATCH_OK);
                }
                ASSERT_EQ(status, OMPBATCH_OK) << ompbatch_last_error();
                ASSERT_EQ(harness_read(dst.Raw(), 0, got.data(), got.size()), 0)
                    << harness_last_error();
                ASSERT_EQ(got, want);
            }
}

// ---- every direction x host memory kind x piece count and size --------------------------------

struct CopyCase {
    Form form;
    Direction direction;
    harness_mem_kind host;
    size_t count;
    size_t bytes;
    std::string Name() const
    {
        return DirectionKindName(direction, host) + "_" + std::to_string(count) + "x" +
               SizeName(bytes);
    }
    friend void PrintTo(const CopyCase &c, std::ostream *os)
    {
        *os << "OMPBATCH_BATCH_FORM=" << FormEnv(c.form) << " " << c.Name();
    }
};

std::vector<CopyCase> CopyCases(Form form)
{
    static const struct {
        size_t count;
        size_t bytes;
    } shapes[] = {{1, 1},      {1, kMiB},    {2, 8},       {2, kMiB},
                  {64, 1},     {64, 4 * kKiB}, {1024, 8}, {1024, 4 * kKiB}};
    std::vector<CopyCase> cases;
    ForEachDirectionAndKind([&](Direction direction, harness_mem_kind host) {
        for (const auto &shape : shapes)
            cases.push_back(CopyCase{form, direction, host, shape.count, shape.bytes});
    });
    return cases;
}

using GpuCopy = GpuFormTest<CopyCase>;

TEST_P(GpuCopy, EveryPieceArrivesByteExact)
{
    const CopyCase &c = GetParam();
    Layout layout = Scattered(&rng_, c.count, c.bytes);
    Buffer src("src"), dst("dst");
    ASSERT_TRUE(src.Alloc(SourceKind(c.direction, c.host), layout.src_bytes));
    ASSERT_TRUE(dst.Alloc(DestinationKind(c.direction, c.host), layout.dst_bytes));
    Scenario scenario(&rng_, seed_);
    ASSERT_TRUE(scenario.FillRandom(src));
    ASSERT_TRUE(scenario.Poison(dst));
    for (const Piece &piece : layout.pieces)
        scenario.Add(dst, piece.dst, src, piece.src, piece.bytes);

    Outcome outcome;
    ASSERT_TRUE(scenario.Run(&outcome));
    EXPECT_TRUE(scenario.Matches(dst, &outcome));
    EXPECT_TRUE(scenario.Matches(src, &outcome)) << "the source changed";

    const ompbatch_stats &s = outcome.stats;
    EXPECT_EQ(s.copies_added, c.count) << StatsText(s);
    EXPECT_EQ(s.copies_zero, 0u) << StatsText(s);
    EXPECT_EQ(s.copies_planned, c.count) << "no two pieces are contiguous; " << StatsText(s);
    EXPECT_EQ(s.copies_done, s.copies_planned) << StatsText(s);
    EXPECT_EQ(s.bytes, c.count * c.bytes) << StatsText(s);
    EXPECT_GE(s.sub_batches, 1u) << StatsText(s);
    const ExpectedPath path = PathFor(c.direction, c.host, c.count);
    if (path == ExpectedPath::kHost) {
        EXPECT_EQ(s.paths, unsigned(OMPBATCH_PATH_HOST)) << StatsText(s);
        EXPECT_EQ(s.driver_calls, 0u) << StatsText(s);
    } else if (path == ExpectedPath::kDevice) {
        EXPECT_EQ(s.paths & OMPBATCH_PATH_HOST, 0u) << StatsText(s);
        EXPECT_GE(s.driver_calls, 1u) << StatsText(s);
    }
    if (c.form == Form::kPerCopy) {
        EXPECT_EQ(s.paths & OMPBATCH_PATH_BATCH, 0u) << "per-copy form; " << StatsText(s);
    }
}

OMPBATCH_INSTANTIATE_FOR_EVERY_FORM(GpuCopy, CopyCase, CopyCases);

// ---- merging ------------------------------------------------------------------------------------

// The same shape as a copy case; merge cases lay their pieces out contiguously.
using MergeCase = CopyCase;

std::vector<MergeCase> MergeCases(Form form)
{
    std::vector<MergeCase> cases;
    ForEachDirectionAndKind([&](Direction direction, harness_mem_kind host) {
        cases.push_back(MergeCase{form, direction, host, 64, 4 * kKiB});
        cases.push_back(MergeCase{form, direction, host, 1024, 8});
    });
    return cases;
}

using GpuMerge = GpuFormTest<MergeCase>;

// Pieces contiguous on both sides of one allocation, added in a random order, become one copy.
TEST_P(GpuMerge, ContiguousPiecesOfOneAllocationMergeAndStayExact)
{
    const MergeCase &c = GetParam();
    Layout layout = Contiguous(c.count, c.bytes, 1);
    Buffer src("src"), dst("dst");
    ASSERT_TRUE(src.Alloc(SourceKind(c.direction, c.host), layout.src_bytes));
    ASSERT_TRUE(dst.Alloc(DestinationKind(c.direction, c.host), layout.dst_bytes));
    Scenario scenario(&rng_, seed_);
    ASSERT_TRUE(scenario.FillRandom(src));
    ASSERT_TRUE(scenario.Poison(dst));
    for (size_t i : Shuffled(&rng_, layout.pieces.size()))
        scenario.Add(dst, layout.pieces[i].dst, src, layout.pieces[i].src, layout.pieces[i].bytes);

    Outcome outcome;
    ASSERT_TRUE(scenario.Run(&outcome));
    EXPECT_TRUE(scenario.Matches(dst, &outcome));
    const ompbatch_stats &s = outcome.stats;
    EXPECT_EQ(s.copies_added, c.count) << StatsText(s);
    EXPECT_LT(s.copies_planned, s.copies_added) << StatsText(s) << "\n" << PlanExcerpt(outcome.plan);
    EXPECT_EQ(s.copies_planned, 1u) << StatsText(s) << "\n" << PlanExcerpt(outcome.plan);
    EXPECT_EQ(s.bytes, c.count * c.bytes) << StatsText(s);
}

// Two runs separated by a gap become exactly two copies; the gap keeps its poison.
TEST_P(GpuMerge, RunsSeparatedByAGapMergeIntoOneCopyEach)
{
    const MergeCase &c = GetParam();
    Layout layout = Contiguous(c.count, c.bytes, 2);
    Buffer src("src"), dst("dst");
    ASSERT_TRUE(src.Alloc(SourceKind(c.direction, c.host), layout.src_bytes));
    ASSERT_TRUE(dst.Alloc(DestinationKind(c.direction, c.host), layout.dst_bytes));
    Scenario scenario(&rng_, seed_);
    ASSERT_TRUE(scenario.FillRandom(src));
    ASSERT_TRUE(scenario.Poison(dst));
    for (size_t i : Shuffled(&rng_, layout.pieces.size()))
        scenario.Add(dst, layout.pieces[i].dst, src, layout.pieces[i].src, layout.pieces[i].bytes);

    Outcome outcome;
    ASSERT_TRUE(scenario.Run(&outcome));
    EXPECT_TRUE(scenario.Matches(dst, &outcome));
    EXPECT_EQ(outcome.stats.copies_planned, 2u)
        << StatsText(outcome.stats) << "\n" << PlanExcerpt(outcome.plan);
}

OMPBATCH_INSTANTIATE_FOR_EVERY_FORM(GpuMerge, MergeCase, MergeCases);

// ---- dependencies inside one batch --------------------------------------------------------------

struct DependencyCase {
    Form form;
    harness_mem_kind host;
    int synchronous;
    std::string Name() const
    {
        return std::string(harness_mem_kind_name(host)) + (synchronous ? "_synchronous" : "");
    }
    friend void PrintTo(const DependencyCase &c, std::ostream *os)
    {
        *os << "OMPBATCH_BATCH_FORM=" << FormEnv(c.form) << " " << c.Name();
    }
};

std::vector<DependencyCase> DependencyCases(Form form)
{
    std::vector<DependencyCase> cases;
    for (harness_mem_kind host : kHostKinds)
        for (int synchronous : {0, 1})
            cases.push_back(DependencyCase{form, host, synchronous});
    return cases;
}

class GpuDependency : public GpuFormTest<DependencyCase> {
protected:
    ompbatch_batch_options Options() const
    {
        ompbatch_batch_options options;
        std::memset(&options, 0, sizeof(options));
        options.struct_size = sizeof(options);
        options.synchronous = GetParam().synchronous;
        return options;
    }
};

constexpr size_t kDepPieces = 64;
constexpr size_t kDepBytes = 4 * kKiB;

// H2D host A -> X, then D2D X -> Y (scattered), then D2H Y -> host B, all in one batch.
TEST_P(GpuDependency, ChainHostToDeviceToDeviceToHostFollowsAddOrder)
{
    const DependencyCase &c = GetParam();
    Layout into_x = Scattered(&rng_, kDepPieces, kDepBytes);   // A -> X
    Layout x_to_y = Scattered(&rng_, kDepPieces, kDepBytes);   // X -> Y (src offsets replaced)
    Layout y_to_b = Scattered(&rng_, kDepPieces, kDepBytes);   // Y -> B (src offsets replaced)
    Buffer a("A"), x("X"), y("Y"), b("B");
    ASSERT_TRUE(a.Alloc(c.host, into_x.src_bytes));
    ASSERT_TRUE(x.Alloc(HARNESS_MEM_DEVICE, into_x.dst_bytes));
    ASSERT_TRUE(y.Alloc(HARNESS_MEM_DEVICE, x_to_y.dst_bytes));
    ASSERT_TRUE(b.Alloc(c.host, y_to_b.dst_bytes));
    Scenario scenario(&rng_, seed_);
    ASSERT_TRUE(scenario.FillRandom(a));
    ASSERT_TRUE(scenario.Poison(x));
    ASSERT_TRUE(scenario.Poison(y));
    ASSERT_TRUE(scenario.Poison(b));
    for (size_t i = 0; i < kDepPieces; i++)
        scenario.Add(x, into_x.pieces[i].dst, a, into_x.pieces[i].src, kDepBytes);
    for (size_t i = 0; i < kDepPieces; i++)
        scenario.Add(y, x_to_y.pieces[i].dst, x, into_x.pieces[i].dst, kDepBytes);
    for (size_t i = 0; i < kDepPieces; i++)
        scenario.Add(b, y_to_b.pieces[i].dst, y, x_to_y.pieces[i].dst, kDepBytes);

    Outcome outcome;
    ompbatch_batch_options options = Options();
    ASSERT_TRUE(scenario.Run(&outcome, &options));
    EXPECT_TRUE(scenario.Matches(x, &outcome));
    EXPECT_TRUE(scenario.Matches(y, &outcome));
    EXPECT_TRUE(scenario.Matches(b, &outcome));
    const unsigned levels = 3;
    EXPECT_GE(outcome.stats.sub_batches, levels) << StatsText(outcome.stats) << "\n"
                                                 << PlanExcerpt(outcome.plan);
    EXPECT_EQ(outcome.stats.copies_planned, 3 * kDepPieces) << StatsText(outcome.stats);
}

// D2H X -> B reads X before H2D A -> X overwrites it (write after read).
TEST_P(GpuDependency, OverwriteAfterReadLeavesTheReaderTheOldBytes)
{
    const DependencyCase &c = GetParam();
    Layout x_to_b = Scattered(&rng_, kDepPieces, kDepBytes);
    Layout a_to_x = Scattered(&rng_, kDepPieces, kDepBytes); // its source offsets only
    Buffer x("X"), b("B"), a("A");
    ASSERT_TRUE(x.Alloc(HARNESS_MEM_DEVICE, x_to_b.src_bytes + kDepBytes));
    ASSERT_TRUE(b.Alloc(c.host, x_to_b.dst_bytes));
    ASSERT_TRUE(a.Alloc(c.host, a_to_x.src_bytes));
    Scenario scenario(&rng_, seed_);
    ASSERT_TRUE(scenario.FillRandom(x));
    ASSERT_TRUE(scenario.Poison(b));
    ASSERT_TRUE(scenario.FillRandom(a));
    for (size_t i = 0; i < kDepPieces; i++)
        scenario.Add(b, x_to_b.pieces[i].dst, x, x_to_b.pieces[i].src, kDepBytes);
    // The writes hit X where it was just read, shifted by half a piece: every write overlaps
    // one or two reads (pieces are at least a piece apart, so the writes do not overlap).
    for (size_t i = 0; i < kDepPieces; i++)
        scenario.Add(x, x_to_b.pieces[i].src + kDepBytes / 2, a, a_to_x.pieces[i].src,
                     kDepBytes);

    Outcome outcome;
    ompbatch_batch_options options = Options();
    ASSERT_TRUE(scenario.Run(&outcome, &options));
    EXPECT_TRUE(scenario.Matches(b, &outcome));
    EXPECT_TRUE(scenario.Matches(x, &outcome));
    EXPECT_GE(outcome.stats.sub_batches, 2u) << StatsText(outcome.stats);
}

// Two writes to overlapping ranges: the one added later wins, into device memory (H2D) and
// into host memory (D2H).
TEST_P(GpuDependency, LaterWriteToAnOverlappingRangeWins)
{
    const DependencyCase &c = GetParam();
    for (Direction direction : {Direction::kH2D, Direction::kD2H}) {
        SCOPED_TRACE(DirectionName(direction));
        const harness_mem_kind src_kind = SourceKind(direction, c.host);
        const harness_mem_kind dst_kind = DestinationKind(direction, c.host);
        const size_t stride = 2 * kDepBytes; // room for the shifted second write
        Buffer first("first"), second("second"), target("target");
        ASSERT_TRUE(first.Alloc(src_kind, kDepPieces * kDepBytes));
        ASSERT_TRUE(second.Alloc(src_kind, kDepPieces * kDepBytes));
        ASSERT_TRUE(target.Alloc(dst_kind, kDepPieces * stride + kDepBytes));
        Scenario scenario(&rng_, seed_);
        ASSERT_TRUE(scenario.FillRandom(first));
        ASSERT_TRUE(scenario.FillRandom(second));
        ASSERT_TRUE(scenario.Poison(target));
        for (size_t i = 0; i < kDepPieces; i++)
            scenario.Add(target, i * stride, first, i * kDepBytes, kDepBytes);
        for (size_t i : Shuffled(&rng_, kDepPieces))
            scenario.Add(target, i * stride + kDepBytes / 2 + i, second, i * kDepBytes,
                         kDepBytes);

        Outcome outcome;
        ompbatch_batch_options options = Options();
        ASSERT_TRUE(scenario.Run(&outcome, &options));
        EXPECT_TRUE(scenario.Matches(target, &outcome));
        EXPECT_GE(outcome.stats.sub_batches, 2u) << StatsText(outcome.stats);
    }
}

// A -> X (H2D), X -> H (D2H into host memory), H -> Y (H2D out of that host memory),
// Y -> B (D2H): the third copy must read what the second wrote, whatever H's kind.
TEST_P(GpuDependency, RoundTripThroughHostMemoryFollowsAddOrder)
{
    const DependencyCase &c = GetParam();
    Layout step[4];
    for (Layout &layout : step)
        layout = Scattered(&rng_, kDepPieces, kDepBytes);
    Buffer a("A"), x("X"), h("H"), y("Y"), b("B");
    ASSERT_TRUE(a.Alloc(c.host, step[0].src_bytes));
    ASSERT_TRUE(x.Alloc(HARNESS_MEM_DEVICE, step[0].dst_bytes));
    ASSERT_TRUE(h.Alloc(c.host, step[1].dst_bytes));
    ASSERT_TRUE(y.Alloc(HARNESS_MEM_DEVICE, step[2].dst_bytes));
    ASSERT_TRUE(b.Alloc(c.host, step[3].dst_bytes));
    Scenario scenario(&rng_, seed_);
    ASSERT_TRUE(scenario.FillRandom(a));
    ASSERT_TRUE(scenario.Poison(x));
    ASSERT_TRUE(scenario.FillRandom(h)); // stale bytes a too-early read would pick up
    ASSERT_TRUE(scenario.Poison(y));
    ASSERT_TRUE(scenario.Poison(b));
    for (size_t i = 0; i < kDepPieces; i++)
        scenario.Add(x, step[0].pieces[i].dst, a, step[0].pieces[i].src, kDepBytes);
    for (size_t i = 0; i < kDepPieces; i++)
        scenario.Add(h, step[1].pieces[i].dst, x, step[0].pieces[i].dst, kDepBytes);
    for (size_t i = 0; i < kDepPieces; i++)
        scenario.Add(y, step[2].pieces[i].dst, h, step[1].pieces[i].dst, kDepBytes);
    for (size_t i = 0; i < kDepPieces; i++)
        scenario.Add(b, step[3].pieces[i].dst, y, step[2].pieces[i].dst, kDepBytes);

    Outcome outcome;
    ompbatch_batch_options options = Options();
    ASSERT_TRUE(scenario.Run(&outcome, &options));
    EXPECT_TRUE(scenario.Matches(h, &outcome));
    EXPECT_TRUE(scenario.Matches(y, &outcome));
    EXPECT_TRUE(scenario.Matches(b, &outcome));
    EXPECT_GE(outcome.stats.sub_batches, 4u) << StatsText(outcome.stats) << "\n"
                                             << PlanExcerpt(outcome.plan);
}

OMPBATCH_INSTANTIATE_FOR_EVERY_FORM(GpuDependency, DependencyCase, DependencyCases);

// ---- the one-shot call ----------------------------------------------------------------------------

struct OneShotCase {
    Form form;
    Direction direction;
    harness_mem_kind host;
    bool offsets; // offsets in the offset arrays (else NULL arrays, offsets in the pointers)
    std::string Name() const
    {
        return DirectionKindName(direction, host) + (offsets ? "_offset_arrays" : "_null_offsets");
    }
    friend void PrintTo(const OneShotCase &c, std::ostream *os)
    {
        *os << "OMPBATCH_BATCH_FORM=" << FormEnv(c.form) << " " << c.Name();
    }
};

std::vector<OneShotCase> OneShotCases(Form form)
{
    std::vector<OneShotCase> cases;
    ForEachDirectionAndKind([&](Direction direction, harness_mem_kind host) {
        cases.push_back(OneShotCase{form, direction, host, true});
        cases.push_back(OneShotCase{form, direction, host, false});
    });
    return cases;
}

using GpuOneShot = GpuFormTest<OneShotCase>;

// ompbatch_target_memcpy_batch with pieces of random sizes (1 B to 8 KiB), zero-length entries
// with NULL pointers, and each offset split at random between the pointer and the offset array.
TEST_P(GpuOneShot, CopiesEveryRegionByteExact)
{
    const OneShotCase &c = GetParam();
    constexpr size_t kPieces = 200;
    std::vector<size_t> sizes(kPieces);
    for (size_t i = 0; i < kPieces; i++)
        sizes[i] = i % 9 == 4 ? 0 : 1 + static_cast<size_t>(harness_rng_below(&rng_, 8 * kKiB));
    Layout layout = Scattered(&rng_, sizes);
    Buffer src("src"), dst("dst");
    ASSERT_TRUE(src.Alloc(SourceKind(c.direction, c.host), layout.src_bytes));
    ASSERT_TRUE(dst.Alloc(DestinationKind(c.direction, c.host), layout.dst_bytes));
    Scenario scenario(&rng_, seed_);
    ASSERT_TRUE(scenario.FillRandom(src));
    ASSERT_TRUE(scenario.Poison(dst));

    std::vector<void *> dsts(kPieces);
    std::vector<const void *> srcs(kPieces);
    std::vector<size_t> lengths(kPieces), dst_offsets(kPieces), src_offsets(kPieces);
    for (size_t i = 0; i < kPieces; i++) {
        const Piece &piece = layout.pieces[i];
        lengths[i] = piece.bytes;
        if (piece.bytes == 0) {
            dsts[i] = nullptr;
            srcs[i] = nullptr;
            continue;
        }
        size_t dst_split = c.offsets ? harness_rng_below(&rng_, piece.dst + 1) : piece.dst;
        size_t src_split = c.offsets ? harness_rng_below(&rng_, piece.src + 1) : piece.src;
        dsts[i] = dst.At(dst_split);
        srcs[i] = src.At(src_split);
        dst_offsets[i] = piece.dst - dst_split;
        src_offsets[i] = piece.src - src_split;
        scenario.Add(dst, piece.dst, src, piece.src, piece.bytes);
    }
    const int dst_device = dst.DeviceNum(), src_device = src.DeviceNum();
    int status = ompbatch_target_memcpy_batch(
        dsts.data(), srcs.data(), lengths.data(), c.offsets ? dst_offsets.data() : nullptr,
        c.offsets ? src_offsets.data() : nullptr, kPieces, dst_device, src_device);
    ASSERT_EQ(status, OMPBATCH_OK) << LibraryFailure("ompbatch_target_memcpy_batch", status)
                                          .message();
    scenario.ApplyToModel();
    EXPECT_TRUE(scenario.Matches(dst));
    EXPECT_TRUE(scenario.Matches(src)) << "the source changed";
}

OMPBATCH_INSTANTIATE_FOR_EVERY_FORM(GpuOneShot, OneShotCase, OneShotCases);

// ---- streams ------------------------------------------------------------------------------------

enum class StreamChoice { kLibrary, kUserDefault, kUserNonBlocking };

struct StreamCase {
    Form form;
    StreamChoice stream;
    harness_mem_kind host;
    std::string Name() const
    {
        const char *stream_name = stream == StreamChoice::kLibrary       ? "null_stream"
                                  : stream == StreamChoice::kUserDefault ? "user_stream"
                                                                         : "user_nonblocking_stream";
        return std::string(stream_name) + "_" + harness_mem_kind_name(host);
    }
    friend void PrintTo(const StreamCase &c, std::ostream *os)
    {
        *os << "OMPBATCH_BATCH_FORM=" << FormEnv(c.form) << " " << c.Name();
    }
};

std::vector<StreamCase> StreamCases(Form form)
{
    std::vector<StreamCase> cases;
    for (StreamChoice stream :
         {StreamChoice::kLibrary, StreamChoice::kUserDefault, StreamChoice::kUserNonBlocking})
        for (harness_mem_kind host : kHostKinds)
            cases.push_back(StreamCase{form, stream, host});
    return cases;
}

using GpuStream = GpuFormTest<StreamCase>;

// A batch on the caller's stream (or NULL: the library's own stream) copies H2D and back D2H in
// one batch, then is reset and refilled with new data and used again.
TEST_P(GpuStream, BatchOnTheStreamIsExactAndReusableAfterReset)
{
    const StreamCase &c = GetParam();
    UserStream user;
    if (c.stream == StreamChoice::kUserDefault) {
        ASSERT_TRUE(user.Create(CU_STREAM_DEFAULT));
    } else if (c.stream == StreamChoice::kUserNonBlocking) {
        ASSERT_TRUE(user.Create(CU_STREAM_NON_BLOCKING));
    }

    Layout down = Scattered(&rng_, 64, 4 * kKiB);
    Layout up = Scattered(&rng_, 64, 4 * kKiB);
    Buffer a("A"), x("X"), b("B");
    ASSERT_TRUE(a.Alloc(c.host, down.src_bytes));
    ASSERT_TRUE(x.Alloc(HARNESS_MEM_DEVICE, std::max(down.dst_bytes, up.src_bytes)));
    ASSERT_TRUE(b.Alloc(c.host, up.dst_bytes));

    ompbatch_batch *raw = nullptr;
    int status = ompbatch_batch_create(&raw, kDevice, user.Get(), nullptr);
    ASSERT_EQ(status, OMPBATCH_OK) << LibraryFailure("ompbatch_batch_create", status).message();
    BatchPtr batch(raw);
    Scenario scenario(&rng_, seed_);
    for (int round = 0; round < 2; round++) {
        SCOPED_TRACE("round " + std::to_string(round));
        ASSERT_TRUE(scenario.FillRandom(a));
        ASSERT_TRUE(scenario.Poison(x));
        ASSERT_TRUE(scenario.Poison(b));
        scenario.ClearOps();
        for (size_t i = 0; i < down.pieces.size(); i++)
            scenario.Add(x, down.pieces[i].dst, a, down.pieces[i].src, down.pieces[i].bytes);
        for (size_t i = 0; i < up.pieces.size(); i++)
            scenario.Add(b, up.pieces[i].dst, x, down.pieces[i].dst, up.pieces[i].bytes);
        Outcome outcome;
        ASSERT_TRUE(scenario.RunOn(batch.get(), &outcome));
        EXPECT_TRUE(scenario.Matches(x, &outcome));
        EXPECT_TRUE(scenario.Matches(b, &outcome));
        EXPECT_EQ(outcome.stats.copies_done, outcome.stats.copies_planned)
            << StatsText(outcome.stats);
        status = ompbatch_batch_reset(batch.get());
        ASSERT_EQ(status, OMPBATCH_OK) << LibraryFailure("ompbatch_batch_reset", status).message();
    }
    status = ompbatch_batch_destroy(batch.release());
    EXPECT_EQ(status, OMPBATCH_OK) << LibraryFailure("ompbatch_batch_destroy", status).message();
}

OMPBATCH_INSTANTIATE_FOR_EVERY_FORM(GpuStream, StreamCase, StreamCases);

// ---- max_copies ---------------------------------------------------------------------------------

struct MaxCopiesCase {
    Form form;
    Direction direction;
    harness_mem_kind host;
    std::string Name() const { return DirectionKindName(direction, host); }
    friend void PrintTo(const MaxCopiesCase &c, std::ostream *os)
    {
        *os << "OMPBATCH_BATCH_FORM=" << FormEnv(c.form) << " " << c.Name();
    }
};

// Groups the routing table (plugin/plan/route.c) sends through cuMemcpyBatchAsync.
std::vector<MaxCopiesCase> MaxCopiesCases(Form form)
{
    return {
        MaxCopiesCase{form, Direction::kH2D, HARNESS_MEM_PINNED},
        MaxCopiesCase{form, Direction::kH2D, HARNESS_MEM_PAGEABLE},
        MaxCopiesCase{form, Direction::kH2D, HARNESS_MEM_MANAGED},
        MaxCopiesCase{form, Direction::kD2H, HARNESS_MEM_PINNED},
        MaxCopiesCase{form, Direction::kD2D, HARNESS_MEM_DEVICE},
    };
}

using GpuMaxCopies = GpuFormTest<MaxCopiesCase>;

// 1000 copies with max_copies 64 go out as at least 16 driver batches, still byte-exact.
TEST_P(GpuMaxCopies, LongPlanIsSplitIntoSubBatchesAndStaysExact)
{
    const MaxCopiesCase &c = GetParam();
    constexpr size_t kCopies = 1000, kMax = 64, kBytes = 64;
    Layout layout = Scattered(&rng_, kCopies, kBytes);
    Buffer src("src"), dst("dst");
    ASSERT_TRUE(src.Alloc(SourceKind(c.direction, c.host), layout.src_bytes));
    ASSERT_TRUE(dst.Alloc(DestinationKind(c.direction, c.host), layout.dst_bytes));
    Scenario scenario(&rng_, seed_);
    ASSERT_TRUE(scenario.FillRandom(src));
    ASSERT_TRUE(scenario.Poison(dst));
    for (const Piece &piece : layout.pieces)
        scenario.Add(dst, piece.dst, src, piece.src, piece.bytes);

    ompbatch_batch_options options;
    std::memset(&options, 0, sizeof(options));
    options.struct_size = sizeof(options);
    options.max_copies = kMax;
    Outcome outcome;
    ASSERT_TRUE(scenario.Run(&outcome, &options));
    EXPECT_TRUE(scenario.Matches(dst, &outcome));
    const ompbatch_stats &s = outcome.stats;
    EXPECT_EQ(s.copies_planned, kCopies) << StatsText(s);
    EXPECT_EQ(s.copies_done, kCopies) << StatsText(s);
    if (c.form == Form::kPerCopy) {
        EXPECT_EQ(s.paths, unsigned(OMPBATCH_PATH_PER_COPY)) << StatsText(s);
        EXPECT_EQ(s.driver_calls, kCopies) << StatsText(s);
    } else {
        const uint64_t expected = (kCopies + kMax - 1) / kMax; // 16
        EXPECT_EQ(s.paths, unsigned(OMPBATCH_PATH_BATCH)) << StatsText(s);
        EXPECT_GE(s.sub_batches, expected) << StatsText(s) << "\n" << PlanExcerpt(outcome.plan);
        EXPECT_GE(s.driver_calls, expected) << StatsText(s);
        EXPECT_GE(s.attr_groups, expected) << "every driver batch needs its own attributes; "
                                           << StatsText(s);
    }
}

OMPBATCH_INSTANTIATE_FOR_EVERY_FORM(GpuMaxCopies, MaxCopiesCase, MaxCopiesCases);

// ---- routing and statistics ---------------------------------------------------------------------

struct StatsCase {
    Form form;
    std::string Name() const { return "default"; }
    friend void PrintTo(const StatsCase &c, std::ostream *os)
    {
        *os << "OMPBATCH_BATCH_FORM=" << FormEnv(c.form) << " " << c.Name();
    }
};

std::vector<StatsCase> StatsCases(Form form)
{
    return {StatsCase{form}};
}

class GpuStats : public GpuFormTest<StatsCase> {
protected:
    // 64 scattered 4 KiB copies (plus `zero` zero-byte ones with NULL pointers, added first).
    ::testing::AssertionResult RunScattered(Direction direction, harness_mem_kind host,
                                            size_t zero, Outcome *outcome)
    {
        Layout layout = Scattered(&rng_, 64, 4 * kKiB);
        Buffer src("src"), dst("dst");
        auto result = src.Alloc(SourceKind(direction, host), layout.src_bytes);
        if (result)
            result = dst.Alloc(DestinationKind(direction, host), layout.dst_bytes);
        Scenario scenario(&rng_, seed_);
        if (result)
            result = scenario.FillRandom(src);
        if (result)
            result = scenario.Poison(dst);
        if (!result)
            return result;
        ompbatch_batch *raw = nullptr;
        int status = ompbatch_batch_create(&raw, kDevice, nullptr, nullptr);
        if (status != OMPBATCH_OK)
            return LibraryFailure("ompbatch_batch_create", status);
        BatchPtr batch(raw);
        for (size_t i = 0; i < zero; i++) {
            status = ompbatch_batch_add(batch.get(), nullptr, dst.DeviceNum(), nullptr,
                                        src.DeviceNum(), 0, 0);
            if (status != OMPBATCH_OK)
                return LibraryFailure("ompbatch_batch_add of a zero-byte copy", status);
        }
        for (const Piece &piece : layout.pieces)
            scenario.Add(dst, piece.dst, src, piece.src, piece.bytes);
        result = scenario.RunOn(batch.get(), outcome);
        if (result)
            result = scenario.Matches(dst, outcome);
        return result;
    }
};

// The routing table (plugin/plan/route.c): pinned H2D batches from two copies up.
TEST_P(GpuStats, PinnedHostToDeviceUsesTheBatchPath)
{
    Outcome outcome;
    ASSERT_TRUE(RunScattered(Direction::kH2D, HARNESS_MEM_PINNED, 3, &outcome));
    const ompbatch_stats &s = outcome.stats;
    EXPECT_EQ(s.copies_added, 67u) << StatsText(s);
    EXPECT_EQ(s.copies_zero, 3u) << StatsText(s);
    EXPECT_EQ(s.copies_planned, 64u) << StatsText(s);
    EXPECT_EQ(s.copies_done, 64u) << StatsText(s);
    EXPECT_EQ(s.bytes, 64u * 4 * kKiB) << StatsText(s);
    if (GetParam().form == Form::kPerCopy) {
        EXPECT_EQ(s.paths, unsigned(OMPBATCH_PATH_PER_COPY)) << StatsText(s);
        EXPECT_EQ(s.driver_calls, 64u) << StatsText(s);
    } else {
        EXPECT_EQ(s.paths, unsigned(OMPBATCH_PATH_BATCH)) << StatsText(s) << "\n"
                                                          << PlanExcerpt(outcome.plan);
        EXPECT_EQ(s.sub_batches, 1u) << StatsText(s);
        EXPECT_EQ(s.driver_calls, 1u) << StatsText(s);
        EXPECT_EQ(s.attr_groups, 1u) << StatsText(s);
    }
}

// Batches into pageable host memory are slower than a per-copy loop on the H200: never batched.
TEST_P(GpuStats, PageableDeviceToHostUsesThePerCopyPath)
{
    Outcome outcome;
    ASSERT_TRUE(RunScattered(Direction::kD2H, HARNESS_MEM_PAGEABLE, 0, &outcome));
    const ompbatch_stats &s = outcome.stats;
    EXPECT_EQ(s.paths, unsigned(OMPBATCH_PATH_PER_COPY)) << StatsText(s) << "\n"
                                                         << PlanExcerpt(outcome.plan);
    EXPECT_EQ(s.driver_calls, 64u) << StatsText(s);
    EXPECT_EQ(s.copies_done, 64u) << StatsText(s);
}

// Host-to-host copies in a device batch are memcpy on the host: no driver call.
TEST_P(GpuStats, PageableHostToHostUsesTheHostPath)
{
    Outcome outcome;
    ASSERT_TRUE(RunScattered(Direction::kH2H, HARNESS_MEM_PAGEABLE, 0, &outcome));
    const ompbatch_stats &s = outcome.stats;
    EXPECT_EQ(s.paths, unsigned(OMPBATCH_PATH_HOST)) << StatsText(s);
    EXPECT_EQ(s.driver_calls, 0u) << StatsText(s);
    EXPECT_EQ(s.copies_done, 64u) << StatsText(s);
}

OMPBATCH_INSTANTIATE_FOR_EVERY_FORM(GpuStats, StatsCase, StatsCases);

// ---- strategies ---------------------------------------------------------------------------------

// The staged strategy and auto on every lane the copy kernel serves, over random sizes (1 byte
// to a few pieces of the kernel's 64 KiB chunks) and random alignments, byte-exact with the
// destination poisoned, gaps included.
struct StrategyCase {
    Form form;
    Direction direction;
    harness_mem_kind host;
    int strategy;
    size_t count;
    size_t most;   // pieces are 1..most bytes, at random; 0: all of `count` are 1 MiB
    std::string Name() const
    {
        return DirectionKindName(direction, host) + "_" +
               (strategy == OMPBATCH_STRATEGY_STAGED ? "staged" : "auto") + "_" +
               std::to_string(count) + "x" + (most ? "upto" + SizeName(most) : "1MiB");
    }
    friend void PrintTo(const StrategyCase &c, std::ostream *os)
    {
        *os << "OMPBATCH_BATCH_FORM=" << FormEnv(c.form) << " " << c.Name();
    }
};

std::vector<StrategyCase> StrategyCases(Form form)
{
    static const struct {
        size_t count;
        size_t most;
    } shapes[] = {{2, 16}, {64, 9000}, {1024, 4096}, {4096, 256}, {16, 300 * kKiB}, {64, 0}};
    std::vector<StrategyCase> cases;
    for (Direction direction : {Direction::kH2D, Direction::kD2H, Direction::kD2D}) {
        for (harness_mem_kind host : {HARNESS_MEM_PAGEABLE, HARNESS_MEM_PINNED}) {
            if (direction == Direction::kD2D && host == HARNESS_MEM_PINNED)
                continue;
            for (int strategy : {OMPBATCH_STRATEGY_STAGED, OMPBATCH_STRATEGY_AUTO})
                for (const auto &shape : shapes)
                    cases.push_back(StrategyCase{form, direction,
                                                 direction == Direction::kD2D ? HARNESS_MEM_DEVICE
                                                                              : host,
                                                 strategy, shape.count, shape.most});
        }
    }
    return cases;
}

using GpuStrategy = GpuFormTest<StrategyCase>;

TEST_P(GpuStrategy, EveryPieceArrivesByteExact)
{
    const StrategyCase &c = GetParam();
    std::vector<size_t> sizes;
    for (size_t i = 0; i < c.count; i++)
        sizes.push_back(c.most ? 1 + static_cast<size_t>(harness_rng_below(&rng_, c.most)) : kMiB);
    Layout layout = Scattered(&rng_, sizes);
    Buffer src("src"), dst("dst");
    ASSERT_TRUE(src.Alloc(SourceKind(c.direction, c.host), layout.src_bytes));
    ASSERT_TRUE(dst.Alloc(DestinationKind(c.direction, c.host), layout.dst_bytes));
    Scenario scenario(&rng_, seed_);
    ASSERT_TRUE(scenario.FillRandom(src));
    ASSERT_TRUE(scenario.Poison(dst));
    for (const Piece &piece : layout.pieces)
        scenario.Add(dst, piece.dst, src, piece.src, piece.bytes);
    ompbatch_batch_options options;
    std::memset(&options, 0, sizeof(options));
    options.struct_size = sizeof(options);
    options.strategy = c.strategy;
    Outcome outcome;
    ASSERT_TRUE(scenario.Run(&outcome, &options));
    EXPECT_TRUE(scenario.Matches(dst, &outcome));
    EXPECT_TRUE(scenario.Matches(src, &outcome)) << "the source changed";
    const ompbatch_stats &s = outcome.stats;
    EXPECT_EQ(s.copies_done, s.copies_planned) << StatsText(s);
    EXPECT_EQ(s.staging_refused, 0u) << StatsText(s);
    if (c.strategy == OMPBATCH_STRATEGY_STAGED && c.count > 1) {
        // Pieces that need staging (pack, gather) take at most 64 MiB a level: of 64 pageable
        // pieces of 1 MiB, 63 fit and the last goes direct.
        bool needs_staging = c.host == HARNESS_MEM_PAGEABLE && c.direction != Direction::kD2D;
        size_t expected = needs_staging && c.most == 0 ? 63 : c.count;
        EXPECT_EQ(s.staged_copies, expected) << StatsText(s) << "\n" << PlanExcerpt(outcome.plan);
        EXPECT_NE(s.paths & OMPBATCH_PATH_KERNEL, 0u) << StatsText(s);
    }
}

OMPBATCH_INSTANTIATE_FOR_EVERY_FORM(GpuStrategy, StrategyCase, StrategyCases);

// A loop refilling one batch with the same in-place copies (pinned host to device, device to
// device, device to pinned host): from the third round the kernel runs on descriptors kept on
// the device. Fresh random sources and poisoned destinations every round.
TEST_F(Gpu, ALoopOfTheSameStagedCopiesStaysExactOnKeptDescriptors)
{
    struct Way {
        harness_mem_kind src, dst;
        int src_num, dst_num;
    };
    const Way ways[] = {{HARNESS_MEM_PINNED, HARNESS_MEM_DEVICE, kHost, kDevice},
                        {HARNESS_MEM_DEVICE, HARNESS_MEM_DEVICE, kDevice, kDevice},
                        {HARNESS_MEM_DEVICE, HARNESS_MEM_PINNED, kDevice, kHost}};
    for (const Way &way : ways) {
        std::vector<size_t> sizes;
        for (int i = 0; i < 300; i++)
            sizes.push_back(1 + static_cast<size_t>(harness_rng_below(&rng_, 3000)));
        Layout layout = Scattered(&rng_, sizes);
        Buffer src("src"), dst("dst");
        ASSERT_TRUE(src.Alloc(way.src, layout.src_bytes));
        ASSERT_TRUE(dst.Alloc(way.dst, layout.dst_bytes));
        ompbatch_batch_options options;
        std::memset(&options, 0, sizeof(options));
        options.struct_size = sizeof(options);
        options.strategy = OMPBATCH_STRATEGY_STAGED;
        ompbatch_batch *batch = nullptr;
        ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_create(&batch, kDevice, nullptr, &options));
        std::vector<unsigned char> bytes(layout.src_bytes), got(layout.dst_bytes);
        for (int round = 0; round < 5; round++) {
            harness_fill_random(&rng_, bytes.data(), bytes.size());
            ASSERT_EQ(0, harness_write(src.Raw(), 0, bytes.data(), bytes.size()));
            ASSERT_EQ(0, harness_poison(dst.Raw(), kPoison));
            for (const Piece &piece : layout.pieces)
                ASSERT_EQ(OMPBATCH_OK,
                          ompbatch_batch_add(batch, dst.At(piece.dst), way.dst_num,
                                             src.At(piece.src), way.src_num, piece.bytes, 0));
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_submit(batch)) << ompbatch_last_error();
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_wait(batch)) << ompbatch_last_error();
            ompbatch_stats stats;
            std::memset(&stats, 0, sizeof(stats));
            stats.struct_size = sizeof(stats);
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_get_stats(batch, &stats));
            EXPECT_EQ(sizes.size(), stats.staged_copies) << StatsText(stats);
            EXPECT_EQ(round > 0 ? 1u : 0u, stats.plan_reused) << StatsText(stats);
            ASSERT_EQ(0, harness_read(dst.Raw(), 0, got.data(), got.size()));
            std::vector<unsigned char> expect(layout.dst_bytes, kPoison);
            for (const Piece &piece : layout.pieces)
                std::memcpy(&expect[piece.dst], &bytes[piece.src], piece.bytes);
            size_t diff = 0;
            ASSERT_EQ(0, harness_compare(expect.data(), got.data(), got.size(), &diff))
                << "round " << round << ", first difference at byte " << diff;
            ASSERT_EQ(OMPBATCH_OK, ompbatch_batch_reset(batch));
        }
        EXPECT_EQ(OMPBATCH_OK, ompbatch_batch_destroy(batch)) << ompbatch_last_error();
    }
}

} // namespace
