! Host <-> device copies on CUDA device 0 through the Fortran module, checked byte for byte:
! batches of many copies of random sizes from pageable and pinned host memory to device memory
! and back, under each strategy (auto, direct, staged), and the one-shot call both ways.
! Destinations are poisoned first; the device side is read back with cuMemcpyDtoH and compared
! with a reference the test computes itself.
!
! The test allocates and reads device memory through the CUDA driver itself. It does not link
! libcuda: it opens the library that ompbatch opened (ompbatch_driver_info%library) with
! dlopen, so the binary also starts, and skips, on machines without a driver, and the GPU pack
! needs no libcuda at build time.
!
! Without a usable GPU it prints "SKIPPED: no CUDA driver: <reason>" and exits 0; with
! OMPBATCH_REQUIRE_GPU=1 (bazel test --config=gpu, the GPU pack's runner) that is a failure.
! Random data: OMPBATCH_TEST_SEED, printed at the start.
program gpu_test
    use, intrinsic :: iso_c_binding
    use ompbatch
    use ompbatch_test_support
    implicit none

    integer(c_int), parameter :: H = OMPBATCH_HOST_DEVICE
    integer(c_int), parameter :: DEVICE = 0
    integer, parameter :: ARENA = 4 * 1048576
    integer(c_int), parameter :: RTLD_NOW = 2
    integer(c_int), parameter :: CUDA_SUCCESS = 0

    ! The driver entry points the test uses, with their C signatures (cuda.h): CUresult is an
    ! int enum, CUdevice an int, CUcontext a pointer, CUdeviceptr an unsigned long long.
    abstract interface
        function cu_init_fn(flags) bind(C)
            import :: c_int
            integer(c_int), value :: flags
            integer(c_int) :: cu_init_fn
        end function cu_init_fn
        function cu_device_get_fn(device, ordinal) bind(C)
            import :: c_int
            integer(c_int), intent(out) :: device
            integer(c_int), value :: ordinal
            integer(c_int) :: cu_device_get_fn
        end function cu_device_get_fn
        function cu_primary_ctx_retain_fn(context, device) bind(C)
            import :: c_int, c_ptr
            type(c_ptr), intent(out) :: context
            integer(c_int), value :: device
            integer(c_int) :: cu_primary_ctx_retain_fn
        end function cu_primary_ctx_retain_fn
        function cu_device_fn(device) bind(C)
            import :: c_int
            integer(c_int), value :: device
            integer(c_int) :: cu_device_fn
        end function cu_device_fn
        function cu_ctx_push_fn(context) bind(C)
            import :: c_int, c_ptr
            type(c_ptr), value :: context
            integer(c_int) :: cu_ctx_push_fn
        end function cu_ctx_push_fn
        function cu_ctx_pop_fn(context) bind(C)
            import :: c_int, c_ptr
            type(c_ptr), intent(out) :: context
            integer(c_int) :: cu_ctx_pop_fn
        end function cu_ctx_pop_fn
        function cu_void_fn() bind(C)
            import :: c_int
            integer(c_int) :: cu_void_fn
        end function cu_void_fn
        function cu_mem_alloc_fn(dptr, bytes) bind(C)
            import :: c_int, c_long_long, c_size_t
            integer(c_long_long), intent(out) :: dptr
            integer(c_size_t), value :: bytes
            integer(c_int) :: cu_mem_alloc_fn
        end function cu_mem_alloc_fn
        function cu_mem_free_fn(dptr) bind(C)
            import :: c_int, c_long_long
            integer(c_long_long), value :: dptr
            integer(c_int) :: cu_mem_free_fn
        end function cu_mem_free_fn
        function cu_mem_alloc_host_fn(p, bytes) bind(C)
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), intent(out) :: p
            integer(c_size_t), value :: bytes
            integer(c_int) :: cu_mem_alloc_host_fn
        end function cu_mem_alloc_host_fn
        function cu_mem_free_host_fn(p) bind(C)
            import :: c_int, c_ptr
            type(c_ptr), value :: p
            integer(c_int) :: cu_mem_free_host_fn
        end function cu_mem_free_host_fn
        function cu_memcpy_htod_fn(dst, src, bytes) bind(C)
            import :: c_int, c_long_long, c_ptr, c_size_t
            integer(c_long_long), value :: dst
            type(c_ptr), value :: src
            integer(c_size_t), value :: bytes
            integer(c_int) :: cu_memcpy_htod_fn
        end function cu_memcpy_htod_fn
        function cu_memcpy_dtoh_fn(dst, src, bytes) bind(C)
            import :: c_int, c_long_long, c_ptr, c_size_t
            type(c_ptr), value :: dst
            integer(c_long_long), value :: src
            integer(c_size_t), value :: bytes
            integer(c_int) :: cu_memcpy_dtoh_fn
        end function cu_memcpy_dtoh_fn
    end interface

    ! libc's dynamic loader (POSIX: dlsym's result may be used as a function pointer).
    interface
        function dlopen(file, mode) bind(C, name="dlopen")
            import :: c_char, c_int, c_ptr
            character(kind=c_char), intent(in) :: file(*)
            integer(c_int), value :: mode
            type(c_ptr) :: dlopen
        end function dlopen
        function dlsym(handle, name) bind(C, name="dlsym")
            import :: c_char, c_ptr, c_funptr
            type(c_ptr), value :: handle
            character(kind=c_char), intent(in) :: name(*)
            type(c_funptr) :: dlsym
        end function dlsym
        function dlerror() bind(C, name="dlerror")
            import :: c_ptr
            type(c_ptr) :: dlerror
        end function dlerror
    end interface

    procedure(cu_init_fn), pointer :: cuInit => null()
    procedure(cu_device_get_fn), pointer :: cuDeviceGet => null()
    procedure(cu_primary_ctx_retain_fn), pointer :: cuDevicePrimaryCtxRetain => null()
    procedure(cu_device_fn), pointer :: cuDevicePrimaryCtxRelease => null()
    procedure(cu_ctx_push_fn), pointer :: cuCtxPushCurrent => null()
    procedure(cu_ctx_pop_fn), pointer :: cuCtxPopCurrent => null()
    procedure(cu_void_fn), pointer :: cuCtxSynchronize => null()
    procedure(cu_mem_alloc_fn), pointer :: cuMemAlloc => null()
    procedure(cu_mem_free_fn), pointer :: cuMemFree => null()
    procedure(cu_mem_alloc_host_fn), pointer :: cuMemAllocHost => null()
    procedure(cu_mem_free_host_fn), pointer :: cuMemFreeHost => null()
    procedure(cu_memcpy_htod_fn), pointer :: cuMemcpyHtoD => null()
    procedure(cu_memcpy_dtoh_fn), pointer :: cuMemcpyDtoH => null()

    integer(c_int), parameter :: strategies(3) = [OMPBATCH_STRATEGY_AUTO, &
                                                  OMPBATCH_STRATEGY_DIRECT, OMPBATCH_STRATEGY_STAGED]
    character(len=6), parameter :: strategy_names(3) = ['auto  ', 'direct', 'staged']

    type(c_ptr) :: context, pinned_ptr
    integer(c_int) :: cu_device
    integer(c_long_long) :: device_base
    ! Host memory of both kinds the library distinguishes: pageable (the Fortran heap) and
    ! pinned (cuMemAllocHost), as source and as destination.
    integer(c_int8_t), allocatable, target :: pageable(:)
    integer(c_int8_t), pointer :: pinned(:)
    ! What the device buffer must hold; uploaded and read back through the driver directly.
    integer(c_int8_t), allocatable, target :: device_image(:), readback(:)
    integer :: s

    call seed_random()
    if (.not. gpu_available()) stop
    call open_driver()
    call setup()
    do s = 1, size(strategies)
        call test_host_to_device(strategies(s), trim(strategy_names(s)))
        call test_device_to_host(strategies(s), trim(strategy_names(s)))
    end do
    call test_one_shot_both_ways()
    call teardown()
    call finish('fortran gpu test')

