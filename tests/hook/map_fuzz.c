/*
 * A mapping fuzzer over the real runtime: a random sequence of OpenMP constructs -- enter data,
 * exit data, update, target regions with maps of their own, `target data` blocks around more
 * of them (nested up to two deep) -- with
 * random map types and modifiers (to, from, tofrom, alloc, release, delete, always, close and
 * ompx_hold on regions)
 * over random sections of arrays of random sizes, some plain heap arrays, some reached through
 * global pointers (PTR_AND_OBJ maps), some through pointer members of global structs (a
 * combined struct entry, the member and its PTR_AND_OBJ object in every construct), and strided
 * updates (columns, a sub-block, strides) over whatever part of a plain array is mapped;
 * with `edges`, zero-size sections of plain arrays (enter, exit, update, `target data`, and
 * in regions) at any byte, at a mapping's ends or one past an array, which the runtime looks
 * up in the entry on either side extended to its base pointer, so that they take and drop
 * references of their array's mapping from below it too, and sections of plain arrays
 * associated with device memory by omp_target_associate_ptr (counts that never fall) and
 * disassociated again. The program keeps a model of which sections are mapped with which
 * counts only to stay clear of constructs the runtime rejects (an explicit section that
 * extends a mapping aborts the program); what happens to the bytes is the runtime's, and
 * compare.sh checks that the hooked runs print exactly what the plain run prints: after every
 * construct a hash of every host array, after every region the sums its kernel computed from
 * the device copies, at the end the hashes once everything is unmapped.
 *
 * Usage: map_fuzz <seed> [constructs] [edges]. The zero-size sections and the associations
 * come with `edges` only: the hook leaves the mappings they may reach and associated memory to
 * the runtime (docs/hook.md), so that runs with them batch a little less. Prints one line per construct (its kind and the hashes) and "map_fuzz: N constructs, M
 * checks passed, K failed".
 */
#include "hook_test.h"

#define PLAIN_ARRAYS 6
#define GLOBAL_ARRAYS 2
#define HELD_ARRAYS 2
#define ARRAYS (PLAIN_ARRAYS + GLOBAL_ARRAYS + HELD_ARRAYS)
#define MAX_BYTES 6000

/* The arrays reached through global pointers: clang maps their sections PTR_AND_OBJ. */
static unsigned char *global_a, *global_b;

/* The arrays reached through pointer members of global structs: clang maps hold_a.q[lo:len]
 * as the combined entry of the struct's mapped part, the member q, and q's object
 * (PTR_AND_OBJ, MEMBER_OF). */
typedef struct holder {
    int tag;
    unsigned char *q;
    double after;
    size_t lo, len; /* the section the mapper maps */
} holder;
static holder hold_a, hold_b;

/* The same sections spelled through a mapper: its components are those of hold.q[lo:len]. */
#pragma omp declare mapper(sec : holder h) map(h.q[h.lo:h.len])

typedef struct array {
    unsigned char *p;
    size_t n;
    /* The model: one mapping [lo, hi) or none, and its reference count; an associated
     * mapping's count is infinite, dev the device memory it is associated with. */
    int mapped;
    size_t lo, hi;
    unsigned refs;
    int associated;
    void *dev;
} array;

static array arrays[ARRAYS];
static uint64_t rng;

static size_t pick(size_t bound)
{
    return ht_below(&rng, bound);
}

/* One reference of a mapping fewer: the mapping goes with its last (never an association's). */
static void drop_reference(array *a)
{
    if (!a->associated && --a->refs == 0)
        a->mapped = 0;
}

/* A section [lo, lo + len) of array k: inside its mapping when it has one (len >= 1). */
static void section_inside(const array *a, size_t *lo, size_t *len)
{
    size_t span = a->hi - a->lo;
    *lo = a->lo + pick(span);
    *len = 1 + pick(a->hi - *lo);
    (void)span;
}

static void section_any(const array *a, size_t *lo, size_t *len)
{
    *lo = pick(a->n);
    *len = 1 + pick(a->n - *lo);
}

/* The model against the runtime's table, at the mapping's ends or at three bytes of an
 * unmapped array: a wrong model would end in a construct the runtime rejects. */
