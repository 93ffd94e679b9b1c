/* Status helpers shared by every file of the library: the calling thread's error record. */
#ifndef OMPBATCH_PLUGIN_ERROR_H
#define OMPBATCH_PLUGIN_ERROR_H

#include <stddef.h>

#include "ompbatch.h"

/* Records an error for the calling thread (its message is ompbatch_last_error) and returns
 * status, so that the place deciding an error can write `return ob_fail(OMPBATCH_ERR_X, "...",
 * ...);`. The message is logged at verbose level 1, here and nowhere else. */
int ob_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ob_fail for a refusal the caller routes around and says itself, at the level it chooses
 * (staging refused: the pieces go direct): recorded, not logged. */
int ob_fail_quiet(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same for an error of one of the caller's copies: the message reads "copy <copy>: " and
 * the text, and the record keeps the index for callers that renumber it (ob_error_copy). */
int ob_fail_copy(int status, size_t copy, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the calling thread's current message with more context ("device 2's part: " +
 * message), keeping the copy it names. Not logged again. */
int ob_fail_context(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Names the copy a lower layer's error belongs to: the message gets "copy <copy>: " in front,
 * and the record the index. Not logged again. */
int ob_fail_in_copy(int status, size_t copy);

/* The same with a note after the number: the message gets "copy <copy><note>: " in
 * front ("copy 3 (merged with 2 neighbours): cuMemcpyAsync failed: ..."), and the record the
 * index. Not logged again. */
int ob_fail_copy_context(int status, size_t copy, const char *note_fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether the calling thread's current error names a copy; its index in *copy. */
int ob_error_copy(size_t *copy);

/* Gives the copy the current error names another number and note (a part of a larger batch
 * names its copies by the caller's numbering): "copy 3: x" becomes "copy 17 (in device 1's
 * part): x". Does nothing when the error names no copy. Returns status. */
int ob_error_renumber_copy(int status, size_t copy, const char *note_fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The calling thread's error record, to keep across calls that may fail in turn (a clean-up
 * after the failure that is reported). */
typedef struct ob_error_saved {
    size_t copy;          /* SIZE_MAX: the error names no copy */
    size_t copy_begin;    /* where "copy N...: " starts in the message, and where it ends */
    size_t copy_end;
    char message[512];
} ob_error_saved;

void ob_error_save(ob_error_saved *saved);
/* Makes *saved the calling thread's error again and returns status. */
int ob_error_restore(int status, const ob_error_saved *saved);

#endif
