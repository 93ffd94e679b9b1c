! The public API through the Fortran module, on the host backend: no CUDA driver in this
! process (the test runs with OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1), so batches are
! for the host (OMPBATCH_HOST_DEVICE) and copies are host-to-host memcpy.
!
! Checks that the bindings carry every argument right: many copies of random sizes on random
! bytes into poisoned destinations, compared byte for byte with a reference the test computes
! itself; the one-shot call with and without offset arrays; options, statistics and the
! driver report read through the bind(C) types; error paths returning the right status with a
! message naming the argument; the version and status names.
program api_test
    use, intrinsic :: iso_c_binding
    use ompbatch
    use ompbatch_test_support
    implicit none

    integer(c_int), parameter :: H = OMPBATCH_HOST_DEVICE

    call seed_random()
    call test_version_and_status_names()
    call test_driver_info()
    call test_scattered_copies()
    call test_dependent_copies_follow_add_order()
    call test_options_merge_and_refill()
    call test_one_shot()
    call test_rectangles()
    call test_errors_name_the_argument()
    call test_destroyed_batch()
    call test_hook_controls()
    call finish('fortran api test')

contains

    function new_batch(options) result(batch)
        type(ompbatch_batch_options), intent(in), optional :: options
        type(c_ptr) :: batch

        call expect_status(ompbatch_batch_create(batch, H, c_null_ptr, options), OMPBATCH_OK, &
                           'ompbatch_batch_create for the host')
    end function new_batch

    function stats_of(batch) result(stats)
        type(c_ptr), intent(in) :: batch
        type(ompbatch_stats) :: stats

        stats%struct_size = c_sizeof(stats)
        call expect_status(ompbatch_batch_get_stats(batch, stats), OMPBATCH_OK, &
                           'ompbatch_batch_get_stats')
        call expect(stats%struct_size == c_sizeof(stats), 'stats%struct_size is kept')
    end function stats_of

    subroutine test_version_and_status_names()
        integer(c_int), parameter :: codes(12) = [OMPBATCH_OK, OMPBATCH_ERR_INVALID_ARGUMENT, &
            OMPBATCH_ERR_NULL_POINTER, OMPBATCH_ERR_OVERFLOW, OMPBATCH_ERR_INVALID_DEVICE, &
            OMPBATCH_ERR_NOT_MAPPED, OMPBATCH_ERR_NO_DRIVER, OMPBATCH_ERR_NO_OFFLOAD_RUNTIME, &
            OMPBATCH_ERR_DRIVER, OMPBATCH_ERR_NO_MEMORY, OMPBATCH_ERR_BAD_STATE, &
            OMPBATCH_ERR_UNSUPPORTED]
        character(len=*), parameter :: names(12) = [character(len=31) :: 'OMPBATCH_ERR_OK', &
            'OMPBATCH_ERR_INVALID_ARGUMENT', 'OMPBATCH_ERR_NULL_POINTER', 'OMPBATCH_ERR_OVERFLOW', &
            'OMPBATCH_ERR_INVALID_DEVICE', 'OMPBATCH_ERR_NOT_MAPPED', 'OMPBATCH_ERR_NO_DRIVER', &
            'OMPBATCH_ERR_NO_OFFLOAD_RUNTIME', 'OMPBATCH_ERR_DRIVER', 'OMPBATCH_ERR_NO_MEMORY', &
            'OMPBATCH_ERR_BAD_STATE', 'OMPBATCH_ERR_UNSUPPORTED']
        integer :: i

        call expect(ompbatch_version() == OMPBATCH_MODULE_VERSION, 'ompbatch_version() is '// &
                    to_text(int(ompbatch_version()))//', the module was written for '// &
                    to_text(int(OMPBATCH_MODULE_VERSION)))
        call expect(OMPBATCH_MODULE_VERSION == OMPBATCH_VERSION_MAJOR * 10000 + &
                    OMPBATCH_VERSION_MINOR * 100 + OMPBATCH_VERSION_PATCH, &
                    'OMPBATCH_MODULE_VERSION is MAJOR * 10000 + MINOR * 100 + PATCH')
        do i = 1, size(codes)
            call expect(ompbatch_err_name(codes(i)) == trim(names(i)), 'ompbatch_err_name('// &
                        to_text(int(codes(i)))//') is "'//ompbatch_err_name(codes(i))//'"')
            call expect(len(ompbatch_strerror(codes(i))) > 0, 'ompbatch_strerror('// &
                        to_text(int(codes(i)))//') is not empty')
        end do
        call expect(ompbatch_strerror(OMPBATCH_OK) == 'success', 'strerror(OMPBATCH_OK)')
        call expect(ompbatch_strerror(OMPBATCH_ERR_INVALID_DEVICE) == 'invalid device number', &
                    'strerror(OMPBATCH_ERR_INVALID_DEVICE)')
        call expect(ompbatch_err_name(-999_c_int) == 'OMPBATCH_ERR_UNKNOWN', 'err_name(-999)')
        call expect(ompbatch_strerror(42_c_int) == 'unknown status', 'strerror(42)')
    end subroutine test_version_and_status_names

    subroutine test_driver_info()
        type(ompbatch_driver_info) :: info
        character(len=:), allocatable :: wanted_library

        info%struct_size = c_sizeof(info)
        info%driver_loaded = -1
        info%device_count = -1
        call expect_status(ompbatch_get_driver_info(info), OMPBATCH_OK, 'ompbatch_get_driver_info')
        call expect(info%driver_loaded == 0, 'no driver is loaded (run with '// &
                    'OMPBATCH_CUDA_LIBRARY=/nonexistent/libcuda.so.1)')
        call expect(info%device_count == 0, 'no CUDA device without a driver')
        call expect(info%batch_form == OMPBATCH_FORM_NONE, 'batch_form is OMPBATCH_FORM_NONE')
        call expect(len(ompbatch_c_string(info%reason)) > 0, 'info%reason says why there is '// &
                    'no driver')
        wanted_library = env_value('OMPBATCH_CUDA_LIBRARY')
        if (len(wanted_library) > 0) &
            call expect(ompbatch_c_string(info%library) == wanted_library, 'info%library is "'// &
                        ompbatch_c_string(info%library)//'", want "'//wanted_library//'"')
        write (*, '(a)') 'driver: '//ompbatch_c_string(info%reason)

        info%struct_size = 4
        call expect_status(ompbatch_get_driver_info(info), OMPBATCH_ERR_INVALID_ARGUMENT, &
                           'ompbatch_get_driver_info with struct_size 4')
        call expect_message('struct_size', 'a short driver_info')
    end subroutine test_driver_info

    ! Pieces of random sizes (some of zero bytes) from random places of a source arena to
    ! increasing places of a poisoned destination, with gaps that must stay poisoned.
    subroutine test_scattered_copies()
        integer, parameter :: arena = 1048576
        integer(c_int8_t), allocatable, target :: src(:), dst(:)
        integer(c_int8_t), allocatable :: expected(:)
        type(c_ptr) :: batch
        type(ompbatch_stats) :: stats
        integer :: at, bytes, from, count, zeros
        integer(c_int64_t) :: total, map_type
        character(len=:), allocatable :: plan
        integer(c_int) :: rc

        allocate (src(arena), dst(arena), expected(arena))
        call random_bytes(src)
        dst = POISON
        expected = POISON
        batch = new_batch()
        at = 0
        count = 0
        zeros = 0
        total = 0
        do while (at + 5000 < arena)
            if (mod(count, 97) == 13) then
                bytes = 0
                zeros = zeros + 1
            else
                bytes = 1 + random_below(4000)
            end if
            from = random_below(arena - bytes)
            ! Map types do not change a host copy; alternate them to pass 64-bit values through.
            map_type = merge(OMPBATCH_MAP_TO, 0_c_int64_t, mod(count, 2) == 0)
            call expect_status(ompbatch_batch_add(batch, c_loc(dst(at + 1)), H, c_loc(src(from + 1)), &
                                                  H, int(bytes, c_size_t), map_type), &
                               OMPBATCH_OK, 'add copy '//to_text(count))
            expected(at + 1:at + bytes) = src(from + 1:from + bytes)
            at = at + bytes + random_below(64)
            count = count + 1
            total = total + bytes
        end do
        call expect_status(ompbatch_batch_submit(batch), OMPBATCH_OK, 'submit the scattered copies')
        call expect_status(ompbatch_batch_wait(batch), OMPBATCH_OK, 'wait')
        call expect_bytes(dst, expected, to_text(count)//' scattered copies')

        stats = stats_of(batch)
        call expect(stats%copies_added == count, 'stats%copies_added is '// &
                    to_text(stats%copies_added)//', want '//to_text(count))
        call expect(stats%copies_zero == zeros, 'stats%copies_zero is '// &
                    to_text(stats%copies_zero)//', want '//to_text(zeros))
        call expect(stats%bytes == total, 'stats%bytes is '//to_text(stats%bytes)//', want '// &
                    to_text(total))
        call expect(stats%copies_planned >= 1 .and. stats%copies_planned <= count - zeros, &
                    'stats%copies_planned is '//to_text(stats%copies_planned))
        call expect(stats%copies_done == stats%copies_planned, 'stats%copies_done = planned')
        call expect(stats%paths == OMPBATCH_PATH_HOST, 'stats%paths is OMPBATCH_PATH_HOST')
        call expect(stats%driver_calls == 0 .and. stats%batch_calls == 0, 'no driver calls')
        call expect(stats%sub_batches >= 1, 'stats%sub_batches >= 1')

        plan = ompbatch_batch_description(batch, rc)
        call expect_status(rc, OMPBATCH_OK, 'ompbatch_batch_description')
        call expect(index(plan, to_text(count)//' copies added') > 0, 'the description counts '// &
                    'the copies: "'//plan(1:min(len(plan), 120))//'"')
        call expect_status(ompbatch_batch_destroy(batch), OMPBATCH_OK, 'destroy')
    end subroutine test_scattered_copies

    ! Copies inside one buffer, overlapping earlier ones: the result must be that of doing them
    ! one after another in the order added (Fortran's array assignment, like memmove, reads the
    ! whole source before writing).
    subroutine test_dependent_copies_follow_add_order()
        integer, parameter :: n = 4096
        integer(c_int8_t), allocatable, target :: mem(:)
        integer(c_int8_t), allocatable :: expected(:)
        type(c_ptr) :: batch
        type(ompbatch_stats) :: stats
        integer :: round, i, bytes, from, to, levels

        levels = 0
        allocate (mem(n), expected(n))
        do round = 1, 10
            call random_bytes(mem)
            expected = mem
            batch = new_batch()
            do i = 1, 40
                bytes = 1 + random_below(200)
                from = random_below(n - bytes)
                to = random_below(n - bytes)
                if (from < to + bytes .and. to < from + bytes) cycle ! may not overlap itself
                call expect_status(ompbatch_batch_add(batch, c_loc(mem(to + 1)), H, &
                                                      c_loc(mem(from + 1)), H, &
                                                      int(bytes, c_size_t), 0_c_int64_t), &
                                   OMPBATCH_OK, 'add a dependent copy')
                expected(to + 1:to + bytes) = expected(from + 1:from + bytes)
            end do
            call expect_status(ompbatch_batch_submit(batch), OMPBATCH_OK, 'submit dependent copies')
            call expect_bytes(mem, expected, 'dependent copies, round '//to_text(round))
            stats = stats_of(batch)
            levels = max(levels, int(stats%sub_batches))
            call expect_status(ompbatch_batch_destroy(batch), OMPBATCH_OK, 'destroy')
        end do
        call expect(levels > 1, 'dependent copies were ordered into several sub-batches')
    end subroutine test_dependent_copies_follow_add_order

    ! Options through the bind(C) type; contiguous pieces merging; a reset batch refilled with
    ! the same copies reusing its plan on fresh data.
    subroutine test_options_merge_and_refill()
        integer, parameter :: pieces = 64, piece = 256
        integer(c_int8_t), allocatable, target :: src(:), dst(:)
        integer(c_int8_t), allocatable :: expected(:)
        type(ompbatch_batch_options) :: options
        type(ompbatch_stats) :: stats
        type(c_ptr) :: batch
        integer :: round, i

        allocate (src(pieces * piece), dst(pieces * piece), expected(pieces * piece))
        options%struct_size = c_sizeof(options)
        options%synchronous = 1
        options%strategy = OMPBATCH_STRATEGY_DIRECT
        options%max_copies = 8
        batch = new_batch(options)

        ! Every other piece: nothing merges.
        do round = 1, 2
            call random_bytes(src)
            dst = POISON
            expected = POISON
            do i = 0, pieces - 1, 2
                call expect_status(ompbatch_batch_add(batch, c_loc(dst(i * piece + 1)), H, &
                                                      c_loc(src(i * piece + 1)), H, &
                                                      int(piece, c_size_t), 0_c_int64_t), &
                                   OMPBATCH_OK, 'add piece '//to_text(i))
                expected(i * piece + 1:(i + 1) * piece) = src(i * piece + 1:(i + 1) * piece)
            end do
            call expect_status(ompbatch_batch_submit(batch), OMPBATCH_OK, 'submit every other piece')
            call expect_status(ompbatch_batch_wait(batch), OMPBATCH_OK, 'wait')
            call expect_bytes(dst, expected, 'every other piece, round '//to_text(round))
            stats = stats_of(batch)
            call expect(stats%copies_planned == pieces / 2, 'separate pieces stay separate')
            call expect(stats%plan_reused == merge(1, 0, round == 2), 'stats%plan_reused is '// &
                        to_text(stats%plan_reused)//' in round '//to_text(round))
            call expect_status(ompbatch_batch_reset(batch), OMPBATCH_OK, 'reset')
        end do
        stats = stats_of(batch)
        call expect(stats%copies_added == 0, 'a reset batch holds no copies')

        ! Every piece, in reverse order: the planner merges them into one copy.
        call expect_status(ompbatch_batch_forget_memory(batch), OMPBATCH_OK, 'forget_memory')
        call random_bytes(src)
        dst = POISON
        do i = pieces - 1, 0, -1
            call expect_status(ompbatch_batch_add(batch, c_loc(dst(i * piece + 1)), H, &
                                                  c_loc(src(i * piece + 1)), H, &
                                                  int(piece, c_size_t), 0_c_int64_t), &
                               OMPBATCH_OK, 'add contiguous piece '//to_text(i))
        end do
        call expect_status(ompbatch_batch_submit(batch), OMPBATCH_OK, 'submit contiguous pieces')
        call expect_bytes(dst, src, 'contiguous pieces')
        stats = stats_of(batch)
        call expect(stats%copies_added == pieces .and. stats%copies_planned == 1, &
                    'contiguous pieces merge: '//to_text(stats%copies_planned)//' planned')
        call expect(stats%bytes == pieces * piece, 'stats%bytes of the merged copy')
        call expect_status(ompbatch_batch_destroy(batch), OMPBATCH_OK, 'destroy')
    end subroutine test_options_merge_and_refill

    ! ompbatch_target_memcpy_batch with arrays of c_ptr and offsets, zero-length entries with
    ! null pointers, and the offset arrays left out (NULL: zeros).
    subroutine test_one_shot()
        integer, parameter :: n = 300, arena = 262144
        integer(c_int8_t), allocatable, target :: src(:), dst(:)
        integer(c_int8_t), allocatable :: expected(:)
        type(c_ptr) :: dsts(n), srcs(n)
        integer(c_size_t) :: lengths(n), dst_offsets(n), src_offsets(n)
        integer :: i, at, from, base, bytes, round

        allocate (src(arena), dst(arena), expected(arena))
        do round = 1, 2
            call random_bytes(src)
            dst = POISON
            expected = POISON
            at = 0
            do i = 1, n
                bytes = random_below(600)
                if (mod(i, 50) == 0) bytes = 0
                from = random_below(arena - bytes)
                if (bytes == 0) then
                    dsts(i) = c_null_ptr ! a zero-length copy reads no pointer
                    srcs(i) = c_null_ptr
                    dst_offsets(i) = 0
                    src_offsets(i) = 0
                else if (round == 1) then
                    ! Pointers at a base, the rest of the way in the offset arrays.
                    base = random_below(at + 1)
                    dsts(i) = c_loc(dst(base + 1))
                    dst_offsets(i) = int(at - base, c_size_t)
                    base = random_below(from + 1)
                    srcs(i) = c_loc(src(base + 1))
                    src_offsets(i) = int(from - base, c_size_t)
                else
                    dsts(i) = c_loc(dst(at + 1))
                    srcs(i) = c_loc(src(from + 1))
                end if
                lengths(i) = int(bytes, c_size_t)
                expected(at + 1:at + bytes) = src(from + 1:from + bytes)
                at = at + bytes + random_below(32)
            end do
            if (round == 1) then
                call expect_status(ompbatch_target_memcpy_batch(dsts, srcs, lengths, dst_offsets, &
                                                                src_offsets, int(n, c_size_t), H, H), &
                                   OMPBATCH_OK, 'one-shot copies with offsets')
                call expect_bytes(dst, expected, 'one-shot copies with offsets')
            else
                call expect_status(ompbatch_target_memcpy_batch(dsts, srcs, lengths, &
                                                                count=int(n, c_size_t), &
                                                                dst_device_num=H, src_device_num=H), &
                                   OMPBATCH_OK, 'one-shot copies without offset arrays')
                call expect_bytes(dst, expected, 'one-shot copies without offset arrays')
            end if
        end do
        ! count 0 reads no array: every array may be left out.
        call expect_status(ompbatch_target_memcpy_batch(count=0_c_size_t, dst_device_num=H, &
                                                        src_device_num=H), &
                           OMPBATCH_OK, 'one-shot with count 0 and no arrays')
    end subroutine test_one_shot

    ! NULL or bad arguments return the right status, and ompbatch_last_error() names them.
    ! A block of a Fortran array a(nx, ny) into b(mx, my): C's dimensions are outermost first,
    ! so [ny, nx], with zero-based offsets. Random bytes, a poisoned destination, the reference
    ! as Fortran array sections; by the one-shot call and by a batch.
    subroutine test_rectangles()
        integer, parameter :: nx = 13, ny = 9, mx = 7, my = 11
        integer(c_int8_t), allocatable, target :: a(:, :), b(:, :)
        integer(c_int8_t), allocatable :: expected(:, :), flat(:)
        integer(c_size_t) :: volume(2), dst_offsets(2), src_offsets(2), dst_dims(2), src_dims(2)
        integer :: round, vx, vy, ax, ay, bx, by
        type(c_ptr) :: batch

        allocate (a(nx, ny), b(mx, my), expected(mx, my), flat(nx * ny))
        do round = 1, 4
            call random_bytes(flat)
            a = reshape(flat, [nx, ny])
            b = POISON
            vx = 1 + random_below(mx)
            vy = 1 + random_below(ny)
            ax = random_below(nx - vx + 1)
            ay = random_below(ny - vy + 1)
            bx = random_below(mx - vx + 1)
            by = random_below(my - vy + 1)
            expected = POISON
            expected(bx + 1:bx + vx, by + 1:by + vy) = a(ax + 1:ax + vx, ay + 1:ay + vy)
            volume = [int(vy, c_size_t), int(vx, c_size_t)]
            dst_offsets = [int(by, c_size_t), int(bx, c_size_t)]
            src_offsets = [int(ay, c_size_t), int(ax, c_size_t)]
            dst_dims = [int(my, c_size_t), int(mx, c_size_t)]
            src_dims = [int(ny, c_size_t), int(nx, c_size_t)]
            if (mod(round, 2) == 1) then
                call expect_status(ompbatch_target_memcpy_rect(c_loc(b), c_loc(a), 1_c_size_t, &
                                                               2_c_int, volume, dst_offsets, &
                                                               src_offsets, dst_dims, &
                                                               src_dims, H, H), &
                                   OMPBATCH_OK, 'one-shot rectangle')
            else
                batch = new_batch()
                call expect_status(ompbatch_batch_add_rect(batch, c_loc(b), H, c_loc(a), H, &
                                                           1_c_size_t, 2_c_int, volume, &
                                                           dst_offsets, src_offsets, dst_dims, &
                                                           src_dims, 0_c_int64_t), &
                                   OMPBATCH_OK, 'ompbatch_batch_add_rect')
                call expect_status(ompbatch_batch_submit(batch), OMPBATCH_OK, 'rectangle submit')
                call expect_status(ompbatch_batch_destroy(batch), OMPBATCH_OK, &
                                   'rectangle destroy')
            end if
            call expect_bytes(reshape(b, [mx * my]), reshape(expected, [mx * my]), 'rectangle')
        end do
        ! The message names the rectangle and the dimension (C's numbering).
        src_offsets = [int(ny, c_size_t), 0_c_size_t]
        call expect_status(ompbatch_target_memcpy_rect(c_loc(b), c_loc(a), 1_c_size_t, 2_c_int, &
                                                       volume, dst_offsets, src_offsets, &
                                                       dst_dims, src_dims, H, H), &
                           OMPBATCH_ERR_INVALID_ARGUMENT, 'a rectangle past its array')
        call expect_message('rect at copy 0: dimension 0: src offset', 'a rectangle past its array')
    end subroutine test_rectangles

    subroutine test_errors_name_the_argument()
        integer(c_int8_t), target :: a(64), b(64)
        type(c_ptr) :: batch, other, dsts(2), srcs(2)
        type(ompbatch_batch_options) :: options
        type(ompbatch_stats) :: stats
        integer(c_size_t) :: lengths(2), needed
        character(len=:), allocatable :: before

        call random_bytes(a)
        b = POISON
        batch = new_batch()
        call expect_status(ompbatch_batch_add(batch, c_null_ptr, H, c_loc(a), H, 4_c_size_t, &
                                              0_c_int64_t), OMPBATCH_ERR_NULL_POINTER, 'NULL dst')
        call expect_message('copy 0: dst is NULL', 'NULL dst')
        call expect_status(ompbatch_batch_add(batch, c_loc(b), H, c_null_ptr, H, 4_c_size_t, &
                                              0_c_int64_t), OMPBATCH_ERR_NULL_POINTER, 'NULL src')
        call expect_message('copy 0: src is NULL', 'NULL src')
        call expect_status(ompbatch_batch_add(batch, c_loc(b), 3_c_int, c_loc(a), H, 4_c_size_t, &
                                              0_c_int64_t), OMPBATCH_ERR_INVALID_DEVICE, &
                           'dst_device_num 3')
        call expect_message('copy 0: dst_device_num 3', 'dst_device_num 3')
        call expect_status(ompbatch_batch_add(batch, c_loc(b), H, c_loc(a), H, 4_c_size_t, &
                                              shiftl(1_c_int64_t, 20)), &
                           OMPBATCH_ERR_INVALID_ARGUMENT, 'map type with bit 20')
        call expect_message('copy 0: map_type', 'map type with bit 20')
        call expect(iand(shiftl(1_c_int64_t, 20), OMPBATCH_MAP_KNOWN_BITS) == 0 .and. &
                    iand(OMPBATCH_MAP_MEMBER_OF, OMPBATCH_MAP_KNOWN_BITS) /= 0, &
                    'OMPBATCH_MAP_KNOWN_BITS holds MEMBER_OF, not bit 20')
        call expect_status(ompbatch_batch_add(c_null_ptr, c_loc(b), H, c_loc(a), H, 4_c_size_t, &
                                              0_c_int64_t), OMPBATCH_ERR_NULL_POINTER, 'NULL batch')
        call expect_message('batch is NULL', 'NULL batch')
        call expect_status(ompbatch_batch_submit(c_null_ptr), OMPBATCH_ERR_NULL_POINTER, &
                           'submit a NULL batch')

        ! A success leaves the last error as it was (a zero-byte copy may have NULL pointers).
        before = ompbatch_last_error()
        call expect_status(ompbatch_batch_add(batch, c_null_ptr, H, c_null_ptr, H, 0_c_size_t, &
                                              0_c_int64_t), OMPBATCH_OK, 'zero-byte NULL copy')
        call expect(ompbatch_last_error() == before, 'a success keeps the last error')

        call expect_status(ompbatch_batch_forget_memory(batch), OMPBATCH_ERR_BAD_STATE, &
                           'forget_memory between add and submit')

        ! A copy whose source and destination overlap is refused at submit, by its index.
        call expect_status(ompbatch_batch_reset(batch), OMPBATCH_OK, 'reset')
        call expect_status(ompbatch_batch_add(batch, c_loc(a(9)), H, c_loc(a(1)), H, 16_c_size_t, &
                                              0_c_int64_t), OMPBATCH_OK, 'add a self-overlapping copy')
        call expect_status(ompbatch_batch_submit(batch), OMPBATCH_ERR_INVALID_ARGUMENT, &
                           'submit a self-overlapping copy')
        call expect_message('copy 0:', 'self-overlapping copy')
        call expect_status(ompbatch_batch_add(batch, c_loc(b), H, c_loc(a), H, 8_c_size_t, &
                                              0_c_int64_t), OMPBATCH_ERR_BAD_STATE, &
                           'add after submit without a reset')
        call expect_message('reset', 'add after submit')

        stats%struct_size = 2
        call expect_status(ompbatch_batch_get_stats(batch, stats), OMPBATCH_ERR_INVALID_ARGUMENT, &
                           'stats with struct_size 2')
        call expect_message('struct_size', 'stats with struct_size 2')
        call expect_status(ompbatch_batch_describe(batch, size=5_c_size_t, needed=needed), &
                           OMPBATCH_ERR_NULL_POINTER, 'describe with no buffer but size 5')
        call expect_message('buf is NULL', 'describe with no buffer')
        call expect_status(ompbatch_batch_add_mapped(batch, c_loc(a), 8_c_size_t, OMPBATCH_MAP_TO), &
                           OMPBATCH_ERR_BAD_STATE, 'add_mapped to a submitted batch')
        call expect_status(ompbatch_batch_reset(batch), OMPBATCH_OK, 'reset')
        call expect_status(ompbatch_batch_add_mapped(batch, c_loc(a), 8_c_size_t, OMPBATCH_MAP_TO), &
                           OMPBATCH_ERR_INVALID_DEVICE, 'add_mapped to a host batch')
        call expect_message('this batch is for the host', 'add_mapped to a host batch')
        call expect_status(ompbatch_batch_add_mapped(batch, c_loc(a), 8_c_size_t, &
                                                     ior(OMPBATCH_MAP_TO, OMPBATCH_MAP_FROM)), &
                           OMPBATCH_ERR_INVALID_ARGUMENT, 'add_mapped both ways')
        call expect_message('exactly one of', 'add_mapped both ways')
        call expect_status(ompbatch_batch_destroy(batch), OMPBATCH_OK, 'destroy')

        ! Creation.
        call expect_status(ompbatch_batch_create(other, 7_c_int, c_null_ptr), &
                           OMPBATCH_ERR_INVALID_DEVICE, 'create for device 7')
        call expect_message('device_num 7', 'create for device 7')
        call expect(.not. c_associated(other), 'a failed create leaves out NULL')
        options%struct_size = 3
        call expect_status(ompbatch_batch_create(other, H, c_null_ptr, options), &
                           OMPBATCH_ERR_INVALID_ARGUMENT, 'options with struct_size 3')
        call expect_message('struct_size', 'options with struct_size 3')
        options%struct_size = c_sizeof(options)
        options%prefer_overlap = 2
        call expect_status(ompbatch_batch_create(other, H, c_null_ptr, options), &
                           OMPBATCH_ERR_INVALID_ARGUMENT, 'options with prefer_overlap 2')
        call expect_message('prefer_overlap', 'options with prefer_overlap 2')
        options%prefer_overlap = 0
        options%strategy = 9
        call expect_status(ompbatch_batch_create(other, H, c_null_ptr, options), &
                           OMPBATCH_ERR_INVALID_ARGUMENT, 'options with strategy 9')
        call expect_message('strategy', 'options with strategy 9')

        ! The one-shot call's arrays.
        dsts = [c_loc(b), c_null_ptr]
        srcs = [c_loc(a), c_loc(a(9))]
        lengths = [8_c_size_t, 8_c_size_t]
        call expect_status(ompbatch_target_memcpy_batch(dsts, srcs, lengths, count=2_c_size_t, &
                                                        dst_device_num=H, src_device_num=H), &
                           OMPBATCH_ERR_NULL_POINTER, 'one-shot with a NULL dst(2)')
        call expect_message('copy 1: dst is NULL', 'one-shot with a NULL dst(2)')
        call expect_status(ompbatch_target_memcpy_batch(dsts, length=lengths, count=2_c_size_t, &
                                                        dst_device_num=H, src_device_num=H), &
                           OMPBATCH_ERR_NULL_POINTER, 'one-shot without a src array')
        call expect_message('src is NULL', 'one-shot without a src array')
        call expect_status(ompbatch_target_memcpy_batch(dsts, srcs, lengths, count=1_c_size_t, &
                                                        dst_device_num=4_c_int, src_device_num=H), &
                           OMPBATCH_ERR_INVALID_DEVICE, 'one-shot to device 4')
        call expect(all(b == POISON), 'failed calls copied nothing')
    end subroutine test_errors_name_the_argument

    ! Every batch function given a destroyed batch returns OMPBATCH_ERR_BAD_STATE.
    subroutine test_destroyed_batch()
        integer(c_int8_t), target :: a(64), b(64)
        type(c_ptr) :: batch
        type(ompbatch_stats) :: stats
        character(kind=c_char) :: text(64)
        integer(c_int) :: results(9)
        integer :: i

        call random_bytes(a)
        b = POISON
        batch = new_batch()
        call expect_status(ompbatch_batch_add(batch, c_loc(b), H, c_loc(a), H, 64_c_size_t, &
                                              0_c_int64_t), OMPBATCH_OK, 'add')
        call expect_status(ompbatch_batch_destroy(batch), OMPBATCH_OK, 'destroy')
        stats%struct_size = c_sizeof(stats)
        results = [ompbatch_batch_add(batch, c_loc(b), H, c_loc(a), H, 64_c_size_t, 0_c_int64_t), &
                   ompbatch_batch_submit(batch), ompbatch_batch_wait(batch), &
                   ompbatch_batch_reset(batch), ompbatch_batch_forget_memory(batch), &
                   ompbatch_batch_get_stats(batch, stats), &
                   ompbatch_batch_describe(batch, text, int(size(text), c_size_t)), &
                   ompbatch_batch_add_mapped(batch, c_loc(a), 8_c_size_t, OMPBATCH_MAP_TO), &
                   ompbatch_batch_destroy(batch)]
        do i = 1, size(results)
            call expect_status(results(i), OMPBATCH_ERR_BAD_STATE, 'call '//to_text(i)// &
                               ' on a destroyed batch')
        end do
        call expect_message('was destroyed', 'a destroyed batch')
        call expect(all(b == POISON), 'a destroyed batch copied nothing')
        call expect_status(ompbatch_batch_destroy(c_null_ptr), OMPBATCH_OK, 'destroy(NULL)')
    end subroutine test_destroyed_batch

    ! The hook's controls, in a process that has no OpenMP offload runtime.
    subroutine test_hook_controls()
        type(ompbatch_hook_stats) :: stats
        integer(c_int) :: previous

        stats%struct_size = c_sizeof(stats)
        stats%state = -1
        stats%constructs = -1
        call expect_status(ompbatch_hook_get_stats(stats), OMPBATCH_OK, 'ompbatch_hook_get_stats')
        call expect(stats%state == OMPBATCH_HOOK_NOT_LOADED, 'hook state is '// &
                    to_text(int(stats%state))//', want OMPBATCH_HOOK_NOT_LOADED')
        call expect(stats%constructs == 0 .and. stats%batches == 0 .and. stats%paths == 0, &
                    'the hook saw nothing')
        call expect(stats%struct_size == c_sizeof(stats), 'hook stats%struct_size is kept')
        stats%struct_size = 2
        call expect_status(ompbatch_hook_get_stats(stats), OMPBATCH_ERR_INVALID_ARGUMENT, &
                           'hook stats with struct_size 2')
        call expect_message('struct_size', 'hook stats with struct_size 2')
        call expect_status(ompbatch_hook_reset_stats(), OMPBATCH_OK, 'ompbatch_hook_reset_stats')

        previous = ompbatch_hook_set_enabled(0_c_int)
        call expect(previous == 0 .or. previous == 1, 'set_enabled(0) returns the previous '// &
                    'setting, got '//to_text(int(previous)))
        call expect(ompbatch_hook_set_enabled(previous) == 0, 'set_enabled returns 0 after '// &
                    'set_enabled(0)')
        call expect_status(ompbatch_hook_set_enabled(2_c_int), OMPBATCH_ERR_INVALID_ARGUMENT, &
                           'set_enabled(2)')
        call expect_message('enabled is 2', 'set_enabled(2)')
    end subroutine test_hook_controls

end program api_test
