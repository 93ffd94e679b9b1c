/*
 * The OpenMP hook test of a program that forks while its arrays are mapped, as programs that
 * start helpers with fork() do: the parent goes on updating its mapped arrays while the child
 * is alive, and its copies must reach its own pages; the child's copies of the arrays must
 * keep what they held at the fork, whatever the parent's copies do.
 *
 * Pages shared copy-on-write after a fork are where copies straight between host pages and the
 * device could go wrong: the first side to write gets a new page, and a copy engine still
 * reading or writing the old one would send stale bytes to the device or bring the device's
 * into the other process. The program's own arrays are such memory once the hook has
 * registered them, and the hook's pinned staging is whatever the driver made of it, where the
 * parent packs and unpacks after the fork (fork_mapped_registered_test runs with
 * OMPBATCH_REGISTER_MB: on a GPU the two arrays, updated every step, are registered within
 * the first steps). At the first fork the parent writes first, at the second the child does.
 *
 * Usage: fork_mapped <seed> [steps] [MiB]   (default 32 steps of two arrays of 8 MiB and a bit)
 */
#include <sys/wait.h>
#include <unistd.h>

#include "hook_test.h"

/* A child waiting on `go`, that then finds its arrays as the fork left them, or as it wrote
 * them itself when `writes_first`, and says so in its exit status. */
typedef struct child {
    pid_t pid;
    int go;    /* the parent's end of the pipe the child waits on */
    int ready; /* the child's end it writes when it has written its arrays */
} child;

/* Child side: returns its exit status. It never touches OpenMP, the hook or stdio buffers. */
static int child_run(int go, int ready, int writes_first, ht_buf *a, ht_buf *b)
{
    char byte = 0;
    if (writes_first) {
        /* Its own bytes in every page first: the pages split on the child's side. */
        for (size_t j = 0; j < a->n; j++) {
            a->host[j] = a->p[j] = (unsigned char)(a->p[j] ^ 0xA5);
            b->host[j] = b->p[j] = (unsigned char)(b->p[j] ^ 0x5A);
        }
        if (write(ready, "r", 1) != 1)
            return 3;
    }
    if (read(go, &byte, 1) != 1)
        return 4;
    /* The parent has written, copied both ways and checked its own arrays meanwhile. */
    if (memcmp(a->p, a->host, a->n) != 0)
        return 5;
    if (memcmp(b->p, b->host, b->n) != 0)
        return 6;
    return 0;
}

static child fork_child(int writes_first, ht_buf *a, ht_buf *b)
{
    int go[2], ready[2];
    child c = {-1, -1, -1};
    if (pipe(go) != 0 || pipe(ready) != 0) {
        ob_check_fail_at(__FILE__, __LINE__, "pipe failed");
        return c;
    }
    fflush(stdout);
    fflush(stderr);
    c.pid = fork();
    if (c.pid == 0) {
        close(go[1]);
        close(ready[0]);
        _exit(child_run(go[0], ready[1], writes_first, a, b));
    }
    close(go[0]);
    close(ready[1]);
    if (c.pid < 0) {
        ob_check_fail_at(__FILE__, __LINE__, "fork failed");
        close(go[1]);
        close(ready[0]);
        return c;
    }
    c.go = go[1];
    c.ready = ready[0];
    char byte;
    if (writes_first && read(c.ready, &byte, 1) != 1)
        ob_check_fail_at(__FILE__, __LINE__, "the child did not write its arrays");
    return c;
}

static void finish_child(child *c, const char *what)
{
    if (c->pid <= 0)
        return;
    if (write(c->go, "g", 1) != 1)
        ob_check_fail_at(__FILE__, __LINE__, "%s: cannot wake the child", what);
    close(c->go);
    close(c->ready);
    int status = 0;
    if (waitpid(c->pid, &status, 0) != c->pid || !WIFEXITED(status)) {
        ob_check_fail_at(__FILE__, __LINE__, "%s: the child did not exit", what);
        return;
    }
    /* 5: its first array, 6: its second, changed by the parent's writes or copies. */
    OB_CHECK_EQ(0, WEXITSTATUS(status));
}

/* b's device copy becomes a's device copy scrambled by tag, every byte. */
static void derive_on_device(ht_buf *a, ht_buf *b, uint64_t tag)
{
    unsigned char *src = a->p, *dst = b->p;
    size_t n = a->n;
    uint64_t s = ht_seed;
#pragma omp target parallel for map(alloc : src[0:n], dst[0:n]) firstprivate(s, tag, n)
    for (size_t j = 0; j < n; j++)
        dst[j] = src[j] ^ ht_key(s, tag, j);
    for (size_t j = 0; j < n; j++)
        b->dev[j] = a->dev[j] ^ ht_key(ht_seed, tag, j);
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "fork_mapped");
    int steps = argc > 2 ? atoi(argv[2]) : 32;
    size_t mib = argc > 3 ? (size_t)atoi(argv[3]) : 8;
    if (steps < 4 || mib < 1) {
        fprintf(stderr, "fork_mapped: want at least 4 steps and 1 MiB\n");
        return 2;
    }
    uint64_t r = ht_state(1);
    size_t n = (mib << 20) + ht_below(&r, 4096);
    ht_buf a = ht_buf_new(n, 2), b = ht_buf_new(n, 3);
    unsigned char *ap = a.p, *bp = b.p;
#pragma omp target enter data map(to : ap[0:n], bp[0:n])
    int parent_first = steps / 2, child_first = steps - 2;
    for (int step = 0; step < steps; step++) {
        child c = {-1, -1, -1};
        if (step == parent_first || step == child_first)
            c = fork_child(step == child_first, &a, &b);
        uint64_t salt = 100 + 10 * (uint64_t)step;
        ht_buf_host_new(&a, 0, n, salt);
#pragma omp target update to(ap[0:n])
        ht_buf_copied_to(&a, 0, n);
        ht_expect_device(ap, a.dev, n, "fork_mapped: update to");
        derive_on_device(&a, &b, salt + 1);
        ht_buf_poison(&b, salt + 2);
#pragma omp target update from(bp[0:n])
        ht_buf_copied_from(&b, 0, n);
        ht_expect_host(bp, b.host, n, "fork_mapped: update from");
        if (c.pid > 0)
            finish_child(&c, step == child_first ? "child writing first" : "parent writing first");
    }
#pragma omp target exit data map(delete : ap[0:n], bp[0:n])
    ht_report("fork_mapped: first array", ap, n);
    ht_report("fork_mapped: second array", bp, n);
    ht_buf_free(&a);
    ht_buf_free(&b);
    return ob_check_finish("fork_mapped");
}
