! What the Fortran test programs share: counted checks that print what failed (with the
! library's last error where a status is involved), seeded random bytes, the environment.
!
! Random data comes from the processor's generator seeded with OMPBATCH_TEST_SEED when set, else
! from the clock; the seed is printed first, so a failing run can be replayed, as the C++
! suites do.
module ompbatch_test_support
    use, intrinsic :: iso_c_binding, only: c_int, c_int8_t, c_int64_t
    use, intrinsic :: iso_fortran_env, only: output_unit
    use ompbatch, only: ompbatch_err_name, ompbatch_last_error
    implicit none
    private

    public :: expect, expect_status, expect_message, expect_bytes, finish
    public :: seed_random, random_bytes, random_below, env_flag, env_value, to_text

    ! 0xA5: what destinations hold before a copy, so an untouched byte is told from a copied one.
    integer(c_int8_t), parameter, public :: POISON = -91_c_int8_t

    integer, save :: checks = 0
    integer, save :: failures = 0

contains

    subroutine expect(condition, what)
        logical, intent(in) :: condition
        character(len=*), intent(in) :: what

        checks = checks + 1
        if (.not. condition) then
            failures = failures + 1
            write (*, '(a)') 'FAIL: '//what
        end if
    end subroutine expect

    ! A status against the one wanted, by name; on a mismatch the library's message too.
    subroutine expect_status(got, want, what)
        integer(c_int), intent(in) :: got, want
        character(len=*), intent(in) :: what

        call expect(got == want, what//': got '//ompbatch_err_name(got)//', want '// &
                    ompbatch_err_name(want)//' (last error: "'//ompbatch_last_error()//'")')
    end subroutine expect_status

    ! The calling thread's last error names what it should ("copy 0: dst is NULL").
    subroutine expect_message(needle, what)
        character(len=*), intent(in) :: needle, what
        character(len=:), allocatable :: message

        message = ompbatch_last_error()
        call expect(index(message, needle) > 0, what//': last error "'//message// &
                    '" does not contain "'//needle//'"')
    end subroutine expect_message

    ! Byte-for-byte comparison; a mismatch reports the first differing byte and how many differ.
    subroutine expect_bytes(got, want, what)
        integer(c_int8_t), intent(in) :: got(:), want(:)
        character(len=*), intent(in) :: what
        integer :: i, first, differing

        if (size(got) /= size(want)) then
            call expect(.false., what//': '//to_text(size(got))//' bytes, want '// &
                        to_text(size(want)))
            return
        end if
        first = 0
        differing = 0
        do i = 1, size(got)
            if (got(i) /= want(i)) then
                differing = differing + 1
                if (first == 0) first = i
            end if
        end do
        if (differing == 0) then
            call expect(.true., what)
        else
            call expect(.false., what//': '//to_text(differing)//' of '//to_text(size(got))// &
                        ' bytes differ, the first at byte '//to_text(first - 1)//' (got '// &
                        to_text(int(got(first)))//', want '//to_text(int(want(first)))//')')
        end if
    end subroutine expect_bytes

    ! The summary line; a failure ends the program with a non-zero exit status.
    subroutine finish(name)
        character(len=*), intent(in) :: name

        write (*, '(a)') name//': '//to_text(checks - failures)//' checks passed, '// &
            to_text(failures)//' failed'
        flush (output_unit)
        if (failures > 0 .or. checks == 0) stop 1
    end subroutine finish

    ! ---- random data ---------------------------------------------------------------------------

    subroutine seed_random()
        integer(c_int64_t) :: seed
        integer :: n, i, ios, clock
        integer, allocatable :: state(:)
        character(len=:), allocatable :: text

        text = env_value('OMPBATCH_TEST_SEED')
        ios = 1
        if (len(text) > 0) read (text, *, iostat=ios) seed
        if (ios /= 0) then
            call system_clock(clock)
            seed = int(clock, c_int64_t)
        end if
        seed = abs(seed)
        write (*, '(a, i0)') 'OMPBATCH_TEST_SEED=', seed
        ! The generator's state is an array; spread the seed's two halves over it (never all
        ! zero, which some generators refuse).
        call random_seed(size=n)
        allocate (state(n))
        do i = 1, n
            state(i) = int(ieor(ibits(seed, 31 * mod(i - 1, 2), 31), int(i, c_int64_t) * 7919))
        end do
        call random_seed(put=state)
    end subroutine seed_random

    subroutine random_bytes(bytes)
        integer(c_int8_t), intent(out) :: bytes(:)
        real, allocatable :: r(:)

        allocate (r(size(bytes)))
        call random_number(r)
        bytes = int(min(int(r * 256.0), 255) - 128, c_int8_t)
    end subroutine random_bytes

    ! A value in [0, bound); 0 when bound <= 0.
    function random_below(bound) result(value)
        integer, intent(in) :: bound
        integer :: value
        real :: r

        value = 0
        if (bound <= 0) return
        call random_number(r)
        value = min(int(r * real(bound)), bound - 1)
    end function random_below

    ! ---- environment and text ----------------------------------------------------------------

    ! The variable's value, "" when unset.
    function env_value(name) result(value)
        character(len=*), intent(in) :: name
        character(len=:), allocatable :: value
        integer :: length, status

        call get_environment_variable(name, length=length, status=status)
        if (status /= 0 .or. length == 0) then
            value = ''
            return
        end if
        allocate (character(len=length) :: value)
        call get_environment_variable(name, value)
    end function env_value

    ! Set, not empty and not "0", as gpu_test.cc reads OMPBATCH_REQUIRE_GPU.
    logical function env_flag(name)
        character(len=*), intent(in) :: name
        character(len=:), allocatable :: value

        value = env_value(name)
        env_flag = len(value) > 0 .and. value /= '0'
    end function env_flag

    function to_text(value) result(text)
        class(*), intent(in) :: value
        character(len=:), allocatable :: text
        character(len=24) :: buffer

        select type (value)
        type is (integer)
            write (buffer, '(i0)') value
        type is (integer(c_int64_t))
            write (buffer, '(i0)') value
        class default
            buffer = '?'
        end select
        text = trim(buffer)
    end function to_text

end module ompbatch_test_support