contains

    ! Skips (exit 0) or, with OMPBATCH_REQUIRE_GPU set, fails when there is no device 0.
    logical function gpu_available()
        type(ompbatch_driver_info) :: info
        character(len=:), allocatable :: reason

        info%struct_size = c_sizeof(info)
        call expect_status(ompbatch_get_driver_info(info), OMPBATCH_OK, 'ompbatch_get_driver_info')
        gpu_available = info%driver_loaded == 1 .and. info%device_count > 0
        if (gpu_available) then
            write (*, '(a, i0, a, i0, a, i0, a)') 'gpu: driver ', info%driver_version, ', ', &
                info%device_count, ' devices, batch form ', info%batch_form, ', library '// &
                ompbatch_c_string(info%library)
            return
        end if
        reason = ompbatch_c_string(info%reason)
        if (info%driver_loaded == 1) reason = 'the driver reports no CUDA device'
        if (env_flag('OMPBATCH_REQUIRE_GPU')) then
            write (*, '(a)') 'FAIL: OMPBATCH_REQUIRE_GPU is set, so a missing GPU is a failure: '// &
                'no CUDA driver: '//reason
            stop 1
        end if
        write (*, '(a)') 'SKIPPED: no CUDA driver: '//reason
    end function gpu_available

    ! The same driver library ompbatch opened (already loaded: dlopen only adds a reference).
    subroutine open_driver()
        type(ompbatch_driver_info) :: info
        type(c_ptr) :: handle

        info%struct_size = c_sizeof(info)
        call expect_status(ompbatch_get_driver_info(info), OMPBATCH_OK, 'ompbatch_get_driver_info')
        handle = dlopen(ompbatch_c_string(info%library)//c_null_char, RTLD_NOW)
        if (.not. c_associated(handle)) then
            write (*, '(a)') 'FAIL: dlopen '//ompbatch_c_string(info%library)//': '// &
                ompbatch_c_string(dlerror())
            stop 1
        end if
        call c_f_procpointer(symbol(handle, 'cuInit'), cuInit)
        call c_f_procpointer(symbol(handle, 'cuDeviceGet'), cuDeviceGet)
        call c_f_procpointer(symbol(handle, 'cuDevicePrimaryCtxRetain'), cuDevicePrimaryCtxRetain)
        call c_f_procpointer(symbol(handle, 'cuDevicePrimaryCtxRelease_v2'), &
                             cuDevicePrimaryCtxRelease)
        call c_f_procpointer(symbol(handle, 'cuCtxPushCurrent_v2'), cuCtxPushCurrent)
        call c_f_procpointer(symbol(handle, 'cuCtxPopCurrent_v2'), cuCtxPopCurrent)
        call c_f_procpointer(symbol(handle, 'cuCtxSynchronize'), cuCtxSynchronize)
        call c_f_procpointer(symbol(handle, 'cuMemAlloc_v2'), cuMemAlloc)
        call c_f_procpointer(symbol(handle, 'cuMemFree_v2'), cuMemFree)
        call c_f_procpointer(symbol(handle, 'cuMemAllocHost_v2'), cuMemAllocHost)
        call c_f_procpointer(symbol(handle, 'cuMemFreeHost'), cuMemFreeHost)
        call c_f_procpointer(symbol(handle, 'cuMemcpyHtoD_v2'), cuMemcpyHtoD)
        call c_f_procpointer(symbol(handle, 'cuMemcpyDtoH_v2'), cuMemcpyDtoH)
    end subroutine open_driver

    function symbol(handle, name) result(address)
        type(c_ptr), intent(in) :: handle
        character(len=*), intent(in) :: name
        type(c_funptr) :: address

        address = dlsym(handle, name//c_null_char)
        if (.not. c_associated(address)) then
            write (*, '(a)') 'FAIL: the driver lacks '//name
            stop 1
        end if
    end function symbol

    ! A driver call that must succeed; the test cannot go on without it.
    subroutine cu_check(result, call_name)
        integer(c_int), intent(in) :: result
        character(len=*), intent(in) :: call_name

        if (result /= CUDA_SUCCESS) then
            write (*, '(a, i0)') 'FAIL: '//call_name//' returned CUresult ', result
            stop 1
        end if
    end subroutine cu_check

    ! Device memory, pinned memory, on device 0's primary context (the one ompbatch uses),
    ! kept current for the whole test.
    subroutine setup()
        call cu_check(cuInit(0_c_int), 'cuInit')
        call cu_check(cuDeviceGet(cu_device, DEVICE), 'cuDeviceGet')
        call cu_check(cuDevicePrimaryCtxRetain(context, cu_device), 'cuDevicePrimaryCtxRetain')
        call cu_check(cuCtxPushCurrent(context), 'cuCtxPushCurrent')
        call cu_check(cuMemAlloc(device_base, int(ARENA, c_size_t)), 'cuMemAlloc')
        call cu_check(cuMemAllocHost(pinned_ptr, int(ARENA, c_size_t)), 'cuMemAllocHost')
        call c_f_pointer(pinned_ptr, pinned, [ARENA])
        allocate (pageable(ARENA), device_image(ARENA), readback(ARENA))
    end subroutine setup

    subroutine teardown()
        type(c_ptr) :: popped

        call cu_check(cuMemFreeHost(pinned_ptr), 'cuMemFreeHost')
        call cu_check(cuMemFree(device_base), 'cuMemFree')
        call cu_check(cuCtxPopCurrent(popped), 'cuCtxPopCurrent')
        call cu_check(cuDevicePrimaryCtxRelease(cu_device), 'cuDevicePrimaryCtxRelease')
    end subroutine teardown

    ! The device address offset bytes into the device buffer, as ompbatch takes it (a c_ptr
    ! holding the CUdeviceptr).
    function device_ptr(offset) result(p)
        integer, intent(in) :: offset
        type(c_ptr) :: p
        p = transfer(device_base + int(offset, c_long_long), c_null_ptr)
    end function device_ptr

    ! Writes device_image to the device. The copy is complete before the batch's stream (a
    ! non-blocking one, not ordered after the legacy stream) starts: a pageable cuMemcpyHtoD may
    ! return before its DMA lands, so the context is synchronised too.
    subroutine upload_device_image()
        call cu_check(cuMemcpyHtoD(device_base, c_loc(device_image), int(ARENA, c_size_t)), &
                      'cuMemcpyHtoD')
        call cu_check(cuCtxSynchronize(), 'cuCtxSynchronize')
    end subroutine upload_device_image

    subroutine check_device_image(what)
        character(len=*), intent(in) :: what

        readback = 0
        call cu_check(cuMemcpyDtoH(c_loc(readback), device_base, int(ARENA, c_size_t)), &
                      'cuMemcpyDtoH')
        call expect_bytes(readback, device_image, what)
    end subroutine check_device_image

    ! Mostly small pieces (the batched and staged paths), some up to 256 KiB.
    integer function piece_size()
        if (random_below(16) == 0) then
            piece_size = 1 + random_below(262144)
        else
            piece_size = 1 + random_below(4096)
        end if
    end function piece_size

    function new_device_batch(strategy) result(batch)
        integer(c_int), intent(in) :: strategy
        type(c_ptr) :: batch
        type(ompbatch_batch_options) :: options

        options%struct_size = c_sizeof(options)
        options%strategy = strategy
        call expect_status(ompbatch_batch_create(batch, DEVICE, c_null_ptr, options), &
                           OMPBATCH_OK, 'ompbatch_batch_create for device 0')
    end function new_device_batch

    subroutine check_stats(batch, count, total, strategy, what)
        type(c_ptr), intent(in) :: batch
        integer, intent(in) :: count
        integer(c_int64_t), intent(in) :: total
        integer(c_int), intent(in) :: strategy
        character(len=*), intent(in) :: what
        type(ompbatch_stats) :: stats

        stats%struct_size = c_sizeof(stats)
        call expect_status(ompbatch_batch_get_stats(batch, stats), OMPBATCH_OK, 'get_stats')
        call expect(stats%copies_added == count, what//': stats%copies_added is '// &
                    to_text(stats%copies_added)//', want '//to_text(count))
        call expect(stats%bytes == total, what//': stats%bytes is '//to_text(stats%bytes)// &
                    ', want '//to_text(total))
        call expect(stats%copies_done == stats%copies_planned, what//': every planned copy done')
        call expect(stats%paths /= 0 .and. iand(stats%paths, OMPBATCH_PATH_HOST) == 0, &
                    what//': device paths only, stats%paths = '//to_text(int(stats%paths)))
        if (strategy == OMPBATCH_STRATEGY_DIRECT) &
            call expect(stats%staged_copies == 0 .and. stats%kernel_launches == 0, &
                        what//': the direct strategy stages nothing')
        if (strategy == OMPBATCH_STRATEGY_STAGED) &
            call expect(stats%staged_copies > 0 .or. stats%staging_refused > 0, &
                        what//': the staged strategy staged pieces')
        write (*, '(a, 5(a, i0))') what, ': ', stats%copies_added, ' copies, ', &
            stats%copies_planned, ' planned, ', stats%driver_calls, ' driver calls, ', &
            stats%staged_copies, ' staged, paths ', stats%paths
    end subroutine check_stats

    ! Pieces from pageable and pinned sources (alternating) to increasing places of the
    ! poisoned device buffer, with poisoned gaps between them.
    subroutine test_host_to_device(strategy, name)
        integer(c_int), intent(in) :: strategy
        character(len=*), intent(in) :: name
        type(c_ptr) :: batch, src
        integer :: at, bytes, from, count
        integer(c_int64_t) :: total

        call random_bytes(pageable)
        call random_bytes(pinned)
        device_image = POISON
        call upload_device_image()
        batch = new_device_batch(strategy)
        at = 0
        count = 0
        total = 0
        do
            bytes = piece_size()
            if (at + bytes > ARENA) exit
            from = random_below(ARENA - bytes)
            if (mod(count, 2) == 0) then
                src = c_loc(pageable(from + 1))
                device_image(at + 1:at + bytes) = pageable(from + 1:from + bytes)
            else
                src = c_loc(pinned(from + 1))
                device_image(at + 1:at + bytes) = pinned(from + 1:from + bytes)
            end if
            call expect_status(ompbatch_batch_add(batch, device_ptr(at), DEVICE, src, H, &
                                                  int(bytes, c_size_t), OMPBATCH_MAP_TO), &
                               OMPBATCH_OK, name//' host to device: add copy '//to_text(count))
            at = at + bytes + random_below(256)
            count = count + 1
            total = total + bytes
        end do
        call expect_status(ompbatch_batch_submit(batch), OMPBATCH_OK, name//' host to device: submit')
        call expect_status(ompbatch_batch_wait(batch), OMPBATCH_OK, name//' host to device: wait')
        call check_device_image(name//' host to device, '//to_text(count)//' copies')
        call check_stats(batch, count, total, strategy, name//' host to device')
        call expect_status(ompbatch_batch_destroy(batch), OMPBATCH_OK, 'destroy')
    end subroutine test_host_to_device

    ! Pieces of the device buffer (random data) to increasing places of poisoned pageable and
    ! pinned destinations (alternating).
    subroutine test_device_to_host(strategy, name)
        integer(c_int), intent(in) :: strategy
        character(len=*), intent(in) :: name
        integer(c_int8_t), allocatable :: want_pageable(:), want_pinned(:)
        type(c_ptr) :: batch, dst
        integer :: at_pageable, at_pinned, bytes, from, count
        integer(c_int64_t) :: total

        call random_bytes(device_image)
        call upload_device_image()
        pageable = POISON
        pinned = POISON
        allocate (want_pageable(ARENA), want_pinned(ARENA))
        want_pageable = POISON
        want_pinned = POISON
        batch = new_device_batch(strategy)
        at_pageable = 0
        at_pinned = 0
        count = 0
        total = 0
        do
            bytes = piece_size()
            from = random_below(ARENA - bytes)
            if (mod(count, 2) == 0) then
                if (at_pageable + bytes > ARENA) exit
                dst = c_loc(pageable(at_pageable + 1))
                want_pageable(at_pageable + 1:at_pageable + bytes) = device_image(from + 1:from + bytes)
                at_pageable = at_pageable + bytes + random_below(256)
            else
                if (at_pinned + bytes > ARENA) exit
                dst = c_loc(pinned(at_pinned + 1))
                want_pinned(at_pinned + 1:at_pinned + bytes) = device_image(from + 1:from + bytes)
                at_pinned = at_pinned + bytes + random_below(256)
            end if
            call expect_status(ompbatch_batch_add(batch, dst, H, device_ptr(from), DEVICE, &
                                                  int(bytes, c_size_t), OMPBATCH_MAP_FROM), &
                               OMPBATCH_OK, name//' device to host: add copy '//to_text(count))
            count = count + 1
            total = total + bytes
        end do
        call expect_status(ompbatch_batch_submit(batch), OMPBATCH_OK, name//' device to host: submit')
        ! Staged copies into pageable memory land during the wait, not before.
        call expect_status(ompbatch_batch_wait(batch), OMPBATCH_OK, name//' device to host: wait')
        call expect_bytes(pageable, want_pageable, name//' device to pageable host')
        call expect_bytes(pinned, want_pinned, name//' device to pinned host')
        call check_stats(batch, count, total, strategy, name//' device to host')
        call expect_status(ompbatch_batch_destroy(batch), OMPBATCH_OK, 'destroy')
    end subroutine test_device_to_host

    ! ompbatch_target_memcpy_batch host -> device with offset arrays, then device -> host
    ! without them, through pageable memory.
    subroutine test_one_shot_both_ways()
        integer, parameter :: n = 500
        type(c_ptr) :: dsts(n), srcs(n)
        integer(c_size_t) :: lengths(n), dst_offsets(n), src_offsets(n)
        integer(c_int8_t), allocatable :: want(:)
        integer :: i, at, from, bytes, base

        ! Host to device: each pointer at a base, the rest of the way in the offset arrays.
        call random_bytes(pageable)
        device_image = POISON
        call upload_device_image()
        at = 0
        do i = 1, n
            bytes = 1 + random_below(4096)
            from = random_below(ARENA - bytes)
            base = random_below(at + 1)
            dsts(i) = device_ptr(base)
            dst_offsets(i) = int(at - base, c_size_t)
            base = random_below(from + 1)
            srcs(i) = c_loc(pageable(base + 1))
            src_offsets(i) = int(from - base, c_size_t)
            lengths(i) = int(bytes, c_size_t)
            device_image(at + 1:at + bytes) = pageable(from + 1:from + bytes)
            at = at + bytes + random_below(64)
        end do
        call expect_status(ompbatch_target_memcpy_batch(dsts, srcs, lengths, dst_offsets, &
                                                        src_offsets, int(n, c_size_t), DEVICE, H), &
                           OMPBATCH_OK, 'one-shot host to device')
        call check_device_image('one-shot host to device, '//to_text(n)//' copies')

        ! Device to host, no offset arrays.
        call random_bytes(device_image)
        call upload_device_image()
        pageable = POISON
        allocate (want(ARENA))
        want = POISON
        at = 0
        do i = 1, n
            bytes = 1 + random_below(4096)
            from = random_below(ARENA - bytes)
            dsts(i) = c_loc(pageable(at + 1))
            srcs(i) = device_ptr(from)
            lengths(i) = int(bytes, c_size_t)
            want(at + 1:at + bytes) = device_image(from + 1:from + bytes)
            at = at + bytes + random_below(64)
        end do
        call expect_status(ompbatch_target_memcpy_batch(dsts, srcs, lengths, count=int(n, c_size_t), &
                                                        dst_device_num=H, src_device_num=DEVICE), &
                           OMPBATCH_OK, 'one-shot device to host')
        call expect_bytes(pageable, want, 'one-shot device to host, '//to_text(n)//' copies')
    end subroutine test_one_shot_both_ways

end program gpu_test
