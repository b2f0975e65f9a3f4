! cg.f90: conjugate-gradient solver for the 1-D shifted Laplacian
! A = tridiag(-1, 2+sigma, -1), rows split in blocks over the ranks. Each
! iteration does one matrix-vector product (two MPI_Sendrecv with the
! neighbour ranks) and two dot products (two MPI_Allreduce), with little
! local work: the run time is dominated by Allreduce latency. Uses the
! `use mpi` module. While a knob is set the shim runs the Allreduce over
! its own perturbed point-to-point, so both the halo and the dot products
! feel the knobs.
!
!   mpirun -np 2 ./cg [rows_per_rank=2000] [solves=20]
!
! Checks: b = A*x_true with a known x_true; each solve must reach a
! relative residual below 1e-10 and max|x - x_true| < 1e-8. Prints:
!   cg: 20 solves of 4000 rows, 2 ranks, 1234 iterations in 0.123456 s (max error 1.2e-11) OK
program cg
  use mpi
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  real(dp), parameter :: sigma = 0.05_dp, tol = 1.0e-10_dp
  integer :: ierr, rank, nranks, nloc, nsolves, solve, it, iters, left, right, i, nargs
  integer :: status(MPI_STATUS_SIZE)
  character(len=32) :: arg, tstr, estr
  real(dp), allocatable :: x(:), xtrue(:), b(:), r(:), p(:), ap(:)
  real(dp) :: rr, rr_new, pap, alpha, beta, bb, err, errmax, t0, t, tmax, loc
  integer(kind=8) :: gstart
  logical :: ok

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  nloc = 2000
  nsolves = 20
  nargs = command_argument_count()
  if (nargs >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) nloc
  end if
  if (nargs >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) nsolves
  end if
  if (nloc < 1 .or. nsolves < 1) then
    if (rank == 0) write (0, '(a)') 'cg: rows_per_rank and solves must be >= 1'
    call MPI_Finalize(ierr)
    stop 2
  end if
  left = rank - 1
  right = rank + 1
  if (left < 0) left = MPI_PROC_NULL
  if (right >= nranks) right = MPI_PROC_NULL

  ! p has ghost cells p(0) and p(nloc+1), zero at the domain ends
  allocate (x(nloc), xtrue(nloc), b(nloc), r(nloc), p(0:nloc + 1), ap(nloc))
  gstart = int(rank, 8) * int(nloc, 8)
  do i = 1, nloc
    xtrue(i) = sin(0.001_dp * real(gstart + i, dp)) + 0.5_dp
  end do
  p = 0.0_dp
  p(1:nloc) = xtrue
  call matvec(p, b)

  ok = .true.
  errmax = 0.0_dp
  iters = 0
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  t0 = MPI_Wtime()
  do solve = 1, nsolves
    x = 0.0_dp
    r = b
    p = 0.0_dp
    p(1:nloc) = r
    loc = dot_product(b, b)
    call MPI_Allreduce(loc, bb, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    rr = bb
    do it = 1, 10000
      call matvec(p, ap)
      loc = dot_product(p(1:nloc), ap)
      call MPI_Allreduce(loc, pap, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
      alpha = rr / pap
      x = x + alpha * p(1:nloc)
      r = r - alpha * ap
      loc = dot_product(r, r)
      call MPI_Allreduce(loc, rr_new, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
      iters = iters + 1
      if (sqrt(rr_new / bb) < tol) exit
      beta = rr_new / rr
      rr = rr_new
      p(1:nloc) = r + beta * p(1:nloc)
    end do
    if (sqrt(rr_new / bb) >= tol) ok = .false.
    loc = maxval(abs(x - xtrue))
    call MPI_Allreduce(loc, err, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
    errmax = max(errmax, err)
  end do
  t = MPI_Wtime() - t0
  call MPI_Reduce(t, tmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (errmax >= 1.0e-8_dp) ok = .false.
  if (rank == 0) then
    write (tstr, '(f12.6)') tmax
    write (estr, '(es9.1)') errmax
    write (*, '(a,i0,a,i0,a,i0,a,i0,a,a,a,a,a,a)') 'cg: ', nsolves, ' solves of ', nloc * nranks, &
      ' rows, ', nranks, ' ranks, ', iters, ' iterations in ', trim(adjustl(tstr)), ' s (max error ', &
      trim(adjustl(estr)), ') ', trim(merge('OK    ', 'FAILED', ok))
  end if
  call MPI_Finalize(ierr)
  if (.not. ok) stop 1

contains

  ! y = A p, after filling p's ghost cells from the neighbours
  subroutine matvec(v, y)
    real(dp), intent(inout) :: v(0:nloc + 1)
    real(dp), intent(out) :: y(nloc)
    integer :: j
    call MPI_Sendrecv(v(nloc), 1, MPI_DOUBLE_PRECISION, right, 0, v(0), 1, MPI_DOUBLE_PRECISION, left, 0, &
                      MPI_COMM_WORLD, status, ierr)
    call MPI_Sendrecv(v(1), 1, MPI_DOUBLE_PRECISION, left, 1, v(nloc + 1), 1, MPI_DOUBLE_PRECISION, right, 1, &
                      MPI_COMM_WORLD, status, ierr)
    if (left == MPI_PROC_NULL) v(0) = 0.0_dp
    if (right == MPI_PROC_NULL) v(nloc + 1) = 0.0_dp
    do j = 1, nloc
      y(j) = (2.0_dp + sigma) * v(j) - v(j - 1) - v(j + 1)
    end do
  end subroutine matvec
end program cg
