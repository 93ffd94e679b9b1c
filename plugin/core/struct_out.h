/* The public structs that carry their own size (struct_size first): what the library fills in
 * goes out in the caller's size, so that programs built against an older or newer header
 * keep working. */
#ifndef OMPBATCH_PLUGIN_STRUCT_OUT_H
#define OMPBATCH_PLUGIN_STRUCT_OUT_H

#include <stddef.h>

/* Copies current (current_size bytes, its first field a size_t struct_size) into *out, whose
 * struct_size the caller set: a smaller out gets the fields that fit, a larger one zeros past
 * the library's fields, and out->struct_size keeps the caller's value. name and type word the
 * errors ("stats is NULL", "stats->struct_size is 3; set it to sizeof(ompbatch_stats)").
 * Returns OMPBATCH_OK, OMPBATCH_ERR_NULL_POINTER or OMPBATCH_ERR_INVALID_ARGUMENT (a
 * struct_size smaller than the field itself). */
int ob_struct_out(void *out, const void *current, size_t current_size, const char *name,
                  const char *type);

#endif
