! A Fortran program of a user of the installed ompbatch (gfortran + pkg-config ompbatch-fortran,
! or CMake's ompbatch::fortran): random pieces of one array copied into another through a
! batch on the host backend, every element checked, the version and an error's message checked.
program consumer
    use, intrinsic :: iso_c_binding
    use ompbatch
    implicit none
    integer, parameter :: pieces = 100, piece = 250
    integer(c_int32_t), target :: src(pieces * piece), dst(pieces * piece)
    real :: r(pieces * piece)
    type(c_ptr) :: batch
    integer(c_int) :: status
    integer :: i, first

    if (ompbatch_version() /= OMPBATCH_MODULE_VERSION) stop 'the library and module versions differ'
    call random_number(r)
    src = int(r * 2.0e9, c_int32_t) - 1000000000_c_int32_t
    dst = -559038737_c_int32_t  ! poison: 0xDEADBEEF
    status = ompbatch_batch_create(batch, OMPBATCH_HOST_DEVICE, c_null_ptr)
    ! Every other piece, so the poison between them must survive.
    do i = 1, pieces, 2
        first = (i - 1) * piece + 1
        if (status == OMPBATCH_OK) status = ompbatch_batch_add(batch, c_loc(dst(first)), &
            OMPBATCH_HOST_DEVICE, c_loc(src(first)), OMPBATCH_HOST_DEVICE, &
            int(piece * 4, c_size_t), 0_c_int64_t)
    end do
    if (status == OMPBATCH_OK) status = ompbatch_batch_submit(batch)
    if (status == OMPBATCH_OK) status = ompbatch_batch_wait(batch)
    if (status /= OMPBATCH_OK) then
        print '(a)', 'FAIL: ' // ompbatch_last_error()
        stop 1
    end if
    do i = 1, pieces
        first = (i - 1) * piece + 1
        if (mod(i, 2) == 1) then
            if (any(dst(first:first + piece - 1) /= src(first:first + piece - 1))) stop 'a piece differs'
        else
            if (any(dst(first:first + piece - 1) /= -559038737_c_int32_t)) stop 'poison overwritten'
        end if
    end do
    status = ompbatch_batch_reset(batch)
    status = ompbatch_batch_add(batch, c_null_ptr, OMPBATCH_HOST_DEVICE, c_loc(src), &
        OMPBATCH_HOST_DEVICE, 8_c_size_t, 0_c_int64_t)
    if (status /= OMPBATCH_ERR_NULL_POINTER .or. index(ompbatch_last_error(), 'dst') == 0) &
        stop 'a NULL dst was not refused by name'
    if (ompbatch_batch_destroy(batch) /= OMPBATCH_OK) stop 'destroy failed'
    print '(a,i0,a,i0,a)', 'consumer (Fortran): ompbatch ', OMPBATCH_MODULE_VERSION, ', ', &
        pieces / 2, ' pieces copied exactly'
end program consumer
