! pp_f08.f90: Fortran ping-pong through use mpi_f08.
! Run with np = 2. Rank 0 sends 8 doubles to rank 1, which checks them and
! sends them back plus one; rank 0 checks the reply and its status (source,
! tag, count). 20 warm-up and 200 timed rounds. Expects: every value as sent;
! prints "fortran f08: half_rtt_us=<median> half_rtt_us_p10=.. half_rtt_us_min=.. n=200" on rank 0. A knob such as
! LOGGP_L=+50us must raise half_rtt_us by 50 us (checked by the test, which
! also runs it without the shim). On failure "FAIL fortran f08 ..." and
! MPI_Abort (non-zero exit).
program pp_f08
  use mpi_f08
  implicit none
  integer, parameter :: nwarm = 20, nrep = 200, n = 8
  integer :: rank, np, k, i, cnt
  type(MPI_Status) :: st
  type(MPI_Request) :: req
  double precision :: buf(n), t0, dt(nrep)
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  if (np /= 2) call fail('needs 2 ranks')
  do k = 1 - nwarm, nrep
    if (rank == 0) then
      do i = 1, n
        buf(i) = k * 1000.0d0 + i
      end do
      t0 = MPI_Wtime()
      call MPI_Send(buf, n, MPI_DOUBLE_PRECISION, 1, 5, MPI_COMM_WORLD)
      call MPI_Recv(buf, n, MPI_DOUBLE_PRECISION, 1, MPI_ANY_TAG, MPI_COMM_WORLD, st)
      if (k >= 1) dt(k) = (MPI_Wtime() - t0) * 0.5d6
      call MPI_Get_count(st, MPI_DOUBLE_PRECISION, cnt)
      if (st%MPI_SOURCE /= 1 .or. st%MPI_TAG /= 6 .or. cnt /= n) call fail('reply status')
      do i = 1, n
        if (buf(i) /= k * 1000.0d0 + i + 1.0d0) call fail('reply data')
      end do
    else
      call MPI_Irecv(buf, n, MPI_DOUBLE_PRECISION, 0, 5, MPI_COMM_WORLD, req)
      call MPI_Wait(req, st)
      do i = 1, n
        if (buf(i) /= k * 1000.0d0 + i) call fail('ping data')
      end do
      buf = buf + 1.0d0
      call MPI_Send(buf, n, MPI_DOUBLE_PRECISION, 0, 6, MPI_COMM_WORLD)
    end if
  end do
  if (rank == 0) then
    call sort(dt, nrep)
    write (*, '(a,f0.3,a,f0.3,a,f0.3,a,i0)') 'fortran f08: half_rtt_us=', 0.5d0 * (dt(nrep / 2) + dt(nrep / 2 + 1)), &
      ' half_rtt_us_p10=', dt(nrep / 10), ' half_rtt_us_min=', dt(1), ' n=', nrep
  end if
  call MPI_Finalize()
contains
  subroutine fail(what)
    character(*), intent(in) :: what
    write (0, '(a,i0,a,a)') 'FAIL fortran f08 rank ', rank, ': ', what
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine
  subroutine sort(a, m)
    integer, intent(in) :: m
    double precision, intent(inout) :: a(m)
    double precision :: x
    integer :: p, q
    do p = 2, m
      x = a(p)
      q = p - 1
      do while (q >= 1)
        if (a(q) <= x) exit
        a(q + 1) = a(q)
        q = q - 1
      end do
      a(q + 1) = x
    end do
  end subroutine
end program
