! coll_fortran.f90: Fortran collectives (`use mpi`) reach the shim's
! collectives (Open MPI's Fortran layer calls PMPI_* directly, MPICH's
! MPI_*). Any np. Allreduce (in place too), Bcast, Reduce and Barrier on
! integers, each checked against the value computed locally; Iallreduce and
! Ibcast with MPI_WAIT. Then 50 timed barriers and 50 timed Ibarrier+Wait.
! Prints on rank 0:
!   "coll fortran: ok barrier_us=<median> barrier_us_min=<min>
!    ibarrier_us=<median>"
! With LOGGP_L=+50us and 4 ranks each median must be >= 100 us.
! On failure "FAIL coll fortran ..." and MPI_Abort.
program coll_fortran
  use mpi
  implicit none
  integer, parameter :: n = 101, nrep = 50
  integer :: ierr, rank, np, i, k, a(n), b(n), expect, req
  double precision :: t0, dt(nrep), dt2(nrep), tmp
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  do i = 1, n
    a(i) = (rank + 1) * 1000 + i
  end do
  call MPI_ALLREDUCE(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    expect = 1000 * np * (np + 1) / 2 + np * i
    if (b(i) /= expect) call fail('allreduce')
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, a, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (a(i) /= np * 1000 + i) call fail('allreduce in place')
  end do
  b = -1
  if (rank == np - 1) b = 7
  call MPI_BCAST(b, n, MPI_INTEGER, np - 1, MPI_COMM_WORLD, ierr)
  if (any(b /= 7)) call fail('bcast')
  a = rank
  b = -1
  call MPI_REDUCE(a, b, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0 .and. any(b /= np * (np - 1) / 2)) call fail('reduce')
  do i = 1, n
    a(i) = (rank + 1) * 1000 + i
  end do
  b = -1
  call MPI_IALLREDUCE(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  do i = 1, n
    expect = 1000 * np * (np + 1) / 2 + np * i
    if (b(i) /= expect) call fail('iallreduce')
  end do
  b = -1
  if (rank == 0) b = 9
  call MPI_IBCAST(b, n, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  if (any(b /= 9)) call fail('ibcast')
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  do k = 1, nrep
    t0 = MPI_WTIME()
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    dt(k) = (MPI_WTIME() - t0) * 1.0d6
  end do
  do k = 1, nrep
    t0 = MPI_WTIME()
    call MPI_IBARRIER(MPI_COMM_WORLD, req, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
    dt2(k) = (MPI_WTIME() - t0) * 1.0d6
  end do
  if (rank == 0) then
    do k = 1, nrep
      do i = k + 1, nrep
        if (dt(i) < dt(k)) then
          tmp = dt(k); dt(k) = dt(i); dt(i) = tmp
        end if
        if (dt2(i) < dt2(k)) then
          tmp = dt2(k); dt2(k) = dt2(i); dt2(i) = tmp
        end if
      end do
    end do
    write (*, '(a,f0.3,a,f0.3,a,f0.3)') 'coll fortran: ok barrier_us=', dt(nrep / 2 + 1), &
      ' barrier_us_min=', dt(1), ' ibarrier_us=', dt2(nrep / 2 + 1)
  end if
  call MPI_FINALIZE(ierr)
contains
  subroutine fail(what)
    character(*), intent(in) :: what
    integer :: e
    write (0, '(a,i0,a,a)') 'FAIL coll fortran rank ', rank, ': ', what
    call MPI_ABORT(MPI_COMM_WORLD, 1, e)
  end subroutine fail
end program coll_fortran
