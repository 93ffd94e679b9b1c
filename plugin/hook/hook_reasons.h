/* Why the hook left a map item to the runtime: one list for the hook's decisions, its verbose
 * log and its statistics. */
#ifndef OMPBATCH_PLUGIN_HOOK_REASONS_H
#define OMPBATCH_PLUGIN_HOOK_REASONS_H

/* OB_REASON_NONE: the hook made the item's copy itself. */
#define OB_HOOK_REASON_LIST(X)                                                                  \
    X(NONE, "batched")                                                                          \
    X(NO_TRANSFER, "no transfer to make")                                                       \
    X(SKIPPED, "private or literal")                                                            \
    X(MAPPER, "declare mapper")                                                                 \
    X(NON_CONTIG, "non-contiguous")                                                             \
    X(STRIDED_DEVIATES, "non-contiguous, where libomptarget departs from the specification")   \
    X(ZERO_SIZE, "zero size")                                                                   \
    X(PRESENT, "present modifier")                                                              \
    X(STRUCT, "struct member or parent")                                                        \
    X(ATTACH, "attached pointer")                                                               \
    X(RETURN_PARAM, "use_device_ptr/addr")                                                      \
    X(UNKNOWN, "not a mapping the hook saw created")                                            \
    X(PARTIAL, "partly mapped")                                                                 \
    X(OVERLAP, "overlaps another item")                                                         \
    X(ZERO_SIZE_REACHES, "its mapping is reached by a zero-size item")                          \
    X(GLOBAL, "declare target global")                                                          \
    X(EXISTING, "already mapped")                                                               \
    X(STILL_MAPPED, "still mapped after the end")                                               \
    X(DEVICE, "device the hook does not copy for")                                              \
    X(BUSY_LARGE, "large, on a busy host")                                                      \
    X(FAILED, "batch failed; the runtime copied")                                             \
    X(WHOLE, "construct forwarded whole")

typedef enum ob_hook_reason {
#define OB_HOOK_REASON_ENUM_(name, text) OB_REASON_##name,
    OB_HOOK_REASON_LIST(OB_HOOK_REASON_ENUM_)
#undef OB_HOOK_REASON_ENUM_
    OB_REASON_COUNT
} ob_hook_reason;

extern const char *const ob_hook_reason_text[OB_REASON_COUNT];

/* The kinds of construct the statistics count reasons for. */
typedef enum ob_hook_kind {
    OB_KIND_UPDATE = 0,
    OB_KIND_BEGIN,
    OB_KIND_END,
    OB_KIND_REGION_BEGIN,
    OB_KIND_REGION_END,
    OB_KIND_COUNT
} ob_hook_kind;

#endif
