// The pack threads (plugin/core/workers.c) when a thread cannot be started: the job runs on
// its caller, every part exactly once, the failure is said once, and a later job starts the
// threads it could not. Its own binary: the pool's threads, once started, live as long as the
// process, so no earlier job may have started them.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "plugin/core/config.h"
#include "plugin/core/workers.h"
}

namespace {

struct Job {
    std::vector<std::atomic<int>> done;
    std::mutex lock;
    std::set<std::thread::id> threads;
    explicit Job(size_t parts) : done(parts) {}
};

void do_part(void *arg, size_t part, size_t parts)
{
    Job *job = static_cast<Job *>(arg);
    EXPECT_EQ(job->done.size(), parts);
    job->done[part].fetch_add(1);
    std::lock_guard<std::mutex> hold(job->lock);
    job->threads.insert(std::this_thread::get_id());
}

void expect_each_part_once(const Job &job)
{
    for (size_t k = 0; k < job.done.size(); k++)
        EXPECT_EQ(1, job.done[k].load()) << "part " << k;
}

TEST(Workers, AThreadThatCannotStartLeavesTheJobToItsCaller)
{
    setenv("OMPBATCH_PACK_THREADS", "4", 1);
    setenv("OMPBATCH_HOST_BUSY", "0", 1); /* tests run beside each other */
    setenv("OMPBATCH_VERBOSE", "1", 1);
    ob_config_reload();
    ob_workers_forget_lateness_for_testing();
    ASSERT_EQ(4u, ob_workers_threads());

    ob_workers_fail_starts_for_testing(1);
    Job first(64);
    testing::internal::CaptureStderr();
    ob_workers_run(do_part, &first, first.done.size());
    std::string said = testing::internal::GetCapturedStderr();
    expect_each_part_once(first);
    EXPECT_EQ(1u, first.threads.size()) << "a helper ran although none could start";
    EXPECT_EQ(*first.threads.begin(), std::this_thread::get_id());
    EXPECT_NE(std::string::npos, said.find("cannot start a pack thread (error 11)")) << said;

    // The next job starts the helpers; its parts are done once each whoever takes them.
    for (int round = 0; round < 20; round++) {
        Job next(64);
        testing::internal::CaptureStderr();
        ob_workers_run(do_part, &next, next.done.size());
        said = testing::internal::GetCapturedStderr();
        expect_each_part_once(next);
        EXPECT_EQ(std::string::npos, said.find("cannot start")) << said;
    }
    unsetenv("OMPBATCH_PACK_THREADS");
    unsetenv("OMPBATCH_HOST_BUSY");
    unsetenv("OMPBATCH_VERBOSE");
    ob_config_reload();
}

} // namespace
