/* The compiler-facing ABI of LLVM's OpenMP offload runtime (libomptarget), as LLVM 16 and 19
 * define it (docs/hook.md describes what the hook relies on). Only the hook uses it. */
#ifndef OMPBATCH_PLUGIN_OMP_ABI_H
#define OMPBATCH_PLUGIN_OMP_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "ompbatch.h"

typedef struct ob_ident {
    int32_t reserved_1;
    int32_t flags;
    int32_t reserved_2;
    int32_t reserved_3;
    const char *psource;
} ob_ident;

/* KernelArgsTy; sizeof is 104 in both versions. */
typedef struct ob_kernel_args {
    uint32_t version;
    uint32_t num_args;
    void **arg_base_ptrs;
    void **arg_ptrs;
    int64_t *arg_sizes;
    int64_t *arg_types;
    void **arg_names;
    void **arg_mappers;
    uint64_t tripcount;
    uint64_t flags;
    uint32_t num_teams[3];
    uint32_t thread_limit[3];
    uint32_t dyn_cgroup_mem;
} ob_kernel_args;

/* __tgt_offload_entry of 16 and 19 (32 bytes; LLVM 21 replaces it with a 48-byte layout the
 * hook does not read). */
typedef struct ob_offload_entry {
    void *addr;
    char *name;
    size_t size;
    int32_t flags;
    int32_t data;   /* 19: the `requires` flags of an OB_OFFLOAD_REQUIRES entry */
} ob_offload_entry;

/* ob_offload_entry.flags of the entry that carries the program's `requires` flags (19). */
#define OB_OFFLOAD_REQUIRES 0x10

typedef struct ob_device_image {
    void *image_start;
    void *image_end;
    ob_offload_entry *entries_begin;
    ob_offload_entry *entries_end;
} ob_device_image;

typedef struct ob_bin_desc {
    int32_t num_device_images;
    ob_device_image *device_images;
    ob_offload_entry *host_entries_begin;
    ob_offload_entry *host_entries_end;
} ob_bin_desc;

/* One data construct's arguments, as the data entry points receive them. */
typedef struct ob_map_args {
    int32_t count;
    void **bases;
    void **begins;
    int64_t *sizes;
    int64_t *types;
    void **names;
    void **mappers;
} ob_map_args;

typedef void (*ob_tgt_data_fn)(ob_ident *loc, int64_t device_id, int32_t arg_num,
                               void **args_base, void **args, int64_t *arg_sizes,
                               int64_t *arg_types, void **arg_names, void **arg_mappers);
typedef void (*ob_tgt_data_nowait_fn)(ob_ident *loc, int64_t device_id, int32_t arg_num,
                                      void **args_base, void **args, int64_t *arg_sizes,
                                      int64_t *arg_types, void **arg_names, void **arg_mappers,
                                      int32_t dep_num, void *dep_list, int32_t noalias_dep_num,
                                      void *noalias_dep_list);
typedef int (*ob_tgt_kernel_fn)(ob_ident *loc, int64_t device_id, int32_t num_teams,
                                int32_t thread_limit, void *host_ptr, ob_kernel_args *args);
typedef void (*ob_tgt_register_lib_fn)(ob_bin_desc *desc);
typedef void (*ob_tgt_register_requires_fn)(int64_t flags);
typedef int (*ob_omp_associate_fn)(const void *host_ptr, const void *device_ptr, size_t size,
                                   size_t device_offset, int device_num);
typedef int (*ob_omp_disassociate_fn)(const void *host_ptr, int device_num);

/* Map-type bits (omptarget.h), as the public header defines them, typed as the entry points
 * pass them. */
#define OB_MAP_TO ((int64_t)OMPBATCH_MAP_TO)
#define OB_MAP_FROM ((int64_t)OMPBATCH_MAP_FROM)
#define OB_MAP_ALWAYS ((int64_t)OMPBATCH_MAP_ALWAYS)
#define OB_MAP_DELETE ((int64_t)OMPBATCH_MAP_DELETE)
#define OB_MAP_PTR_AND_OBJ ((int64_t)OMPBATCH_MAP_PTR_AND_OBJ)
#define OB_MAP_TARGET_PARAM ((int64_t)OMPBATCH_MAP_TARGET_PARAM)
#define OB_MAP_RETURN_PARAM ((int64_t)OMPBATCH_MAP_RETURN_PARAM)
#define OB_MAP_PRIVATE ((int64_t)OMPBATCH_MAP_PRIVATE)
#define OB_MAP_LITERAL ((int64_t)OMPBATCH_MAP_LITERAL)
#define OB_MAP_IMPLICIT ((int64_t)OMPBATCH_MAP_IMPLICIT)
#define OB_MAP_CLOSE ((int64_t)OMPBATCH_MAP_CLOSE)
#define OB_MAP_PRESENT ((int64_t)OMPBATCH_MAP_PRESENT)
#define OB_MAP_OMPX_HOLD ((int64_t)OMPBATCH_MAP_OMPX_HOLD)
#define OB_MAP_NON_CONTIG ((int64_t)OMPBATCH_MAP_NON_CONTIG)

/* A non-contiguous item's begins[i] points at sizes[i] of these, outermost dimension first
 * (libomptarget's __tgt_target_non_contig); strides are in bytes. */
typedef struct ob_non_contig {
    uint64_t offset;
    uint64_t count;
    uint64_t stride;
} ob_non_contig;
#define OB_MAP_MEMBER_OF ((int64_t)OMPBATCH_MAP_MEMBER_OF)

/* `requires` flags (__tgt_register_requires in 16, an OB_OFFLOAD_REQUIRES entry in 19). */
#define OB_REQ_UNIFIED_SHARED_MEMORY 0x008

/* ob_kernel_args.flags bit 0. */
#define OB_KERNEL_NOWAIT 0x1ULL

#endif
