! The module against the header, byte for byte: every public struct's size and every field's
! offset and size (c_sizeof and c_loc differences of the bind(C) types against the C
! compiler's sizeof and offsetof), every constant's value and size, and every OMPBATCH_API
! function's address against the one its bind(C) interface reaches.
!
! The checks themselves are generated from include/ompbatch.h (gen_layout_checks.sh writes
! layout_checks.inc, included below, and the C side layout_checks.c), so a field, constant or
! function added to the header fails this test until the module has it too.
program layout_test
    use, intrinsic :: iso_c_binding
    use ompbatch
    implicit none

    ! The C side (layout_checks.c), one entry per index; each returns -1 past its last entry.
    interface
        function layout_c_struct_size(i, size) bind(C, name="layout_c_struct_size")
            import :: c_int, c_size_t
            integer(c_int), value :: i
            integer(c_size_t), intent(out) :: size
            integer(c_int) :: layout_c_struct_size
        end function layout_c_struct_size

        function layout_c_field(i, offset, size) bind(C, name="layout_c_field")
            import :: c_int, c_size_t
            integer(c_int), value :: i
            integer(c_size_t), intent(out) :: offset, size
            integer(c_int) :: layout_c_field
        end function layout_c_field

        function layout_c_constant(i, value, size) bind(C, name="layout_c_constant")
            import :: c_int, c_int64_t, c_size_t
            integer(c_int), value :: i
            integer(c_int64_t), intent(out) :: value
            integer(c_size_t), intent(out) :: size
            integer(c_int) :: layout_c_constant
        end function layout_c_constant

        function layout_c_function_is(i, f) bind(C, name="layout_c_function_is")
            import :: c_int, c_funptr
            integer(c_int), value :: i
            type(c_funptr), value :: f
            integer(c_int) :: layout_c_function_is
        end function layout_c_function_is
    end interface

    integer :: failures = 0
    integer :: structs = 0, fields = 0, constants = 0, functions = 0

    call generated_checks()
    write (*, '(a, i0, a, i0, a, i0, a, i0, a)') 'layout: ', structs, ' structs, ', fields, &
        ' fields, ', constants, ' constants, ', functions, ' functions checked against ompbatch.h'
    if (failures > 0) then
        write (*, '(a, i0, a)') 'FAILED: ', failures, ' mismatches (above)'
        stop 1
    end if
    write (*, '(a)') 'PASSED'

contains

    subroutine fail(message)
        character(len=*), intent(in) :: message
        write (*, '(a)') 'FAIL: '//message
        failures = failures + 1
    end subroutine fail

    subroutine check_struct(name, index, fortran_size)
        character(len=*), intent(in) :: name
        integer, intent(in) :: index
        integer(c_size_t), intent(in) :: fortran_size
        integer(c_size_t) :: c_size
        character(len=200) :: text

        structs = structs + 1
        if (layout_c_struct_size(int(index, c_int), c_size) /= 0) then
            call fail(name//': the C side has no entry for it')
        else if (c_size /= fortran_size) then
            write (text, '(a, i0, a, i0)') ': Fortran c_sizeof ', fortran_size, ', C sizeof ', c_size
            call fail(name//trim(text))
        end if
    end subroutine check_struct

    ! base: c_loc of the whole variable; at: c_loc of the field.
    subroutine check_field(struct_name, name, index, base, at, fortran_size)
        character(len=*), intent(in) :: struct_name, name
        integer, intent(in) :: index
        type(c_ptr), intent(in) :: base, at
        integer(c_size_t), intent(in) :: fortran_size
        integer(c_size_t) :: c_offset, c_size, fortran_offset
        character(len=200) :: text

        fields = fields + 1
        fortran_offset = int(transfer(at, 0_c_intptr_t) - transfer(base, 0_c_intptr_t), c_size_t)
        if (layout_c_field(int(index, c_int), c_offset, c_size) /= 0) then
            call fail(struct_name//'%'//name//': the C side has no entry for it')
        else if (c_offset /= fortran_offset .or. c_size /= fortran_size) then
            write (text, '(a, i0, a, i0, a, i0, a, i0)') ': Fortran offset ', fortran_offset, &
                ' size ', fortran_size, ', C offset ', c_offset, ' size ', c_size
            call fail(struct_name//'%'//name//trim(text))
        end if
    end subroutine check_field

    ! bits: storage_size of the Fortran constant.
    subroutine check_constant(c_name, fortran_name, index, fortran_value, bits)
        character(len=*), intent(in) :: c_name, fortran_name
        integer, intent(in) :: index
        integer(c_int64_t), intent(in) :: fortran_value
        integer, intent(in) :: bits
        integer(c_int64_t) :: c_value
        integer(c_size_t) :: c_size
        character(len=200) :: text

        constants = constants + 1
        if (layout_c_constant(int(index, c_int), c_value, c_size) /= 0) then
            call fail(c_name//': the C side has no entry for it')
        else if (c_value /= fortran_value .or. c_size * 8 /= bits) then
            write (text, '(a, i0, a, i0, a, i0, a, i0, a)') ' is ', fortran_value, ' (', bits / 8, &
                ' bytes); C says ', c_value, ' (', c_size, ' bytes)'
            call fail(fortran_name//trim(text)//' for '//c_name)
        end if
    end subroutine check_constant

    ! address is taken by value: passed by reference, gfortran 12 puts the c_funloc result in
    ! a read-only constant, which the linker then has to relocate in the text of a PIE.
    subroutine check_function(c_name, fortran_name, index, address)
        character(len=*), intent(in) :: c_name, fortran_name
        integer, intent(in) :: index
        type(c_funptr), value :: address

        functions = functions + 1
        if (layout_c_function_is(int(index, c_int), address) /= 1) &
            call fail(fortran_name//' is not bound to the C function '//c_name)
    end subroutine check_function

    include 'layout_checks.inc'

end program layout_test
