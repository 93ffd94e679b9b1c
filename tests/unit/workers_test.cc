// The pack threads (plugin/core/workers.c) when a thread cannot be started: the job runs on
// its caller, every part exactly once, the failure is said once, and a later job starts the
// threads it could not. Its own binary: the pool's threads, once started, live as long as the
// process, so no earlier job may have started them. Then jobs begun and joined later.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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

size_t parts_done(const Job &job)
{
    size_t n = 0;
    for (const std::atomic<int> &d : job.done)
        n += d.load() > 0;
    return n;
}

// A job begun is taken by the helpers while its caller does something else, and the join
// leaves every part done once; late helpers leave the whole job to the join, on the caller.
TEST(Workers, ABegunJobRunsWhileItsCallerIsAwayAndTheJoinFinishesIt)
{
    setenv("OMPBATCH_PACK_THREADS", "4", 1);
    setenv("OMPBATCH_HOST_BUSY", "0", 1);
    ob_config_reload();
    ob_workers_forget_lateness_for_testing();
    for (int round = 0; round < 5; round++) {
        Job job(16);
        ob_workers_job handle;
        ob_workers_begin(&handle, do_part, &job, job.done.size());
        // Away: until a helper has done a part (a loaded machine may take a while to run one).
        for (int waited = 0; waited < 2000 && parts_done(job) == 0; waited++)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        EXPECT_LT(0u, parts_done(job)) << "no helper took a part while the caller was away";
        ob_workers_join(&handle);
        expect_each_part_once(job);
    }

    ob_workers_mark_late_for_testing();
    Job alone(16);
    ob_workers_job handle;
    ob_workers_begin(&handle, do_part, &alone, alone.done.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(0u, parts_done(alone)) << "late helpers were given the job";
    ob_workers_join(&handle);
    expect_each_part_once(alone);
    ASSERT_EQ(1u, alone.threads.size());
    EXPECT_EQ(*alone.threads.begin(), std::this_thread::get_id());
    ob_workers_forget_lateness_for_testing();
    unsetenv("OMPBATCH_PACK_THREADS");
    unsetenv("OMPBATCH_HOST_BUSY");
    ob_config_reload();
}

} // namespace
