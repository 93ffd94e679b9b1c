#include "plugin/core/log.h"

#include <stdarg.h>
#include <stdio.h>

#include "plugin/core/config.h"

int ob_log_level(void)
{
    return ob_config_get()->verbose;
}

void ob_log_write(const char *fmt, ...)
{
    /* One fprintf per line keeps lines whole when threads log at once. */
    char line[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "ompbatch: %s\n", line);
}