static void check_model(void)
{
    int dev = omp_get_default_device();
    for (int k = 0; k < ARRAYS; k++) {
        const array *a = &arrays[k];
        if (a->mapped)
            OB_CHECK(omp_target_is_present(a->p + a->lo, dev) &&
                      omp_target_is_present(a->p + a->hi - 1, dev),
                  "array %d: [%zu, %zu) should be mapped", k, a->lo, a->hi);
        else
            OB_CHECK(!omp_target_is_present(a->p, dev) &&
                      !omp_target_is_present(a->p + a->n / 2, dev) &&
                      !omp_target_is_present(a->p + a->n - 1, dev),
                  "array %d should not be mapped", k);
    }
}

static uint64_t hash_all(void)
{
    check_model();
    uint64_t h = 0;
    for (int k = 0; k < ARRAYS; k++)
        h = ob_test_mix(h ^ ht_fnv(arrays[k].p, arrays[k].n));
    return h;
}

/* The host bytes of array k change (so a later `to` copy shows). */
static void host_writes(int k)
{
    ht_fill_random(arrays[k].p, arrays[k].n, ht_below(&rng, 1u << 30));
}

/* ---- constructs on one array: plain pointers and global pointers are spelled apart --------- */

#define PRAGMA(...) _Pragma(#__VA_ARGS__)

/* enter, exit and update of g[lo:len], for a plain array (g is the parameter p) or a global
 * pointer (g is global_a or global_b; p is unused). */
#define ARRAY_OPS(name, g)                                                                      \
    static void enter_##name(unsigned char *p, size_t lo, size_t len, int how)                  \
    {                                                                                           \
        (void)p;                                                                                \
        switch (how) {                                                                          \
        case 0: { PRAGMA(omp target enter data map(to : g[lo:len])) } break;                  \
        case 1: { PRAGMA(omp target enter data map(alloc : g[lo:len])) } break;               \
        default: { PRAGMA(omp target enter data map(always, to : g[lo:len])) } break;         \
        }                                                                                       \
    }                                                                                           \
    static void exit_##name(unsigned char *p, size_t lo, size_t len, int how)                   \
    {                                                                                           \
        (void)p;                                                                                \
        switch (how) {                                                                          \
        case 0: { PRAGMA(omp target exit data map(from : g[lo:len])) } break;                 \
        case 1: { PRAGMA(omp target exit data map(release : g[lo:len])) } break;              \
        case 2: { PRAGMA(omp target exit data map(always, from : g[lo:len])) } break;         \
        default: { PRAGMA(omp target exit data map(delete : g[lo:len])) } break;              \
        }                                                                                       \
    }                                                                                           \
    static void update_##name(unsigned char *p, size_t lo, size_t len, int to)                  \
    {                                                                                           \
        (void)p;                                                                                \
        if (to) {                                                                               \
            PRAGMA(omp target update to(g[lo:len]))                                             \
        } else {                                                                                \
            PRAGMA(omp target update from(g[lo:len]))                                           \
        }                                                                                       \
    }

ARRAY_OPS(plain, p)
ARRAY_OPS(global_a, global_a)
ARRAY_OPS(global_b, global_b)
ARRAY_OPS(held_a, hold_a.q)
ARRAY_OPS(held_b, hold_b.q)

