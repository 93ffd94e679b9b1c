#include "plugin/cuda/resources.h"

#include <stdatomic.h>

static atomic_ulong streams_created;
static atomic_ulong modules_loaded;
static atomic_long kept_device_bytes;
static atomic_long kept_tables;

void ob_resources_stream_created(void)
{
    atomic_fetch_add(&streams_created, 1);
}

void ob_resources_module_loaded(void)
{
    atomic_fetch_add(&modules_loaded, 1);
}

void ob_resources_kept(long bytes)
{
    atomic_fetch_add(&kept_device_bytes, bytes);
    atomic_fetch_add(&kept_tables, bytes > 0 ? 1 : -1);
}

void ob_resources_get(ob_resource_counts *out)
{
    out->streams_created = atomic_load(&streams_created);
    out->modules_loaded = atomic_load(&modules_loaded);
    out->kept_device_bytes = (size_t)atomic_load(&kept_device_bytes);
    out->kept_tables = (unsigned long)atomic_load(&kept_tables);
}
