/* Verbose logging to stderr, controlled by OMPBATCH_VERBOSE (0 off, 1 errors and decisions,
 * 2 every plan, 3 every step). */
#ifndef OMPBATCH_PLUGIN_LOG_H
#define OMPBATCH_PLUGIN_LOG_H

int ob_log_level(void);
void ob_log_write(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define ob_log(level, ...)                                                                       \
    do {                                                                                         \
        if (ob_log_level() >= (level))                                                           \
            ob_log_write(__VA_ARGS__);                                                           \
    } while (0)

#endif