/* enter, exit and update of h.q[lo:len] through the mapper (p is unused). */
#define MAPPER_OPS(name, h)                                                                     \
    static void enter_##name(unsigned char *p, size_t lo, size_t len, int how)                  \
    {                                                                                           \
        (void)p;                                                                                \
        h.lo = lo, h.len = len;                                                                 \
        switch (how) {                                                                          \
        case 0: { PRAGMA(omp target enter data map(mapper(sec), to : h)) } break;             \
        case 1: { PRAGMA(omp target enter data map(mapper(sec), alloc : h)) } break;          \
        default: { PRAGMA(omp target enter data map(mapper(sec), always, to : h)) } break;    \
        }                                                                                       \
    }                                                                                           \
    static void exit_##name(unsigned char *p, size_t lo, size_t len, int how)                   \
    {                                                                                           \
        (void)p;                                                                                \
        h.lo = lo, h.len = len;                                                                 \
        switch (how) {                                                                          \
        case 0: { PRAGMA(omp target exit data map(mapper(sec), from : h)) } break;            \
        case 1: { PRAGMA(omp target exit data map(mapper(sec), release : h)) } break;         \
        case 2: { PRAGMA(omp target exit data map(mapper(sec), always, from : h)) } break;    \
        default: { PRAGMA(omp target exit data map(mapper(sec), delete : h)) } break;         \
        }                                                                                       \
    }                                                                                           \
    static void update_##name(unsigned char *p, size_t lo, size_t len, int to)                  \
    {                                                                                           \
        (void)p;                                                                                \
        h.lo = lo, h.len = len;                                                                 \
        if (to) {                                                                               \
            PRAGMA(omp target update to(mapper(sec) : h))                                       \
        } else {                                                                                \
            PRAGMA(omp target update from(mapper(sec) : h))                                     \
        }                                                                                       \
    }                                                                                           \
    /* A plain array's section and h's, in one construct each way. */                           \
    static void enter_plain_and_##name(unsigned char *p, size_t lo, size_t len, size_t hlo,     \
                                       size_t hlen)                                             \
    {                                                                                           \
        h.lo = hlo, h.len = hlen;                                                               \
        PRAGMA(omp target enter data map(to : p[lo:len]) map(mapper(sec), to : h))              \
    }                                                                                           \
    static void exit_plain_and_##name(unsigned char *p, size_t lo, size_t len, size_t hlo,      \
                                      size_t hlen, int from)                                    \
    {                                                                                           \
        h.lo = hlo, h.len = hlen;                                                               \
        if (from) {                                                                             \
            PRAGMA(omp target exit data map(from : p[lo:len]) map(mapper(sec), from : h))       \
        } else {                                                                                \
            PRAGMA(omp target exit data map(release : p[lo:len]) map(mapper(sec), release : h)) \
        }                                                                                       \
    }

MAPPER_OPS(mapped_a, hold_a)
MAPPER_OPS(mapped_b, hold_b)

/* Strided updates of a plain array seen as rows of STRIDED_COLS bytes (constant bounds:
 * clang 16 describes a section as non-contiguous only then): a column, a strided column, a
 * sub-block (which libomptarget copies one byte a row of) and an inner stride, over the first
 * STRIDED_SPAN bytes, whatever of them is mapped. */
#define STRIDED_COLS 16
#define STRIDED_SPAN (8 * STRIDED_COLS)

static void update_strided(unsigned char *p, int variant, int to)
{
    unsigned char(*g)[STRIDED_COLS] = (unsigned char(*)[STRIDED_COLS])(void *)p;
    switch (variant * 2 + to) {
    case 0: { PRAGMA(omp target update from(g[0:8][3:1])) } break;
    case 1: { PRAGMA(omp target update to(g[0:8][3:1])) } break;
    case 2: { PRAGMA(omp target update from(g[0:4:2][15:1])) } break;
    case 3: { PRAGMA(omp target update to(g[0:4:2][15:1])) } break;
    case 4: { PRAGMA(omp target update from(g[2:6][0:5])) } break;
    case 5: { PRAGMA(omp target update to(g[2:6][0:5])) } break;
    case 6: { PRAGMA(omp target update from(g[1:7][4:6:2])) } break;
    default: { PRAGMA(omp target update to(g[1:7][4:6:2])) } break;
    }
}

typedef void (*array_op)(unsigned char *p, size_t lo, size_t len, int how);
typedef void (*data_op)(unsigned char *p, size_t lo, size_t len, int how, int inner, int depth);

/* How array k is spelled in a construct: its functions (plain arrays pass their pointer). */
typedef struct spelling {
    array_op enter, exit, update;
    data_op data;
    int deletes; /* `delete` removes the mapping (clang 16 keeps the delete bit out of a
                  * mapper's components: through the mapper it releases one reference) */
} spelling;

static const spelling *spelled(int k);

static void enter(int k, size_t lo, size_t len, int how)
{
    spelled(k)->enter(arrays[k].p, lo, len, how);
}

/* Returns whether a `delete` (how 3) removed the mapping rather than one reference. */
static int exit_data(int k, size_t lo, size_t len, int how)
{
    const spelling *sp = spelled(k);
    sp->exit(arrays[k].p, lo, len, how);
    return sp->deletes;
}

static void update(int k, size_t lo, size_t len, int to)
{
    spelled(k)->update(arrays[k].p, lo, len, to);
}

/* ---- target regions over two plain arrays ---------------------------------------------------- */

/* A region mapping sections X[xl:xn] and Y[yl:yn] with the map kinds `how` picks; its kernel
 * sums the bytes it sees and XORs every byte of the sections it may write with key. X and Y
 * are the parameters x and y (plain arrays) or the two global pointers (PTR_AND_OBJ maps). */
