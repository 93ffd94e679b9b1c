/* What the hook says and counts of a construct (hook_report.h). */
#include "plugin/hook/hook_report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/core/log.h"
#include "plugin/cuda/nvtx.h"
#include "plugin/hook/hook_stats.h"

/* Where a construct is, from the compiler's source string ";file;function;line;column;;"
 * (";unknown;unknown;0;0;;" for a program built without debug information). Returns 0 when
 * there is none. */
typedef struct source_location {
    const char *file;     /* the path as recorded, file_length bytes */
    int file_length;
    const char *line;     /* the line number's digits, line_length bytes */
    int line_length;
} source_location;

static int locate(const ob_ident *loc, source_location *out)
{
    const char *source = loc != NULL ? loc->psource : NULL;
    if (source == NULL || source[0] != ';')
        return 0;
    const char *file = source + 1;
    const char *file_end = strchr(file, ';');
    const char *function_end = file_end != NULL ? strchr(file_end + 1, ';') : NULL;
    const char *line = function_end != NULL ? function_end + 1 : NULL;
    const char *line_end = line != NULL ? strchr(line, ';') : NULL;
    if (line_end == NULL || file_end == file || line_end == line)
        return 0;
    *out = (source_location){file, (int)(file_end - file), line, (int)(line_end - line)};
    return 1;
}

const char *ob_hook_range_label(const ob_construct *c, char *buf, size_t size)
{
    if (!ob_nvtx_active())
        return NULL;
    const char *what = strcmp(c->what, "begin") == 0 ? "data begin"
                       : strcmp(c->what, "end") == 0 ? "data end"
                                                     : c->what;
    source_location where;
    if (!locate(c->loc, &where)) {
        snprintf(buf, size, "%s", what);
        return buf;
    }
    const char *base = where.file;
    for (const char *p = where.file; p < where.file + where.file_length; p++)
        if (*p == '/')
            base = p + 1;
    snprintf(buf, size, "%s %.*s:%.*s", what, (int)(where.file + where.file_length - base), base,
             where.line_length, where.line);
    return buf;
}

/* " at file:line" for the log; nothing without a location or debug information. */
static void describe_location(const ob_ident *loc, char *out, size_t size)
{
    out[0] = '\0';
    source_location where;
    if (locate(loc, &where) && strncmp(where.file, "unknown;", 8) != 0)
        snprintf(out, size, " at %.*s:%d", where.file_length, where.file, atoi(where.line));
}

static void log_construct(const ob_construct *c, const ob_hook_item *items, int32_t count,
                          size_t batched)
{
    if (ob_log_level() < 1)
        return;
    unsigned counts[OB_REASON_COUNT] = {0};
    for (int32_t i = 0; i < count; i++)
        counts[items[i].why]++;
    char why[400] = "";
    size_t used = 0;
    for (int r = 1; r < OB_REASON_COUNT && used < sizeof(why); r++)
        if (counts[r] != 0)
            used += (size_t)snprintf(why + used, sizeof(why) - used, "%s%u %s",
                                     used ? ", " : "", counts[r], ob_hook_reason_text[r]);
    char where[160];
    describe_location(c->loc, where, sizeof(where));
    ob_log_write("hook: %s%s on device %d: %d items, %zu batched, %zu forwarded%s%s%s", c->what,
                 where, c->device, (int)count, batched, (size_t)count - batched,
                 used ? " (" : "", why, used ? ")" : "");
    if (ob_log_level() < 3)
        return;
    /* What the program passed, item by item: enough to see why a map was left alone. */
    const ob_map_args *a = &c->args;
    for (int32_t i = 0; i < count; i++) {
        ob_log_write("hook:   item %d: base %p begin %p size %" PRId64 " type 0x%" PRIx64
                     "%s: %s", (int)i, a->bases[i], a->begins[i], a->sizes[i],
                     (uint64_t)a->types[i], ob_hook_has_mapper(a, i) ? " mapper" : "",
                     ob_hook_reason_text[items[i].why]);
        if (!(a->types[i] & OB_MAP_NON_CONTIG) || a->begins[i] == NULL)
            continue;
        const ob_non_contig *d = a->begins[i];
        for (int64_t k = 0; k < a->sizes[i] && k < 16; k++)
            ob_log_write("hook:     dimension %d: offset %" PRIu64 " count %" PRIu64
                         " stride %" PRIu64, (int)k, d[k].offset, d[k].count, d[k].stride);
    }
}

ob_hook_kind ob_hook_kind_of(const ob_construct *c)
{
    if (strcmp(c->what, "update") == 0)
        return OB_KIND_UPDATE;
    if (strcmp(c->what, "begin") == 0)
        return OB_KIND_BEGIN;
    if (strcmp(c->what, "end") == 0)
        return OB_KIND_END;
    return strcmp(c->what, "region begin") == 0 ? OB_KIND_REGION_BEGIN : OB_KIND_REGION_END;
}

/* Each item's verdict, by kind of construct, for the statistics: tallied here first, so that
 * a construct of many items costs one shared atomic add per verdict it has, not per item. */
static void count_reasons(const ob_construct *c, const ob_hook_item *items, int32_t count)
{
    ob_hook_kind kind = ob_hook_kind_of(c);
    uint64_t tally[OB_REASON_COUNT] = {0};
    for (int32_t i = 0; i < count; i++)
        tally[items[i].why]++;
    for (int r = 0; r < OB_REASON_COUNT; r++)
        if (tally[r] != 0)
            ob_hook_add(&ob_hook_count.by_reason[kind][r], tally[r]);
}

/* A split region's halves count as its items once (at its begin) and their copies as the
 * region's, not as data constructs. */
void ob_hook_count_construct(const ob_construct *c, int32_t count,
                             atomic_uint_fast64_t *batched_counter, size_t batched)
{
    if (c->region) {
        if (strcmp(c->what, "region begin") == 0)
            ob_hook_add(&ob_hook_count.region_items, (uint64_t)count);
        ob_hook_add(&ob_hook_count.region_batched, batched);
        return;
    }
    ob_hook_add(&ob_hook_count.constructs, 1);
    ob_hook_add(&ob_hook_count.items, (uint64_t)count);
    ob_hook_add(batched_counter, batched);
    ob_hook_add(&ob_hook_count.items_forwarded, (uint64_t)count - batched);
}

void ob_hook_report_construct(const ob_construct *c, const ob_hook_item *items, int32_t count,
                              atomic_uint_fast64_t *batched_counter, size_t batched)
{
    log_construct(c, items, count, batched);
    count_reasons(c, items, count);
    ob_hook_count_construct(c, count, batched_counter, batched);
}

size_t ob_hook_batched_items(const ob_hook_item *items, int32_t count)
{
    size_t batched = 0;
    for (int32_t i = 0; i < count; i++)
        batched += items[i].why == OB_REASON_NONE;
    return batched;
}

