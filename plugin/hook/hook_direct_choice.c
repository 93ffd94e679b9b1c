#include "plugin/hook/hook_direct_choice.h"

#include <stddef.h>

#include "plugin/core/config.h"

/* Kernels a thread keeps choices for; a program's step runs a few. */
#define OB_DIRECT_CHOICE_SLOTS 16

static _Thread_local ob_direct_choice choices[OB_DIRECT_CHOICE_SLOTS];

static void start_timing(ob_direct_choice *c, const void *kernel)
{
    c->kernel = kernel;
    c->chosen = -1;
    c->since = 0;
    c->taken[0] = c->taken[1] = 0;
}

ob_direct_choice *ob_direct_choice_of(const void *kernel)
{
    ob_direct_choice *c = &choices[((uintptr_t)kernel >> 4) % OB_DIRECT_CHOICE_SLOTS];
    if (c->kernel != kernel || c->kernel == NULL)
        start_timing(c, kernel);
    return c;
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
    if (c->chosen >= 0 && ++c->since >= OB_DIRECT_CHOICE_RETIME)
        start_timing(c, c->kernel);
    if (c->chosen >= 0)
        return c->chosen ? OB_DIRECT_YES : OB_DIRECT_NO;
    return c->taken[1] <= c->taken[0] ? OB_DIRECT_TIME_YES : OB_DIRECT_TIME_NO;
}

static uint64_t median(const uint64_t *ns, size_t n)
{
    uint64_t sorted[OB_DIRECT_CHOICE_SAMPLES];
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
    if (c->chosen >= 0 || c->taken[way] >= OB_DIRECT_CHOICE_SAMPLES)
        return;
    c->ns[way][c->taken[way]++] = ns;
    if (c->taken[0] < OB_DIRECT_CHOICE_SAMPLES || c->taken[1] < OB_DIRECT_CHOICE_SAMPLES)
        return;
    c->chosen = median(c->ns[1], OB_DIRECT_CHOICE_SAMPLES) <
                median(c->ns[0], OB_DIRECT_CHOICE_SAMPLES);
    c->since = 0;
}

void ob_direct_choice_forget_for_testing(void)
{
    for (size_t i = 0; i < OB_DIRECT_CHOICE_SLOTS; i++)
        choices[i].kernel = NULL;
}