#define REGION_OPS(name, X, Y)                                                                  \
    static uint64_t region_##name(int how, unsigned char *x, size_t xl, size_t xn,              \
                                  unsigned char *y, size_t yl, size_t yn, unsigned char key)    \
    {                                                                                           \
        uint64_t sum = 0;                                                                       \
        (void)x, (void)y;                                                                       \
        switch (how) {                                                                          \
        case 0: PRAGMA(omp target map(to : X[xl:xn], Y[yl:yn]) map(tofrom : sum))               \
            REGION_BODY(X, Y) break;                                                            \
        case 1: PRAGMA(omp target map(tofrom : X[xl:xn], Y[yl:yn]) map(tofrom : sum))           \
            REGION_BODY(X, Y) break;                                                            \
        case 2: PRAGMA(omp target map(to : X[xl:xn]) map(from : Y[yl:yn]) map(tofrom : sum))    \
            REGION_BODY(X, Y) break;                                                            \
        case 3:                                                                                 \
            PRAGMA(omp target map(always, tofrom : X[xl:xn], Y[yl:yn]) map(tofrom : sum))       \
            REGION_BODY(X, Y) break;                                                            \
        case 4: PRAGMA(omp target map(alloc : X[xl:xn]) map(from : Y[yl:yn]) map(tofrom : sum)) \
            REGION_BODY(X, Y) break;                                                            \
        default:                                                                                \
            PRAGMA(omp target map(ompx_hold, tofrom : X[xl:xn]) map(close, to : Y[yl:yn])       \
                       map(tofrom : sum))                                                       \
            REGION_BODY(X, Y) break;                                                            \
        }                                                                                       \
        return sum;                                                                             \
    }

#define REGION_BODY(X, Y)                                                                       \
    {                                                                                           \
        for (size_t j = 0; j < xn; j++) {                                                       \
            sum += X[xl + j] * (j + 1);                                                         \
            X[xl + j] ^= key;                                                                   \
        }                                                                                       \
        for (size_t j = 0; j < yn; j++) {                                                       \
            sum += Y[yl + j] * (j + 3);                                                         \
            Y[yl + j] ^= (unsigned char)(key + 1);                                              \
        }                                                                                       \
    }

REGION_OPS(plain, x, y)
REGION_OPS(globals, global_a, global_b)
REGION_OPS(held, hold_a.q, hold_b.q)

/* ---- the model --------------------------------------------------------------------------------- */

/* A section of a plain array a region may map: inside its mapping (counted there, present),
 * or the array unmapped (a temporary mapping). `alloc` sections of unmapped arrays hold
 * unspecified bytes on the device; the kernel reads them, so those stay inside mappings. */
static int region_section(const array *a, size_t *lo, size_t *len, int alloc)
{
    if (a->mapped) {
        section_inside(a, lo, len);
        return 1;
    }
    if (alloc)
        return 0;
    section_any(a, lo, len);
    return 1;
}

static unsigned long constructs_done;
static int edges; /* zero-size sections and associations too */
static void one_construct(int depth);

/* A `target data` block over g[lo:len] (how: 0 tofrom, 1 to, 2 from, 3 alloc) around `inner`
 * random constructs. */
#define DATA_OPS(name, g)                                                                       \
    static void data_##name(unsigned char *p, size_t lo, size_t len, int how, int inner,       \
                            int depth)                                                          \
    {                                                                                           \
        (void)p;                                                                                \
        switch (how) {                                                                          \
        case 0: PRAGMA(omp target data map(tofrom : g[lo:len]))                                 \
            for (int i = 0; i < inner; i++) one_construct(depth + 1);                           \
            break;                                                                              \
        case 1: PRAGMA(omp target data map(to : g[lo:len]))                                     \
            for (int i = 0; i < inner; i++) one_construct(depth + 1);                           \
            break;                                                                              \
        case 2: PRAGMA(omp target data map(from : g[lo:len]))                                   \
            for (int i = 0; i < inner; i++) one_construct(depth + 1);                           \
            break;                                                                              \
        default: PRAGMA(omp target data map(alloc : g[lo:len]))                                 \
            for (int i = 0; i < inner; i++) one_construct(depth + 1);                           \
            break;                                                                              \
        }                                                                                       \
    }

DATA_OPS(plain, p)
DATA_OPS(global_a, global_a)
DATA_OPS(global_b, global_b)
DATA_OPS(held_a, hold_a.q)
DATA_OPS(held_b, hold_b.q)

