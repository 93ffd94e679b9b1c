! ompbatch: the Fortran module for the whole public C API of include/ompbatch.h.
!
!     use ompbatch
!
! Every OMPBATCH_API function is a bind(C) interface under its C name, every public struct a
! bind(C) derived type with the same fields in the same order, and every constant of the header
! a named constant. The header stays the reference for what each call does; docs/fortran.md
! says how to build and link. tests/fortran checks this module against the header: field
! offsets and sizes, constant values, and that each interface binds the library's symbol.
!
! How C types map here:
!   int, enums, unsigned -> integer(c_int). `unsigned` fields (the `paths` bit sets) hold
!                           small bit sets, so reading them as signed loses nothing.
!   size_t               -> integer(c_size_t)
!   uint64_t             -> integer(c_int64_t): Fortran has no unsigned integers; counters
!                           never reach 2**63, and map-type bits keep their bit pattern.
!   pointers             -> type(c_ptr): a batch, a stream, host or device addresses. A
!                           CUdeviceptr is passed as a c_ptr holding its value.
!   const char * results -> the raw binding is <name>_c, returning type(c_ptr); the plain C
!                           name is a module function returning a Fortran string, which is
!                           what a Fortran caller wants (ompbatch_last_error(), say).
!   arguments that may be NULL -> optional dummies: an absent argument reaches C as NULL
!                           (Fortran 2018, from TS 29113).
!
! Fortran names are case-insensitive, so the header's compile-time OMPBATCH_VERSION and its
! run-time ompbatch_version() would be one name here: the constant is OMPBATCH_MODULE_VERSION.
!
! Builds with: gfortran -std=f2018 -Wall -Wextra -Wpedantic -Werror (fortran/BUILD.bazel).
module ompbatch
    use, intrinsic :: iso_c_binding, only: c_char, c_int, c_int64_t, c_size_t, c_ptr, &
        c_null_ptr, c_associated, c_f_pointer
    implicit none
    private

    ! ---- Version -----------------------------------------------------------------------------

    integer(c_int), parameter, public :: OMPBATCH_VERSION_MAJOR = 0
    integer(c_int), parameter, public :: OMPBATCH_VERSION_MINOR = 1
    integer(c_int), parameter, public :: OMPBATCH_VERSION_PATCH = 0
    ! The header's OMPBATCH_VERSION (MAJOR * 10000 + MINOR * 100 + PATCH) this module was
    ! written for; compare it with ompbatch_version(), the version of the library linked in.
    integer(c_int), parameter, public :: OMPBATCH_MODULE_VERSION = &
        OMPBATCH_VERSION_MAJOR * 10000 + OMPBATCH_VERSION_MINOR * 100 + OMPBATCH_VERSION_PATCH

    ! ---- Status codes (OMPBATCH_STATUS_LIST) ---------------------------------------------------
    ! Every function that can fail returns OMPBATCH_OK or one of these (negative).

    integer(c_int), parameter, public :: OMPBATCH_ERR_OK = 0
    integer(c_int), parameter, public :: OMPBATCH_OK = OMPBATCH_ERR_OK
    integer(c_int), parameter, public :: OMPBATCH_ERR_INVALID_ARGUMENT = -1
    integer(c_int), parameter, public :: OMPBATCH_ERR_NULL_POINTER = -2
    integer(c_int), parameter, public :: OMPBATCH_ERR_OVERFLOW = -3
    integer(c_int), parameter, public :: OMPBATCH_ERR_INVALID_DEVICE = -4
    integer(c_int), parameter, public :: OMPBATCH_ERR_NOT_MAPPED = -5
    integer(c_int), parameter, public :: OMPBATCH_ERR_NO_DRIVER = -6
    integer(c_int), parameter, public :: OMPBATCH_ERR_NO_OFFLOAD_RUNTIME = -7
    integer(c_int), parameter, public :: OMPBATCH_ERR_DRIVER = -8
    integer(c_int), parameter, public :: OMPBATCH_ERR_NO_MEMORY = -9
    integer(c_int), parameter, public :: OMPBATCH_ERR_BAD_STATE = -10
    integer(c_int), parameter, public :: OMPBATCH_ERR_UNSUPPORTED = -11

    ! ---- OpenMP map types (libomptarget's bits; the map_type arguments are uint64_t) --------

    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_TO = int(z'1', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_FROM = int(z'2', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_ALWAYS = int(z'4', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_DELETE = int(z'8', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_PTR_AND_OBJ = int(z'10', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_TARGET_PARAM = int(z'20', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_RETURN_PARAM = int(z'40', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_PRIVATE = int(z'80', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_LITERAL = int(z'100', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_IMPLICIT = int(z'200', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_CLOSE = int(z'400', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_MAPPER = int(z'800', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_PRESENT = int(z'1000', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_OMPX_HOLD = int(z'2000', c_int64_t)
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_NON_CONTIG = shiftl(1_c_int64_t, 44)
    ! 0xffff000000000000: the top 16 bits. Built by a shift because the literal does not fit a
    ! signed 64-bit integer; the bit pattern is the C value's.
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_MEMBER_OF = &
        shiftl(int(z'FFFF', c_int64_t), 48)
    ! Every bit above; a map type with any other bit is refused (OMPBATCH_ERR_INVALID_ARGUMENT).
    integer(c_int64_t), parameter, public :: OMPBATCH_MAP_KNOWN_BITS = iany([ &
        OMPBATCH_MAP_TO, OMPBATCH_MAP_FROM, OMPBATCH_MAP_ALWAYS, OMPBATCH_MAP_DELETE, &
        OMPBATCH_MAP_PTR_AND_OBJ, OMPBATCH_MAP_TARGET_PARAM, OMPBATCH_MAP_RETURN_PARAM, &
        OMPBATCH_MAP_PRIVATE, OMPBATCH_MAP_LITERAL, OMPBATCH_MAP_IMPLICIT, OMPBATCH_MAP_CLOSE, &
        OMPBATCH_MAP_MAPPER, OMPBATCH_MAP_PRESENT, OMPBATCH_MAP_OMPX_HOLD, &
        OMPBATCH_MAP_NON_CONTIG, OMPBATCH_MAP_MEMBER_OF])

    ! The host ("initial device") in every device-number argument: OpenMP 5.2's
    ! omp_initial_device. omp_get_initial_device() is accepted too.
    integer(c_int), parameter, public :: OMPBATCH_HOST_DEVICE = -1

    ! The most dimensions of a rectangular copy, and the most runs it may become
    ! (ompbatch_batch_add_rect).
    integer(c_int), parameter, public :: OMPBATCH_RECT_MAX_DIMS = 16
    integer(c_int), parameter, public :: OMPBATCH_RECT_MAX_RUNS = 16777216

    ! ---- Driver report (ompbatch_batch_form) ---------------------------------------------------

    integer(c_int), parameter, public :: OMPBATCH_FORM_NONE = 0
    integer(c_int), parameter, public :: OMPBATCH_FORM_PER_COPY = 1
    integer(c_int), parameter, public :: OMPBATCH_FORM_V12080 = 12080
    integer(c_int), parameter, public :: OMPBATCH_FORM_V13000 = 13000

    ! Set struct_size = c_sizeof(info) before ompbatch_get_driver_info. library and reason
    ! point to the library's own strings (valid for the process): read them with
    ! ompbatch_c_string.
    type, bind(C), public :: ompbatch_driver_info
        integer(c_size_t) :: struct_size = 0
        integer(c_int) :: driver_loaded = 0
        integer(c_int) :: driver_version = 0
        integer(c_int) :: device_count = 0
        integer(c_int) :: batch_form = 0
        integer(c_int) :: forced = 0
        type(c_ptr) :: library = c_null_ptr
        type(c_ptr) :: reason = c_null_ptr
    end type ompbatch_driver_info

    ! ---- Batches (ompbatch_strategy) -----------------------------------------------------------

    integer(c_int), parameter, public :: OMPBATCH_STRATEGY_DEFAULT = 0
    integer(c_int), parameter, public :: OMPBATCH_STRATEGY_AUTO = 1
    integer(c_int), parameter, public :: OMPBATCH_STRATEGY_DIRECT = 2
    integer(c_int), parameter, public :: OMPBATCH_STRATEGY_STAGED = 3

    ! Zero-initialised, as the C API expects of fields a caller leaves alone (0 = default);
    ! set struct_size = c_sizeof(options).
    type, bind(C), public :: ompbatch_batch_options
        integer(c_size_t) :: struct_size = 0
        integer(c_size_t) :: max_copies = 0
        integer(c_int) :: prefer_overlap = 0
        integer(c_int) :: synchronous = 0
        integer(c_int) :: strategy = 0
    end type ompbatch_batch_options

    ! ---- Statistics (ompbatch_path bits, ompbatch_stats) -------------------------------------

    integer(c_int), parameter, public :: OMPBATCH_PATH_NONE = 0
    integer(c_int), parameter, public :: OMPBATCH_PATH_BATCH = 1
    integer(c_int), parameter, public :: OMPBATCH_PATH_PER_COPY = 2
    integer(c_int), parameter, public :: OMPBATCH_PATH_HOST = 4
    integer(c_int), parameter, public :: OMPBATCH_PATH_KERNEL = 8
    integer(c_int), parameter, public :: OMPBATCH_PATH_STAGED = 16

    ! Set struct_size = c_sizeof(stats) before ompbatch_batch_get_stats.
    type, bind(C), public :: ompbatch_stats
        integer(c_size_t) :: struct_size = 0
        integer(c_int64_t) :: copies_added = 0
        integer(c_int64_t) :: copies_zero = 0
        integer(c_int64_t) :: copies_planned = 0
        integer(c_int64_t) :: attr_groups = 0
        integer(c_int64_t) :: sub_batches = 0
        integer(c_int64_t) :: driver_calls = 0
        integer(c_int64_t) :: bytes = 0
        integer(c_int64_t) :: copies_done = 0
        integer(c_int) :: paths = 0                ! C: unsigned, OR of OMPBATCH_PATH_*
        integer(c_int64_t) :: batch_calls = 0
        integer(c_int64_t) :: staged_copies = 0
        integer(c_int64_t) :: staged_bytes = 0
        integer(c_int64_t) :: kernel_launches = 0
        integer(c_int64_t) :: staging_refused = 0
        integer(c_int64_t) :: plan_reused = 0
        integer(c_int64_t) :: batch_fallbacks = 0
    end type ompbatch_stats

    ! ---- The OpenMP hook (ompbatch_hook_state, ompbatch_hook_stats) ----------------------------

    integer(c_int), parameter, public :: OMPBATCH_HOOK_NOT_LOADED = 0
    integer(c_int), parameter, public :: OMPBATCH_HOOK_ACTIVE = 1
    integer(c_int), parameter, public :: OMPBATCH_HOOK_PASS_THROUGH = 2

    ! Set struct_size = c_sizeof(stats) before ompbatch_hook_get_stats.
    type, bind(C), public :: ompbatch_hook_stats
        integer(c_size_t) :: struct_size = 0
        integer(c_int) :: state = 0                ! OMPBATCH_HOOK_*
        integer(c_int) :: runtime_major = 0
        integer(c_int64_t) :: constructs = 0
        integer(c_int64_t) :: kernels = 0
        integer(c_int64_t) :: items = 0
        integer(c_int64_t) :: update_batched = 0
        integer(c_int64_t) :: enter_batched = 0
        integer(c_int64_t) :: exit_batched = 0
        integer(c_int64_t) :: items_forwarded = 0
        integer(c_int64_t) :: batches = 0
        integer(c_int64_t) :: bytes_batched = 0
        integer(c_int64_t) :: driver_batch_calls = 0
        integer(c_int) :: paths = 0                ! C: unsigned, OR of OMPBATCH_PATH_*
        integer(c_int64_t) :: regions_split = 0
        integer(c_int64_t) :: region_items = 0
        integer(c_int64_t) :: region_batched = 0
        integer(c_int64_t) :: time_construct_ns = 0  ! with OMPBATCH_STATS=1 only
        integer(c_int64_t) :: time_runtime_ns = 0
        integer(c_int64_t) :: time_kernel_ns = 0
        integer(c_int64_t) :: time_query_ns = 0
        integer(c_int64_t) :: time_add_ns = 0
        integer(c_int64_t) :: time_plan_ns = 0
        integer(c_int64_t) :: time_enqueue_ns = 0
        integer(c_int64_t) :: time_poll_ns = 0
        integer(c_int64_t) :: time_block_ns = 0
        integer(c_int64_t) :: time_unpack_ns = 0
        integer(c_int64_t) :: regions_direct = 0
        integer(c_int64_t) :: registrations = 0  ! OMPBATCH_REGISTER_MB
        integer(c_int64_t) :: bytes_registered = 0
    end type ompbatch_hook_stats

    ! ---- The C API -------------------------------------------------------------------------------
    ! A batch is a type(c_ptr) (C: ompbatch_batch *), c_null_ptr when there is none.

    public :: ompbatch_version
    public :: ompbatch_err_name_c, ompbatch_strerror_c, ompbatch_last_error_c
    public :: ompbatch_get_driver_info, ompbatch_target_memcpy_batch
    public :: ompbatch_target_memcpy_rect
    public :: ompbatch_batch_create, ompbatch_batch_add, ompbatch_batch_add_mapped
    public :: ompbatch_batch_add_rect
    public :: ompbatch_batch_submit, ompbatch_batch_wait, ompbatch_batch_reset
    public :: ompbatch_batch_forget_memory, ompbatch_batch_destroy
    public :: ompbatch_batch_get_stats, ompbatch_batch_describe
    public :: ompbatch_hook_get_stats, ompbatch_hook_reset_stats, ompbatch_hook_set_enabled

    ! Fortran-string helpers (module procedures below).
    public :: ompbatch_err_name, ompbatch_strerror, ompbatch_last_error
    public :: ompbatch_batch_description, ompbatch_c_string

    interface
        function ompbatch_version() bind(C, name="ompbatch_version")
            import :: c_int
            integer(c_int) :: ompbatch_version
        end function ompbatch_version

        ! Raw forms of the string functions: a pointer to a static or per-thread C string.
        function ompbatch_err_name_c(status) bind(C, name="ompbatch_err_name")
            import :: c_int, c_ptr
            integer(c_int), value :: status
            type(c_ptr) :: ompbatch_err_name_c
        end function ompbatch_err_name_c

        function ompbatch_strerror_c(status) bind(C, name="ompbatch_strerror")
            import :: c_int, c_ptr
            integer(c_int), value :: status
            type(c_ptr) :: ompbatch_strerror_c
        end function ompbatch_strerror_c

        function ompbatch_last_error_c() bind(C, name="ompbatch_last_error")
            import :: c_ptr
            type(c_ptr) :: ompbatch_last_error_c
        end function ompbatch_last_error_c

        function ompbatch_get_driver_info(info) bind(C, name="ompbatch_get_driver_info")
            import :: c_int, ompbatch_driver_info
            type(ompbatch_driver_info), intent(inout) :: info
            integer(c_int) :: ompbatch_get_driver_info
        end function ompbatch_get_driver_info

        ! dst(i), src(i): base addresses (c_loc(...) of host data, device addresses as c_ptr).
        ! Every array argument is optional because C accepts NULL: absent offsets mean zeros,
        ! and with count = 0 nothing is read.
        function ompbatch_target_memcpy_batch(dst, src, length, dst_offset, src_offset, count, &
                                              dst_device_num, src_device_num) &
            bind(C, name="ompbatch_target_memcpy_batch")
            import :: c_int, c_size_t, c_ptr
            type(c_ptr), intent(in), optional :: dst(*)
            type(c_ptr), intent(in), optional :: src(*)
            integer(c_size_t), intent(in), optional :: length(*)
            integer(c_size_t), intent(in), optional :: dst_offset(*)
            integer(c_size_t), intent(in), optional :: src_offset(*)
            integer(c_size_t), value :: count
            integer(c_int), value :: dst_device_num
            integer(c_int), value :: src_device_num
            integer(c_int) :: ompbatch_target_memcpy_batch
        end function ompbatch_target_memcpy_batch

        ! The arrays describe dimensions outermost first, as in C: a Fortran array a(nx, ny)
        ! is dimensions [ny, nx], and its offsets are zero-based.
        function ompbatch_target_memcpy_rect(dst, src, element_size, num_dims, volume, &
                                             dst_offsets, src_offsets, dst_dimensions, &
                                             src_dimensions, dst_device_num, src_device_num) &
            bind(C, name="ompbatch_target_memcpy_rect")
            import :: c_int, c_size_t, c_ptr
            type(c_ptr), value :: dst
            type(c_ptr), value :: src
            integer(c_size_t), value :: element_size
            integer(c_int), value :: num_dims
            integer(c_size_t), intent(in) :: volume(*)
            integer(c_size_t), intent(in) :: dst_offsets(*)
            integer(c_size_t), intent(in) :: src_offsets(*)
            integer(c_size_t), intent(in) :: dst_dimensions(*)
            integer(c_size_t), intent(in) :: src_dimensions(*)
            integer(c_int), value :: dst_device_num
            integer(c_int), value :: src_device_num
            integer(c_int) :: ompbatch_target_memcpy_rect
        end function ompbatch_target_memcpy_rect

        ! stream: a CUstream as c_ptr, or c_null_ptr for the library's own stream. options
        ! absent: the defaults.
        function ompbatch_batch_create(out, device_num, stream, options) &
            bind(C, name="ompbatch_batch_create")
            import :: c_int, c_ptr, ompbatch_batch_options
            type(c_ptr), intent(out) :: out
            integer(c_int), value :: device_num
            type(c_ptr), value :: stream
            type(ompbatch_batch_options), intent(in), optional :: options
            integer(c_int) :: ompbatch_batch_create
        end function ompbatch_batch_create

        function ompbatch_batch_add(batch, dst, dst_device_num, src, src_device_num, bytes, &
                                    map_type) bind(C, name="ompbatch_batch_add")
            import :: c_int, c_int64_t, c_size_t, c_ptr
            type(c_ptr), value :: batch
            type(c_ptr), value :: dst
            integer(c_int), value :: dst_device_num
            type(c_ptr), value :: src
            integer(c_int), value :: src_device_num
            integer(c_size_t), value :: bytes
            integer(c_int64_t), value :: map_type
            integer(c_int) :: ompbatch_batch_add
        end function ompbatch_batch_add

        ! Dimensions outermost first, offsets zero-based (see ompbatch_target_memcpy_rect).
        function ompbatch_batch_add_rect(batch, dst, dst_device_num, src, src_device_num, &
                                         element_size, num_dims, volume, dst_offsets, &
                                         src_offsets, dst_dimensions, src_dimensions, map_type) &
            bind(C, name="ompbatch_batch_add_rect")
            import :: c_int, c_int64_t, c_size_t, c_ptr
            type(c_ptr), value :: batch
            type(c_ptr), value :: dst
            integer(c_int), value :: dst_device_num
            type(c_ptr), value :: src
            integer(c_int), value :: src_device_num
            integer(c_size_t), value :: element_size
            integer(c_int), value :: num_dims
            integer(c_size_t), intent(in) :: volume(*)
            integer(c_size_t), intent(in) :: dst_offsets(*)
            integer(c_size_t), intent(in) :: src_offsets(*)
            integer(c_size_t), intent(in) :: dst_dimensions(*)
            integer(c_size_t), intent(in) :: src_dimensions(*)
            integer(c_int64_t), value :: map_type
            integer(c_int) :: ompbatch_batch_add_rect
        end function ompbatch_batch_add_rect

        function ompbatch_batch_add_mapped(batch, host_ptr, bytes, map_type) &
            bind(C, name="ompbatch_batch_add_mapped")
            import :: c_int, c_int64_t, c_size_t, c_ptr
            type(c_ptr), value :: batch
            type(c_ptr), value :: host_ptr
            integer(c_size_t), value :: bytes
            integer(c_int64_t), value :: map_type
            integer(c_int) :: ompbatch_batch_add_mapped
        end function ompbatch_batch_add_mapped

        function ompbatch_batch_submit(batch) bind(C, name="ompbatch_batch_submit")
            import :: c_int, c_ptr
            type(c_ptr), value :: batch
            integer(c_int) :: ompbatch_batch_submit
        end function ompbatch_batch_submit

        function ompbatch_batch_wait(batch) bind(C, name="ompbatch_batch_wait")
            import :: c_int, c_ptr
            type(c_ptr), value :: batch
            integer(c_int) :: ompbatch_batch_wait
        end function ompbatch_batch_wait

        function ompbatch_batch_reset(batch) bind(C, name="ompbatch_batch_reset")
            import :: c_int, c_ptr
            type(c_ptr), value :: batch
            integer(c_int) :: ompbatch_batch_reset
        end function ompbatch_batch_reset

        function ompbatch_batch_forget_memory(batch) bind(C, name="ompbatch_batch_forget_memory")
            import :: c_int, c_ptr
            type(c_ptr), value :: batch
            integer(c_int) :: ompbatch_batch_forget_memory
        end function ompbatch_batch_forget_memory

        ! The handle is passed by value, so it still holds the dead address afterwards: set it
        ! to c_null_ptr if it may be destroyed again.
        function ompbatch_batch_destroy(batch) bind(C, name="ompbatch_batch_destroy")
            import :: c_int, c_ptr
            type(c_ptr), value :: batch
            integer(c_int) :: ompbatch_batch_destroy
        end function ompbatch_batch_destroy

        function ompbatch_batch_get_stats(batch, stats) bind(C, name="ompbatch_batch_get_stats")
            import :: c_int, c_ptr, ompbatch_stats
            type(c_ptr), value :: batch
            type(ompbatch_stats), intent(inout) :: stats
            integer(c_int) :: ompbatch_batch_get_stats
        end function ompbatch_batch_get_stats

        ! buf absent with size = 0 asks only for the length (needed). Fortran callers usually
        ! want ompbatch_batch_description instead.
        function ompbatch_batch_describe(batch, buf, size, needed) &
            bind(C, name="ompbatch_batch_describe")
            import :: c_char, c_int, c_size_t, c_ptr
            type(c_ptr), value :: batch
            character(kind=c_char), intent(out), optional :: buf(*)
            integer(c_size_t), value :: size
            integer(c_size_t), intent(out), optional :: needed
            integer(c_int) :: ompbatch_batch_describe
        end function ompbatch_batch_describe

        function ompbatch_hook_get_stats(stats) bind(C, name="ompbatch_hook_get_stats")
            import :: c_int, ompbatch_hook_stats
            type(ompbatch_hook_stats), intent(inout) :: stats
            integer(c_int) :: ompbatch_hook_get_stats
        end function ompbatch_hook_get_stats

        function ompbatch_hook_reset_stats() bind(C, name="ompbatch_hook_reset_stats")
            import :: c_int
            integer(c_int) :: ompbatch_hook_reset_stats
        end function ompbatch_hook_reset_stats

        ! Returns the previous setting (0 or 1) or a negative status.
        function ompbatch_hook_set_enabled(enabled) bind(C, name="ompbatch_hook_set_enabled")
            import :: c_int
            integer(c_int), value :: enabled
            integer(c_int) :: ompbatch_hook_set_enabled
        end function ompbatch_hook_set_enabled
    end interface

    ! The C library's strlen, to size the copy of a C string.
    interface
        function c_strlen(s) bind(C, name="strlen")
            import :: c_size_t, c_ptr
            type(c_ptr), value :: s
            integer(c_size_t) :: c_strlen
        end function c_strlen
    end interface

contains

    ! A copy of the NUL-terminated C string at cstr ("" for c_null_ptr), for the strings the
    ! library hands out: ompbatch_driver_info's library and reason, the raw *_c results.
    function ompbatch_c_string(cstr) result(text)
        type(c_ptr), intent(in) :: cstr
        character(len=:), allocatable :: text
        call copy_c_string(cstr, text)
    end function ompbatch_c_string

    ! The helpers copy through this subroutine rather than assign one string function's result
    ! to another: for that, gfortran 12 keeps the result's length in a static variable (slen.*
    ! in the object file), which threads reading their own last_error at once would share.
    subroutine copy_c_string(cstr, text)
        type(c_ptr), intent(in) :: cstr
        character(len=:), allocatable, intent(out) :: text
        character(kind=c_char), pointer :: chars(:)
        integer(c_size_t) :: n, i

        if (.not. c_associated(cstr)) then
            allocate (character(len=0) :: text)
            return
        end if
        n = c_strlen(cstr)
        call c_f_pointer(cstr, chars, [n])
        allocate (character(len=n) :: text)
        do i = 1, n
            text(i:i) = chars(i)
        end do
    end subroutine copy_c_string

    ! "OMPBATCH_ERR_INVALID_DEVICE" for OMPBATCH_ERR_INVALID_DEVICE; "OMPBATCH_ERR_UNKNOWN"
    ! for a value not in the list.
    function ompbatch_err_name(status) result(text)
        integer(c_int), intent(in) :: status
        character(len=:), allocatable :: text
        call copy_c_string(ompbatch_err_name_c(status), text)
    end function ompbatch_err_name

    ! The fixed description of a status ("invalid device number").
    function ompbatch_strerror(status) result(text)
        integer(c_int), intent(in) :: status
        character(len=:), allocatable :: text
        call copy_c_string(ompbatch_strerror_c(status), text)
    end function ompbatch_strerror

    ! The calling thread's message for its last failed call, naming the argument or copy at
    ! fault and the reason ("copy 3: src is NULL"); "" if none failed. A copy: it stays valid
    ! after later calls, unlike the C pointer.
    function ompbatch_last_error() result(text)
        character(len=:), allocatable :: text
        call copy_c_string(ompbatch_last_error_c(), text)
    end function ompbatch_last_error

    ! The batch's plan as text (ompbatch_batch_describe without the buffer sizing). status, if
    ! present, receives the describe's status; the text is "" when it failed.
    function ompbatch_batch_description(batch, status) result(text)
        type(c_ptr), intent(in) :: batch
        integer(c_int), intent(out), optional :: status
        character(len=:), allocatable :: text
        character(kind=c_char), allocatable :: buf(:)
        integer(c_size_t) :: needed, length, i
        integer(c_int) :: rc

        needed = 0
        length = 0
        ! First ask for the length, then describe into a buffer one byte longer (for the NUL).
        rc = ompbatch_batch_describe(batch, size=0_c_size_t, needed=needed)
        if (rc == OMPBATCH_OK) then
            allocate (buf(needed + 1))
            rc = ompbatch_batch_describe(batch, buf, needed + 1, length)
        end if
        ! The plan does not change between the two calls; min() only guards the buffer.
        if (rc /= OMPBATCH_OK) length = 0
        length = min(length, needed)
        allocate (character(len=length) :: text)
        do i = 1, length
            text(i:i) = buf(i)
        end do
        if (present(status)) status = rc
    end function ompbatch_batch_description

end module ompbatch
