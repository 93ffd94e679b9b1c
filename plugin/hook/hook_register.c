/* Registration of long-lived mapped host ranges (hook_register.h). The mirror says when an
 * entry leaves it (ob_mirror_on_release): that is when its registration is undone. */
#include "plugin/hook/hook_register.h"

#include <stdatomic.h>
#include <stdint.h>

#include "plugin/core/config.h"
#include "plugin/core/log.h"
#include "plugin/hook/hook_copy.h"
#include "plugin/hook/hook_stats.h"
#include "ompbatch.h"

/* register_probe on an H100 (benchmarks/2026-12-07-h100-0852): registering and unregistering
 * cost about 110 us plus 70 us a MiB; a registered range copies at about 19 us a MiB after
 * about 10 us. */
#define OB_REGISTER_FIXED_NS 110000u
#define OB_REGISTER_NS_PER_MIB 70000u
#define OB_REGISTERED_FIXED_NS 10000u
#define OB_REGISTERED_NS_PER_MIB 19000u

uint64_t ob_hook_register_cost_ns(size_t bytes)
{
    return OB_REGISTER_FIXED_NS + (uint64_t)bytes * OB_REGISTER_NS_PER_MIB / ((size_t)1 << 20);
}

uint64_t ob_hook_registered_copy_ns(size_t bytes)
{
    return OB_REGISTERED_FIXED_NS + (uint64_t)bytes * OB_REGISTERED_NS_PER_MIB / ((size_t)1 << 20);
}

int ob_hook_register_wanted(void)
{
    return ob_config_get()->register_bytes > 0;
}

/* Changed under the construct lock (registrations, and releases by data constructs) or under
 * it shared with the mirror's kernel lock (releases by target regions). */
static atomic_size_t registered_bytes;

static void release(int device, const ob_mirror_entry *entry)
{
    size_t bytes = (size_t)(entry->end - entry->begin);
    if (ob_hook_copy_unregister(device, (void *)entry->begin) != OMPBATCH_OK)
        ob_log(1, "hook: cannot unregister %zu bytes at %#lx (%s); the driver keeps them "
                  "page-locked",
               bytes, (unsigned long)entry->begin, ompbatch_last_error());
    else
        ob_log(2, "hook: unregistered %zu bytes at %#lx", bytes, (unsigned long)entry->begin);
    atomic_fetch_sub_explicit(&registered_bytes, bytes, memory_order_relaxed);
}

void ob_hook_register_note_update(int device, ob_mirror_entry *entry)
{
    size_t cap = ob_config_get()->register_bytes;
    if (cap == 0 || entry->pinned != OB_PIN_NONE)
        return;
    size_t bytes = (size_t)(entry->end - entry->begin);
    if (bytes < OB_REGISTER_MIN_BYTES)
        return;
    entry->updates++;
    if (entry->excess_ns < ob_hook_register_cost_ns(bytes))
        return;
    size_t held = atomic_load_explicit(&registered_bytes, memory_order_relaxed);
    if (bytes > cap || held > cap - bytes) {
        entry->pinned = OB_PIN_REFUSED;
        ob_log(1, "hook: not registering %zu bytes at %#lx: it would pass OMPBATCH_REGISTER_MB "
                  "(%zu MiB, %zu MiB registered)",
               bytes, (unsigned long)entry->begin, cap >> 20, held >> 20);
        return;
    }
    ob_mirror_on_release(release); /* before the first registration there is none to undo */
    if (ob_hook_copy_register(device, (void *)entry->begin, bytes) != OMPBATCH_OK) {
        entry->pinned = OB_PIN_REFUSED;
        ob_log(1, "hook: cannot register %zu bytes at %#lx (%s); its copies stay staged", bytes,
               (unsigned long)entry->begin, ompbatch_last_error());
        return;
    }
    entry->pinned = OB_PIN_REGISTERED;
    atomic_fetch_add_explicit(&registered_bytes, bytes, memory_order_relaxed);
    ob_hook_add(&ob_hook_count.registrations, 1);
    ob_hook_add(&ob_hook_count.bytes_registered, bytes);
    ob_log(1, "hook: registered %zu bytes at %#lx with the driver at its update %u", bytes,
           (unsigned long)entry->begin, (unsigned)entry->updates);
}

void ob_hook_register_note_time(ob_mirror_entry *entry, size_t bytes, uint64_t ns)
{
    uint64_t registered = ob_hook_registered_copy_ns(bytes);
    if (entry->pinned == OB_PIN_NONE && ns > registered)
        entry->excess_ns += ns - registered;
}

void ob_hook_register_release_all(void)
{
    for (int d = 0; d < OB_MIRROR_MAX_DEVICES && ob_hook_registered_bytes() > 0; d++)
        ob_mirror_release_pins(d);
}

size_t ob_hook_registered_bytes(void)
{
    return atomic_load_explicit(&registered_bytes, memory_order_relaxed);
}