/* ---- zero-size sections and associations ----------------------------------------------------- */

/* The base pointer the runtime keeps with array k's mapping: the array itself, also for the
 * objects of global pointers and pointer members (a PTR_AND_OBJ item's object takes the value
 * of its pointer as base); an associated section is its own base. */
static uintptr_t entry_base(int k)
{
    const array *a = &arrays[k];
    return (uintptr_t)(a->associated ? a->p + a->lo : a->p);
}

/* The mapping a zero-size section at address at reaches, as libomptarget 16 and 19 look it
 * up: the entry beginning at or below it if at lies before that entry's end (or its base),
 * else the first entry above it if at is not below that entry's base; -1 for none. So a
 * section below an array's mapping reaches it, one at or past its end does not. Only the
 * arrays' mappings count: the other entries of the runtime's table (the pointers themselves,
 * the structs' members) lie in static storage, below every heap address. */
static int zero_size_reaches(uintptr_t at)
{
    int below = -1, above = -1;
    for (int k = 0; k < ARRAYS; k++) {
        const array *a = &arrays[k];
        if (!a->mapped)
            continue;
        uintptr_t begin = (uintptr_t)(a->p + a->lo);
        if (begin <= at && (below < 0 || begin > (uintptr_t)(arrays[below].p + arrays[below].lo)))
            below = k;
        if (begin > at && (above < 0 || begin < (uintptr_t)(arrays[above].p + arrays[above].lo)))
            above = k;
    }
    if (below >= 0 && (at < (uintptr_t)(arrays[below].p + arrays[below].hi) ||
                       at < entry_base(below)))
        return below;
    if (above >= 0 && at >= entry_base(above))
        return above;
    return -1;
}

/* A byte of plain array k for a zero-size section: often at its mapping's ends, one before
 * them, or one past the array. */
static size_t zero_size_offset(const array *a)
{
    switch (pick(5)) {
    case 0: return a->mapped ? a->lo : 0;
    case 1: return a->mapped ? a->hi : a->n;
    case 2: return a->mapped && a->lo > 0 ? a->lo - 1 : 0;
    default: return pick(a->n + 1);
    }
}

/* A zero-size section p[x:0] of plain array k in an enter, an exit, an update or a `target
 * data` block: the mapping it reaches (zero_size_reaches) gains or loses a reference; no byte
 * moves. */
static void zero_size_construct(int k, int depth)
{
    array *a = &arrays[k];
    size_t x = zero_size_offset(a);
    uintptr_t at = (uintptr_t)(a->p + x);
    int reached = zero_size_reaches(at);
    int what = (int)pick(depth < 2 ? 4 : 3), how = (int)pick(4);
    if (what == 3) {
        int inner = 1 + (int)pick(3);
        printf("%lu zero-size data %d [%zu,+0) how %d reaches %d, %d inside {\n",
               constructs_done, k, x, how, reached, inner);
        constructs_done++;
        if (reached >= 0)
            arrays[reached].refs++;
        data_plain(a->p, x, 0, how, inner, depth);
        /* The block's end looks the section up again, in the table as the inner constructs
         * left it. */
        reached = zero_size_reaches(at);
        if (reached >= 0)
            drop_reference(&arrays[reached]);
        printf("} end of zero-size data %d reached %d: %016" PRIx64 "\n", k, reached,
               hash_all());
        return;
    }
    if (what == 0) {
        enter_plain(a->p, x, 0, how % 3);
        if (reached >= 0)
            arrays[reached].refs++;
    } else if (what == 1) {
        exit_plain(a->p, x, 0, how);
        if (reached >= 0) {
            if (how == 3 && !arrays[reached].associated)
                arrays[reached].refs = 1; /* `delete` */
            drop_reference(&arrays[reached]);
        }
    } else {
        if (how & 1)
            host_writes(k);
        update_plain(a->p, x, 0, how & 1);
    }
    printf("%lu zero-size %s %d [%zu,+0) how %d reaches %d: %016" PRIx64 "\n", constructs_done,
           what == 0 ? "enter" : what == 1 ? "exit" : "update", k, x, how, reached, hash_all());
    constructs_done++;
}

/* Plain array k's section [lo, lo + len) associated with device memory at a random offset,
 * first given the host's bytes. */
