#include "plugin/hook/hook_direct_choice.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/alloc.h"
#include "plugin/core/config.h"

/* Kernels a thread keeps choices for, and the slots a kernel may take from where its hash
 * points. A program's region IDs are bytes side by side, so the hash mixes every bit of them.
 * Kernels are never evicted: one that found its slots taken gets no choice of its own (the
 * table holds hundreds, and a choice thrown out and remade would time forever). */
#define OB_DIRECT_CHOICE_SLOTS 256
#define OB_DIRECT_CHOICE_PROBES 8

/* Allocated on a thread's first region, freed when the thread exits. */
static _Thread_local ob_direct_choice *choices;
static pthread_key_t choices_key;
static pthread_once_t choices_key_once = PTHREAD_ONCE_INIT;
static int choices_key_made;

/* At the thread's exit. A region the thread still runs after (another library's destructor)
 * starts a new table, which the key's next round frees. */
static void free_choices(void *table)
{
    choices = NULL;
    free(table);
}

static void make_choices_key(void)
{
    choices_key_made = pthread_key_create(&choices_key, free_choices) == 0;
}

static ob_direct_choice *thread_choices(void)
{
    if (choices != NULL)
        return choices;
    pthread_once(&choices_key_once, make_choices_key);
    if (!choices_key_made)
        return NULL;
    ob_direct_choice *table = ob_calloc(OB_DIRECT_CHOICE_SLOTS, sizeof(*table));
    if (table == NULL || pthread_setspecific(choices_key, table) != 0) {
        free(table);
        return NULL;
    }
    choices = table;
    return choices;
}

static void start_timing(ob_direct_choice *c, const void *kernel)
{
    c->kernel = kernel;
    c->chosen = -1;
    c->since = 0;
    c->taken[0] = c->taken[1] = 0;
}

ob_direct_choice *ob_direct_choice_of(const void *kernel)
{
    int timed = ob_config_get()->direct_regions == OB_DIRECT_REGIONS_TIMED;
    ob_direct_choice *table = timed && kernel != NULL ? thread_choices() : NULL;
    if (table == NULL)
        return NULL;
    uint64_t hash = (uint64_t)(uintptr_t)kernel * UINT64_C(0x9e3779b97f4a7c15);
    size_t first = (size_t)(hash >> 56); /* the top 8 bits: 256 slots */
    for (size_t i = 0; i < OB_DIRECT_CHOICE_PROBES; i++) {
        ob_direct_choice *c = &table[(first + i) % OB_DIRECT_CHOICE_SLOTS];
        if (c->kernel == kernel)
            return c;
        if (c->kernel == NULL) {
            start_timing(c, kernel);
            return c;
        }
    }
    return NULL;
}

ob_direct_mode ob_direct_choice_next(ob_direct_choice *c)
{
    switch (ob_config_get()->direct_regions) {
    case OB_DIRECT_REGIONS_NEVER:
        return OB_DIRECT_NO;
    case OB_DIRECT_REGIONS_ALWAYS:
        return OB_DIRECT_YES;
    case OB_DIRECT_REGIONS_TIMED:
        break;
    }
    if (c == NULL)
        return OB_DIRECT_YES;
    if (c->chosen >= 0 && ++c->since >= OB_DIRECT_CHOICE_RETIME)
        start_timing(c, c->kernel);
    if (c->chosen >= 0)
        return c->chosen ? OB_DIRECT_YES : OB_DIRECT_NO;
    return c->taken[1] <= c->taken[0] ? OB_DIRECT_TIME_YES : OB_DIRECT_TIME_NO;
}

static uint32_t median(const uint32_t *ns, size_t n)
{
    uint32_t sorted[OB_DIRECT_CHOICE_SAMPLES];
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        for (; j > 0 && sorted[j - 1] > ns[i]; j--)
            sorted[j] = sorted[j - 1];
        sorted[j] = ns[i];
    }
    return sorted[n / 2];
}

void ob_direct_choice_timed(ob_direct_choice *c, int direct, uint64_t ns)
{
    int way = direct != 0;
    if (c == NULL || c->chosen >= 0 || c->taken[way] >= OB_DIRECT_CHOICE_SAMPLES)
        return;
    c->ns[way][c->taken[way]++] = ns < UINT32_MAX ? (uint32_t)ns : UINT32_MAX;
    if (c->taken[0] < OB_DIRECT_CHOICE_SAMPLES || c->taken[1] < OB_DIRECT_CHOICE_SAMPLES)
        return;
    c->chosen = median(c->ns[1], OB_DIRECT_CHOICE_SAMPLES) <
                median(c->ns[0], OB_DIRECT_CHOICE_SAMPLES);
    c->since = 0;
}

void ob_direct_choice_forget_for_testing(void)
{
    if (choices != NULL)
        memset(choices, 0, OB_DIRECT_CHOICE_SLOTS * sizeof(*choices));
}
