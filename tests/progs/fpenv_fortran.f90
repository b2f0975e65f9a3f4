! fpenv_fortran.f90: MPI calls from Fortran (`use mpi`) raise no IEEE
! exception flag in the application. Under a shim that raised
! FE_INVALID, gfortran reported "The following floating-point exceptions
! are signalling: IEEE_INVALID_FLAG" at STOP, and a program built with
! -ffpe-trap=invalid died of SIGFPE.
!
! Any np. With the argument "trap" the program first enables halting on
! IEEE_INVALID, IEEE_DIVIDE_BY_ZERO and IEEE_OVERFLOW (ieee_set_halting_mode,
! what -ffpe-trap=invalid,zero,overflow does): a raising call then dies of
! SIGFPE. After MPI_INIT, a ping-pong, blocking collectives (Barrier,
! Bcast, Allreduce on doubles), a nonblocking one (Iallreduce + Wait) and
! MPI_FINALIZE it checks with ieee_get_flag that none of IEEE_INVALID,
! IEEE_DIVIDE_BY_ZERO, IEEE_OVERFLOW signals. The doubles reduced are
! small integers: exact, so the program's own arithmetic raises nothing.
! Prints "fpenv fortran: ok np=N" on rank 0; on failure
! "FAIL fpenv fortran rank R: after <phase>: IEEE_INVALID ..." and exits 1
! (MPI_Abort before MPI_FINALIZE).
program fpenv_fortran
  use mpi
  use, intrinsic :: ieee_arithmetic
  implicit none
  integer, parameter :: n = 64
  integer :: ierr, rank, np, i, req, st(MPI_STATUS_SIZE)
  double precision :: a(n), b(n)
  character(len=16) :: arg
  logical :: finalized, flags(3)
  type(ieee_flag_type), parameter :: watched(3) = &
    [ieee_invalid, ieee_divide_by_zero, ieee_overflow]
  finalized = .false.
  call get_command_argument(1, arg)
  if (trim(arg) == 'trap') then
    call ieee_set_halting_mode(ieee_invalid, .true.)
    call ieee_set_halting_mode(ieee_divide_by_zero, .true.)
    call ieee_set_halting_mode(ieee_overflow, .true.)
  end if
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  call ieee_get_flag(watched, flags)
  call quiet('MPI_INIT', flags)
  do i = 1, n
    a(i) = rank * 100 + i
  end do
  if (np >= 2) then
    if (rank == 0) then
      call MPI_SEND(a, n, MPI_DOUBLE_PRECISION, 1, 1, MPI_COMM_WORLD, ierr)
      call MPI_RECV(b, n, MPI_DOUBLE_PRECISION, 1, 1, MPI_COMM_WORLD, st, ierr)
    else if (rank == 1) then
      call MPI_RECV(b, n, MPI_DOUBLE_PRECISION, 0, 1, MPI_COMM_WORLD, st, ierr)
      call MPI_SEND(b, n, MPI_DOUBLE_PRECISION, 0, 1, MPI_COMM_WORLD, ierr)
    end if
    if (rank <= 1 .and. b(3) /= 3) call fail('ping-pong data')
  end if
  call ieee_get_flag(watched, flags)
  call quiet('point-to-point', flags)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_BCAST(a, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  if (a(5) /= 5) call fail('bcast data')
  do i = 1, n
    a(i) = rank + i
  end do
  call MPI_ALLREDUCE(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (b(1) /= np * (np - 1) / 2 + np) call fail('allreduce data')
  call ieee_get_flag(watched, flags)
  call quiet('blocking collectives', flags)
  b = -1
  call MPI_IALLREDUCE(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  if (b(1) /= np * (np - 1) / 2 + np) call fail('iallreduce data')
  call ieee_get_flag(watched, flags)
  call quiet('nonblocking collectives', flags)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FINALIZE(ierr)
  finalized = .true.
  call ieee_get_flag(watched, flags)
  call quiet('MPI_FINALIZE', flags)
  if (rank == 0) print '(a,i0)', 'fpenv fortran: ok np=', np
contains
  subroutine quiet(phase, flags)
    ! The flags are read by the caller: a procedure that uses the IEEE
    ! modules gets them quiet on entry (Fortran 2008, 14.3).
    character(len=*), intent(in) :: phase
    logical, intent(in) :: flags(3)
    character(len=*), parameter :: names(3) = &
      [character(len=19) :: 'IEEE_INVALID', 'IEEE_DIVIDE_BY_ZERO', 'IEEE_OVERFLOW']
    integer :: k
    do k = 1, 3
      if (flags(k)) call fail('after '//phase//': '//trim(names(k))//' signals')
    end do
  end subroutine quiet
  subroutine fail(what)
    character(len=*), intent(in) :: what
    integer :: e
    write (0, '(a,i0,a,a)') 'FAIL fpenv fortran rank ', rank, ': ', what
    flush (0)
    if (.not. finalized) call MPI_ABORT(MPI_COMM_WORLD, 1, e)
    call exit(1)
  end subroutine fail
end program fpenv_fortran