static void associate(int k)
{
    array *a = &arrays[k];
    int dev = omp_get_default_device(), host = omp_get_initial_device();
    size_t lo, len, offset = pick(64);
    section_any(a, &lo, &len);
    unsigned char *mem = omp_target_alloc(offset + len, dev);
    OB_CHECK(mem != NULL, "omp_target_alloc of %zu bytes", offset + len);
    if (mem == NULL)
        return;
    OB_CHECK(omp_target_memcpy(mem, a->p + lo, len, offset, 0, dev, host) == 0,
             "omp_target_memcpy into the association's memory");
    int rc = omp_target_associate_ptr(a->p + lo, mem, len, offset, dev);
    OB_CHECK(rc == 0, "omp_target_associate_ptr of array %d [%zu,+%zu): %d", k, lo, len, rc);
    a->mapped = 1, a->associated = 1, a->lo = lo, a->hi = lo + len, a->refs = 1, a->dev = mem;
    if (pick(2))
        host_writes(k);
    printf("%lu associate %d [%zu,+%zu) offset %zu: %016" PRIx64 "\n", constructs_done, k, lo,
           len, offset, hash_all());
}

static void disassociate(int k)
{
    array *a = &arrays[k];
    int dev = omp_get_default_device();
    int rc = omp_target_disassociate_ptr(a->p + a->lo, dev);
    OB_CHECK(rc == 0, "omp_target_disassociate_ptr of array %d: %d", k, rc);
    omp_target_free(a->dev, dev);
    a->mapped = 0, a->associated = 0, a->dev = NULL;
    printf("%lu disassociate %d: %016" PRIx64 "\n", constructs_done, k, hash_all());
}

/* Arrays held by the structs are spelled through their pointer member or through the mapper,
 * at random, construct by construct -- except `target data` blocks: libomptarget 16 leaves a
 * reference behind at the end of a block that maps a section inside an existing mapping
 * through a mapper, which the model does not follow. */
static const spelling *spelled_as(int k, int may_use_mapper)
{
    static const spelling plain = {enter_plain, exit_plain, update_plain, data_plain, 1};
    static const spelling others[GLOBAL_ARRAYS + 2 * HELD_ARRAYS] = {
        {enter_global_a, exit_global_a, update_global_a, data_global_a, 1},
        {enter_global_b, exit_global_b, update_global_b, data_global_b, 1},
        {enter_held_a, exit_held_a, update_held_a, data_held_a, 1},
        {enter_held_b, exit_held_b, update_held_b, data_held_b, 1},
        /* No data blocks through the mapper (spelled_as): none to name. */
        {enter_mapped_a, exit_mapped_a, update_mapped_a, NULL, 0},
        {enter_mapped_b, exit_mapped_b, update_mapped_b, NULL, 0},
    };
    if (k < PLAIN_ARRAYS)
        return &plain;
    if (k >= PLAIN_ARRAYS + GLOBAL_ARRAYS && may_use_mapper && pick(2))
        k += HELD_ARRAYS;
    return &others[k - PLAIN_ARRAYS];
}

static const spelling *spelled(int k)
{
    return spelled_as(k, 1);
}

/* A plain array and a held one in one construct, the held one through the mapper. */
static void enter_mixed(int k, size_t lo, size_t len, int h, size_t hlo, size_t hlen)
{
    (h == 0 ? enter_plain_and_mapped_a : enter_plain_and_mapped_b)(arrays[k].p, lo, len, hlo,
                                                                   hlen);
}

static void exit_mixed(int k, size_t lo, size_t len, int h, size_t hlo, size_t hlen, int from)
{
    (h == 0 ? exit_plain_and_mapped_a : exit_plain_and_mapped_b)(arrays[k].p, lo, len, hlo,
                                                                  hlen, from);
}

/* A section an enter or a block maps: inside the mapping (one reference more), or a new
 * mapping of a random section; the host bytes may change first (so a `to` copy shows). */
static void take_reference(int k, size_t *lo, size_t *len)
{
    array *a = &arrays[k];
    if (a->mapped) {
        section_inside(a, lo, len);
    } else {
        section_any(a, lo, len);
        a->mapped = 1, a->lo = *lo, a->hi = *lo + *len, a->refs = 0;
    }
    a->refs++;
    if (pick(2))
        host_writes(k);
}

/* The end of a `target data` block as the runtime makes it: its section's reference goes if
 * the section still lies inside a mapping (an inner `delete` may have removed it, an inner
 * enter made another). */
