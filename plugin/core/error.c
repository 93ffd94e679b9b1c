#include "plugin/core/error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "plugin/core/log.h"

/* One record per thread; callers read its message through ompbatch_last_error() until their
 * next call. The copy a message names is kept as a number beside the text, with where its
 * prefix lies in the text, so that nobody has to read it back out of the words. */
static _Thread_local ob_error_saved current = {.copy = SIZE_MAX};

static void log_current(int status)
{
    ob_log(1, "error: %s (%s)", current.message, ompbatch_err_name(status));
}

static void record(const char *fmt, va_list ap)
{
    vsnprintf(current.message, sizeof(current.message), fmt, ap);
    current.copy = SIZE_MAX;
}

int ob_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(fmt, ap);
    va_end(ap);
    log_current(status);
    return status;
}

int ob_fail_quiet(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(fmt, ap);
    va_end(ap);
    return status;
}

/* Puts prefix in front of the message (what no longer fits is cut from its end); returns the
 * length of the prefix as kept. */
static size_t prepend(const char *prefix)
{
    size_t prefix_length = strlen(prefix);
    if (prefix_length > sizeof(current.message) - 1)
        prefix_length = sizeof(current.message) - 1;
    size_t room = sizeof(current.message) - 1 - prefix_length;
    size_t kept = strlen(current.message);
    if (kept > room)
        kept = room;
    memmove(current.message + prefix_length, current.message, kept);
    memcpy(current.message, prefix, prefix_length);
    current.message[prefix_length + kept] = '\0';
    return prefix_length;
}

/* "copy <copy><note>: " in front of the message, recorded as the copy's prefix. */
static void name_copy(size_t copy, const char *note)
{
    char prefix[200];
    snprintf(prefix, sizeof(prefix), "copy %zu%s: ", copy, note);
    current.copy_begin = 0;
    current.copy_end = prepend(prefix);
    current.copy = copy;
}

int ob_fail_copy(int status, size_t copy, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(current.message, sizeof(current.message), fmt, ap);
    va_end(ap);
    name_copy(copy, "");
    log_current(status);
    return status;
}

int ob_fail_context(int status, const char *fmt, ...)
{
    char prefix[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    size_t length = prepend(prefix);
    if (current.copy != SIZE_MAX) {
        current.copy_begin += length;
        current.copy_end += length;
        if (current.copy_end >= sizeof(current.message))
            current.copy = SIZE_MAX; /* the copy's prefix was cut off */
    }
    return status;
}

int ob_fail_in_copy(int status, size_t copy)
{
    name_copy(copy, "");
    return status;
}

int ob_fail_copy_context(int status, size_t copy, const char *note_fmt, ...)
{
    char note[160];
    va_list ap;
    va_start(ap, note_fmt);
    vsnprintf(note, sizeof(note), note_fmt, ap);
    va_end(ap);
    name_copy(copy, note);
    return status;
}

int ob_error_copy(size_t *copy)
{
    if (current.copy == SIZE_MAX)
        return 0;
    *copy = current.copy;
    return 1;
}

int ob_error_renumber_copy(int status, size_t copy, const char *note_fmt, ...)
{
    if (current.copy == SIZE_MAX)
        return status;
    char note[160];
    va_list ap;
    va_start(ap, note_fmt);
    vsnprintf(note, sizeof(note), note_fmt, ap);
    va_end(ap);
    /* Take out the old prefix, keeping what stood before it, then put the new one in. */
    char before[sizeof(current.message)];
    size_t begin = current.copy_begin;
    memcpy(before, current.message, begin);
    before[begin] = '\0';
    memmove(current.message, current.message + current.copy_end,
            strlen(current.message + current.copy_end) + 1);
    name_copy(copy, note);
    if (begin > 0) {
        size_t length = prepend(before);
        current.copy_begin += length;
        current.copy_end += length;
    }
    return status;
}

void ob_error_save(ob_error_saved *saved)
{
    *saved = current;
}

int ob_error_restore(int status, const ob_error_saved *saved)
{
    current = *saved;
    return status;
}

const char *ompbatch_last_error(void)
{
    return current.message;
}

const char *ompbatch_err_name(int status)
{
    switch (status) {
#define OB_NAME_CASE_(name, value, msg)                                                          \
    case value:                                                                                  \
        return "OMPBATCH_ERR_" #name;
        OMPBATCH_STATUS_LIST(OB_NAME_CASE_)
#undef OB_NAME_CASE_
    }
    return "OMPBATCH_ERR_UNKNOWN";
}

const char *ompbatch_strerror(int status)
{
    switch (status) {
#define OB_MSG_CASE_(name, value, msg)                                                           \
    case value:                                                                                  \
        return msg;
        OMPBATCH_STATUS_LIST(OB_MSG_CASE_)
#undef OB_MSG_CASE_
    }
    return "unknown status";
}

int ompbatch_version(void)
{
    return OMPBATCH_VERSION;
}
