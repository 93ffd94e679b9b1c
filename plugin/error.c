#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

/* One message per thread; callers read it through ompbatch_last_error() until their next call. */
static _Thread_local char last_message[512];

int ob_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof(last_message), fmt, ap);
    va_end(ap);
    ob_log(1, "error: %s (%s)", last_message, ompbatch_err_name(status));
    return status;
}

int ob_fail_context(int status, const char *fmt, ...)
{
    char prefix[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    size_t prefix_length = strlen(prefix);
    size_t room = sizeof(last_message) - 1 - prefix_length;
    size_t kept = strlen(last_message);
    if (kept > room)
        kept = room;
    memmove(last_message + prefix_length, last_message, kept);
    memcpy(last_message, prefix, prefix_length);
    last_message[prefix_length + kept] = '\0';
    return status;
}

const char *ompbatch_last_error(void)
{
    return last_message;
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