static void data_block(int k, int depth)
{
    array *a = &arrays[k];
    size_t lo, len;
    /* A fresh mapping gets defined bytes (to, tofrom); from and alloc only where mapped. */
    int how = a->mapped ? (int)pick(4) : (int)pick(2);
    take_reference(k, &lo, &len);
    int inner = 1 + (int)pick(4);
    printf("%lu data %d [%zu,+%zu) how %d, %d inside {\n", constructs_done, k, lo, len, how,
           inner);
    constructs_done++;
    spelled_as(k, 0)->data(a->p, lo, len, how, inner, depth);
    if (a->mapped && lo >= a->lo && lo + len <= a->hi)
        drop_reference(a);
    printf("} end of data %d: %016" PRIx64 "\n", k, hash_all());
}

static void one_construct(int depth)
{
    int k = (int)pick(ARRAYS);
    array *a = &arrays[k];
    size_t lo = 0, len = 0;
    switch (pick(14)) {
    case 11: /* a target data block around a few constructs */
        if (depth >= 2)
            return;
        data_block(k, depth);
        return;
    case 12: /* with edges: a zero-size section of a plain array, half as often as the others */
        if (edges && pick(2))
            zero_size_construct((int)pick(PLAIN_ARRAYS), depth);
        return;
    case 13: { /* with edges: an association of a plain array's section (a third as often as
              * the others), or its end */
        if (!edges)
            return;
        int kp = (int)pick(PLAIN_ARRAYS);
        if (!arrays[kp].mapped && pick(3) == 0)
            associate(kp);
        else if (arrays[kp].associated)
            disassociate(kp);
        else
            return;
        break;
    }
    case 10: { /* a plain array and a held one (through the mapper) in one enter or exit */
        int kp = (int)pick(PLAIN_ARRAYS), h = (int)pick(HELD_ARRAYS);
        int kh = PLAIN_ARRAYS + GLOBAL_ARRAYS + h;
        array *ap = &arrays[kp], *ah = &arrays[kh];
        size_t hlo, hlen;
        int enter_them = !(ap->mapped && ah->mapped) || pick(2);
        if (enter_them) {
            take_reference(kp, &lo, &len);
            take_reference(kh, &hlo, &hlen);
            enter_mixed(kp, lo, len, h, hlo, hlen);
        } else {
            int from = (int)pick(2);
            section_inside(ap, &lo, &len);
            section_inside(ah, &hlo, &hlen);
            drop_reference(ap);
            drop_reference(ah);
            exit_mixed(kp, lo, len, h, hlo, hlen, from);
        }
        printf("%lu %s %d [%zu,+%zu) and %d [%zu,+%zu): %016" PRIx64 "\n", constructs_done,
               enter_them ? "enter" : "exit", kp, lo, len, kh, hlo, hlen, hash_all());
        break;
    }
    case 0:
    case 1: { /* enter: a new mapping, or another reference inside the mapping */
        int how = (int)pick(3), fresh = !a->mapped;
        take_reference(k, &lo, &len);
        enter(k, lo, len, how);
        /* A fresh `alloc` mapping holds unspecified bytes, which a later `from` or kernel would
         * print: define them at once. */
        if (fresh && how == 1)
            update(k, lo, len, 1);
        printf("%lu enter %d [%zu,+%zu) how %d: %016" PRIx64 "\n", constructs_done, k, lo, len,
               how, hash_all());
        break;
    }
    case 2:
    case 3: { /* exit inside the mapping: from, release, always from, delete */
        if (!a->mapped)
            return;
        int how = (int)pick(4);
        section_inside(a, &lo, &len);
        if (exit_data(k, lo, len, how) && how == 3 && !a->associated)
            a->refs = 1;
        drop_reference(a);
        printf("%lu exit %d [%zu,+%zu) how %d: %016" PRIx64 "\n", constructs_done, k, lo, len,
               how, hash_all());
        break;
    }
    case 4:
    case 5:
    case 6: { /* update: inside, partly inside or outside the mapping (the last two: nothing) */
        int to = (int)pick(2);
        if (k < PLAIN_ARRAYS && a->n >= STRIDED_SPAN && pick(3) == 0) {
            int variant = (int)pick(4);
            if (to)
                host_writes(k);
            update_strided(a->p, variant, to);
            printf("%lu strided update %s %d variant %d: %016" PRIx64 "\n", constructs_done,
                   to ? "to" : "from", k, variant, hash_all());
            break;
        }
        if (a->mapped && pick(4) != 0)
            section_inside(a, &lo, &len);
        else
            section_any(a, &lo, &len);
        if (to)
            host_writes(k);
        update(k, lo, len, to);
        printf("%lu update %s %d [%zu,+%zu): %016" PRIx64 "\n", constructs_done,
               to ? "to" : "from", k, lo, len, hash_all());
        break;
    }
    default: { /* a target region over two different plain arrays, the two globals, or the
              * two struct members */
        int spelling = (int)pick(4); /* 0, 1 plain; 2 globals; 3 struct members */
        int kx = (int)pick(PLAIN_ARRAYS), ky = (int)((kx + 1 + pick(PLAIN_ARRAYS - 1)) %
                                                     PLAIN_ARRAYS);
        if (spelling == 2)
            kx = PLAIN_ARRAYS, ky = PLAIN_ARRAYS + 1;
        if (spelling == 3)
            kx = PLAIN_ARRAYS + GLOBAL_ARRAYS, ky = kx + 1;
        int how = (int)pick(6);
        size_t xl, xn, yl, yn;
        /* Kernels read every section they map: unspecified device bytes (a fresh `alloc` or
         * `from` section) would print differently from run to run, so those only where the
         * array is mapped already. */
        int x_fresh_unset = how == 4, y_fresh_unset = how == 2 || how == 4;
        if (!region_section(&arrays[kx], &xl, &xn, x_fresh_unset) ||
            !region_section(&arrays[ky], &yl, &yn, y_fresh_unset))
            return;
        /* Now and then a zero-size section of a plain array: whatever it reaches gains a
         * reference at the region's start and loses it at its end. */
        if (edges && spelling < 2 && pick(12) == 0)
            xl = zero_size_offset(&arrays[kx]), xn = 0;
        if (pick(2))
            host_writes(kx);
        unsigned char key = (unsigned char)(1 + pick(255));
        uint64_t (*region)(int, unsigned char *, size_t, size_t, unsigned char *, size_t,
                           size_t, unsigned char) = spelling == 2   ? region_globals
                                                    : spelling == 3 ? region_held
                                                                    : region_plain;
        uint64_t sum = region(how, arrays[kx].p, xl, xn, arrays[ky].p, yl, yn, key);
        printf("%lu region %d: %d [%zu,+%zu) %d [%zu,+%zu) sum %" PRIu64 ": %016" PRIx64 "\n",
               constructs_done, how, kx, xl, xn, ky, yl, yn, sum, hash_all());
        break;
    }
    }
    constructs_done++;
}

