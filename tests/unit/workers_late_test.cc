// When the pack threads (plugin/core/workers.c) count as late. A helper that was awake when a
// job began and then kept its caller waiting was descheduled: jobs run on their callers for a
// while. A helper the job had to wake from its sleep also keeps the caller waiting, by the
// wake-up itself, which says nothing about the host's load.
// Its own binary: whether a helper is awake depends on every job the process ran before.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" {
#include "plugin/core/config.h"
#include "plugin/core/workers.h"
}

namespace {

using Clock = std::chrono::steady_clock;

// Two parts: the first part a helper takes keeps it 50 ms (longer than a helper takes to start
// on a loaded machine); the caller's part waits, up to `patience`, until a helper has taken one.
// Once a helper has a part the caller is kept waiting by it.
struct SlowHelperJob {
    std::thread::id caller = std::this_thread::get_id();
    std::chrono::milliseconds patience{2000};
    std::atomic<int> helper_parts{0};
};

void slow_helper_part(void *arg, size_t, size_t)
{
    SlowHelperJob *job = static_cast<SlowHelperJob *>(arg);
    if (std::this_thread::get_id() != job->caller) {
        if (job->helper_parts.fetch_add(1) == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return;
    }
    auto give_up = Clock::now() + job->patience;
    while (job->helper_parts.load() == 0 && Clock::now() < give_up)
        std::this_thread::yield();
}

void nothing(void *, size_t, size_t) {}

// In a fresh process (a child: it has none of the pool's threads), its first job: the helper
// it starts counts as awake, and keeps the caller waiting 50 ms. Exits 0 when the pool counted
// as late then and the next job was the caller's alone; 1 when the helper took no part; 2 when
// the pool did not count as late (as when the caller was held up between starting the helper
// and publishing the job, long enough for the helper to go to sleep: the job woke it); 3 when
// a helper worked while the pool was late.
[[noreturn]] void first_job_in_child()
{
    SlowHelperJob first;
    ob_workers_run(slow_helper_part, &first, 2);
    if (first.helper_parts.load() == 0)
        _exit(1);
    if (!ob_workers_late())
        _exit(2);
    // For the next 200 ms every job is the caller's alone: up to 16 of 1 ms here, within the
    // first 150 ms (a loaded machine may stretch them).
    auto late_since = Clock::now();
    for (int job = 0; job < 16 && Clock::now() - late_since < std::chrono::milliseconds(150);
         job++) {
        SlowHelperJob alone;
        alone.patience = std::chrono::milliseconds(1);
        ob_workers_run(slow_helper_part, &alone, 2);
        if (alone.helper_parts.load() != 0)
            _exit(3);
    }
    _exit(0);
}

TEST(WorkersLate, OnlyHelpersAwakeAtTheStartAreJudged)
{
    setenv("OMPBATCH_PACK_THREADS", "2", 1); /* one helper: CI machines have two cores */
    setenv("OMPBATCH_HOST_BUSY", "0", 1);    /* late by the helpers alone, not by the load */
    ob_config_reload();
    ob_workers_forget_lateness_for_testing();
    ASSERT_EQ(2u, ob_workers_threads());

    // An awake helper that keeps its caller waiting: late. On a loaded machine the scheduler
    // can spoil a try (exits 1 and 2); one good try of ten is enough.
    int good = 0, not_late = 0;
    for (int attempt = 0; attempt < 10 && good == 0; attempt++) {
        pid_t child = fork();
        ASSERT_GE(child, 0);
        if (child == 0)
            first_job_in_child();
        int status = 0;
        ASSERT_EQ(child, waitpid(child, &status, 0));
        ASSERT_TRUE(WIFEXITED(status));
        int code = WEXITSTATUS(status);
        ASSERT_NE(3, code) << "a helper took part in a job while the pool was late";
        good += code == 0;
        not_late += code == 2;
    }
    EXPECT_EQ(1, good) << "in ten tries a helper never counted as late; " << not_late
                       << " kept their caller waiting 50 ms";

    // A job that wakes the helper from its sleep is not judged, however long the helper takes.
    ob_workers_run(nothing, nullptr, 64); /* starts this process's helper */
    ob_workers_forget_lateness_for_testing();
    int judged = 0;
    for (int attempt = 0; attempt < 5; attempt++) {
        // Long past the helper's watch for work (100 us): it is asleep.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        SlowHelperJob job;
        ob_workers_run(slow_helper_part, &job, 2);
        if (job.helper_parts.load() == 0)
            continue;
        judged++;
        EXPECT_EQ(0, ob_workers_late()) << "a woken helper's wait was taken for the host's load";
        ob_workers_forget_lateness_for_testing();
    }
    EXPECT_GT(judged, 0) << "the helper took no part in five jobs";

    unsetenv("OMPBATCH_PACK_THREADS");
    unsetenv("OMPBATCH_HOST_BUSY");
    ob_config_reload();
}

// A file standing in for /proc/loadavg, read with OMPBATCH_HOST_BUSY unset; skipped on one
// processor, where the host is never taken for busy.
class WorkersLoadFile : public ::testing::Test {
  protected:
    void SetUp() override
    {
        unsetenv("OMPBATCH_HOST_BUSY");
        ob_config_reload();
        cpus = sysconf(_SC_NPROCESSORS_ONLN);
        if (cpus < 2)
            GTEST_SKIP() << "one processor: never taken for busy";
        int fd = mkstemp(path);
        ASSERT_GE(fd, 0);
        close(fd);
    }

    void TearDown() override
    {
        ob_workers_load_file_for_testing(nullptr);
        ob_workers_forget_lateness_for_testing();
        std::remove(path);
    }

    // Rewrites the file in place, as the kernel does /proc/loadavg.
    void write_load(const std::string &text)
    {
        FILE *f = std::fopen(path, "w");
        ASSERT_NE(nullptr, f);
        std::fputs(text.c_str(), f);
        std::fclose(f);
    }

    static std::string load_line(long running)
    {
        return "0.50 0.40 0.30 " + std::to_string(running) + "/812 4242\n";
    }

    long cpus = 0;
    char path[32] = "/tmp/ompbatch_loadavg_XXXXXX";
};

// The host's load as /proc/loadavg gives it: busy when the runnable threads reach the
// processors, read again only after 20 ms, a file it cannot read or parse taken for idle.
TEST_F(WorkersLoadFile, DecidesABusyHost)
{
    write_load(load_line(cpus));
    ob_workers_load_file_for_testing(path);
    auto read_at = Clock::now();
    EXPECT_EQ(1, ob_host_saturated()) << cpus << " runnable threads on " << cpus << " processors";
    // Within 20 ms the answer stands, whatever the file says now (unless this machine took
    // that long to write the file: then there is nothing to conclude).
    write_load(load_line(1));
    int again = ob_host_saturated();
    if (Clock::now() - read_at < std::chrono::milliseconds(15)) {
        EXPECT_EQ(1, again) << "the file was read again within 20 ms";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    EXPECT_EQ(0, ob_host_saturated()) << "the same descriptor read again after 20 ms";
    EXPECT_EQ(0, ob_workers_late());

    write_load(load_line(cpus - 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    EXPECT_EQ(0, ob_host_saturated()) << "one processor free";
    write_load(load_line(cpus + 5));
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    EXPECT_EQ(1, ob_host_saturated());
    EXPECT_EQ(1, ob_workers_late()) << "a busy host makes the helpers late";

    write_load("not a load line\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    EXPECT_EQ(0, ob_host_saturated()) << "an unreadable count is no load";
    ob_workers_load_file_for_testing("/nonexistent/loadavg");
    EXPECT_EQ(0, ob_host_saturated()) << "no file is no load";

    // The variable still decides over the file.
    ob_workers_load_file_for_testing(path);
    write_load(load_line(cpus + 5));
    setenv("OMPBATCH_HOST_BUSY", "0", 1);
    ob_config_reload();
    EXPECT_EQ(0, ob_host_saturated());
    unsetenv("OMPBATCH_HOST_BUSY");
    ob_config_reload();
    EXPECT_EQ(1, ob_host_saturated());
}

// The program closes every descriptor and opens a file of its own at the number the load file
// had, as some do after a fork: the library must leave that file as it is (open, its bytes and
// offset unchanged), not take its bytes for the load, and open the load file again.
TEST_F(WorkersLoadFile, ADescriptorTheProgramTookOverIsLeftAlone)
{
    write_load(load_line(cpus));
    char real_load[PATH_MAX];
    ASSERT_NE(nullptr, realpath(path, real_load));
    // The descriptor the library holds on the load file, found through /proc/self/fd.
    auto library_fd = [&]() {
        for (int n = 0; n < 4096; n++) {
            char link[64], target[PATH_MAX];
            std::snprintf(link, sizeof link, "/proc/self/fd/%d", n);
            ssize_t len = readlink(link, target, sizeof target - 1);
            if (len <= 0)
                continue;
            target[len] = '\0';
            if (std::strcmp(target, real_load) == 0)
                return n;
        }
        return -1;
    };

    ob_workers_load_file_for_testing(path);
    ASSERT_EQ(1, ob_host_saturated());
    int held = library_fd();
    ASSERT_GE(held, 0) << "the library keeps no descriptor on the load file";

    char mine[] = "/tmp/ompbatch_program_XXXXXX";
    int own = mkstemp(mine);
    ASSERT_GE(own, 0);
    const std::string data = "the program's own bytes, no load line\n";
    ASSERT_EQ((ssize_t)data.size(), write(own, data.data(), data.size()));
    ASSERT_EQ(held, dup2(own, held)); // closes the library's descriptor, reuses its number
    close(own);
    off_t offset = lseek(held, 0, SEEK_CUR);
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    EXPECT_EQ(1, ob_host_saturated()) << "the program's file was read for the load";
    EXPECT_NE(-1, fcntl(held, F_GETFD)) << "the library closed the program's descriptor";
    EXPECT_EQ(offset, lseek(held, 0, SEEK_CUR)) << "the program's file offset moved";
    char back[128] = {0};
    EXPECT_EQ((ssize_t)data.size(), pread(held, back, sizeof back - 1, 0));
    EXPECT_EQ(data, std::string(back));
    int reopened = library_fd();
    EXPECT_GE(reopened, 0) << "the load file was not opened again";
    EXPECT_NE(held, reopened);

    // Closed without anything at its number: opened again too.
    if (reopened >= 0) {
        close(reopened);
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
        EXPECT_EQ(1, ob_host_saturated()) << "a closed descriptor ended the reading";
        EXPECT_GE(library_fd(), 0);
    }

    close(held);
    std::remove(mine);
}

} // namespace