int main(int argc, char **argv)
{
    ht_init(argc, argv, "map_fuzz");
    unsigned long constructs = argc > 2 ? strtoul(argv[2], NULL, 10) : 3000;
    edges = argc > 3 && strcmp(argv[3], "edges") == 0;
    rng = ht_state(1);
    for (int k = 0; k < ARRAYS; k++) {
        arrays[k].n = 1 + pick(MAX_BYTES);
        arrays[k].p = ht_malloc(arrays[k].n);
        ht_fill_random(arrays[k].p, arrays[k].n, 10 + (uint64_t)k);
    }
    global_a = arrays[PLAIN_ARRAYS].p;
    global_b = arrays[PLAIN_ARRAYS + 1].p;
    hold_a = (holder){1, arrays[PLAIN_ARRAYS + GLOBAL_ARRAYS].p, 0.5, 0, 0};
    hold_b = (holder){2, arrays[PLAIN_ARRAYS + GLOBAL_ARRAYS + 1].p, 1.5, 0, 0};
    while (constructs_done < constructs)
        one_construct(0);
    /* Unmap everything: the last references, `from` where the model has the array mapped. */
    for (int k = 0; k < ARRAYS; k++) {
        array *a = &arrays[k];
        if (a->associated)
            disassociate(k);
        while (a->mapped) {
            size_t lo = a->lo, len = a->hi - a->lo;
            drop_reference(a);
            exit_data(k, lo, len, 0);
        }
        OB_CHECK(ht_is_unmapped(a->p, a->n), "array %d is still mapped at the end", k);
        printf("end %d: %016" PRIx64 "\n", k, ht_fnv(a->p, a->n));
    }
    printf("map_fuzz: %lu constructs\n", constructs_done);
    return ob_check_finish("map_fuzz");
}
