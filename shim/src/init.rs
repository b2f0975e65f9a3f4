//! Start-up and shut-down: which MPI is this, is the configuration good,
//! what does the native network cost (transit model), and the report.

use crate::abi::{self, Comm, Consts, Flavour, Request, SharedHandle, Status, FLAVOUR};
use crate::clock::now;
use crate::engine::{self, Engine, Mode};
use crate::log;
use crate::real::*;
use loggp_core::clocks::{estimate_offset, ClockMap, DriftCorrection, Hosts, SyncSample, REF_BASE};
use loggp_core::config::LogLevel;
use loggp_core::{Config, Transit};
use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

/// The MPI library present in this process, judged from symbols only it
/// exports. `None` in a process without MPI (a launcher, a shell).
pub fn present_flavour() -> Option<Flavour> {
    // black_box keeps each dlsym out of tail position: glibc resolves
    // RTLD_DEFAULT/RTLD_NEXT relative to the *calling* object, and a tail
    // call from this constructor would make the caller ld.so itself (which
    // crashes in _dl_lookup_symbol_x).
    let has = |name: &[u8]| {
        // SAFETY: NUL-terminated literal.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr().cast()) };
        !std::hint::black_box(p).is_null()
    };
    // MPIR_Dup_fn: every MPICH-ABI libmpi (MPICH 4.0 and 5.0 alike; 5.0
    // no longer exports MPII_Version_ABI), never the standard-ABI one.
    if has(b"ompi_mpi_comm_world\0") {
        Some(Flavour::OpenMpi)
    } else if has(b"MPII_Version_ABI\0") || has(b"MPIR_Dup_fn\0") {
        Some(Flavour::Mpich)
    } else {
        None
    }
}

/// True when the program runs on the MPI-5 standard ABI (MPICH 5's
/// libmpi_abi.so, built with mpicc_abi): handles and constants differ
/// from both families' own ABIs.
fn standard_abi_present() -> bool {
    // SAFETY: NUL-terminated literal; see present_flavour for black_box.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"MPI_Abi_get_version".as_ptr()) };
    !std::hint::black_box(p).is_null() && present_flavour().is_none()
}

/// Stops with one line (rank 0 says it) before MPI is initialised.
fn refuse(msg: &str) -> ! {
    if log::launcher_rank().is_some_and(|r| r != 0) {
        // SAFETY: ends the process; only rank 0 says why.
        unsafe { libc::_exit(1) }
    }
    log::fatal_raw(msg)
}

/// Stops with one line if the program's MPI is not the one this shim was
/// built for. Runs at load time (constructor) and again at MPI_Init.
pub fn check_flavour() {
    if standard_abi_present() {
        refuse(&format!(
            "this shim was built for the {} {} ABI but the program uses the MPI-5 standard ABI \
             (libmpi_abi, mpicc_abi), which it does not support; build the program with the \
             library's own mpicc",
            FLAVOUR.name(),
            abi::LIB_VERSION
        ));
    }
    if let Some(f) = present_flavour() {
        if f != FLAVOUR {
            if log::launcher_rank().is_some_and(|r| r != 0) {
                // SAFETY: ends the process; only rank 0 says why.
                unsafe { libc::_exit(1) }
            }
            log::fatal_raw(&format!(
                "this shim was built for {} {} but the program uses {}; preload the other build \
                 (loggp shim-path --mpi {}) or use loggp run",
                FLAVOUR.name(),
                abi::LIB_VERSION,
                f.name(),
                f.cli_name()
            ));
        }
    }
}

/// The loaded library's version string (`MPI_Get_library_version`) and the
/// version read from it.
static LOADED: OnceLock<(String, String)> = OnceLock::new();

/// What is loaded: the library's own version (`5.0.11`) and the first
/// line of its version string; the build's version before MPI_Init.
fn loaded() -> (&'static str, &'static str) {
    LOADED
        .get()
        .map_or((abi::LIB_VERSION, ""), |(v, s)| (v.as_str(), s.as_str()))
}

/// Stops with one line unless this build serves the loaded library's
/// version (`loggp_core::mpilib::serves`: same family, a series whose ABI
/// was measured identical). MPI_Get_library_version may be called before
/// MPI_Init (MPI-3.1 §8.1.1).
fn check_version() {
    let n = usize::try_from(abi::MAX_LIBRARY_VERSION_STRING).unwrap_or(8192);
    let mut buf = vec![0u8; n + 1];
    let mut len: c_int = 0;
    // SAFETY: buf holds MPI_MAX_LIBRARY_VERSION_STRING bytes.
    unsafe { PMPI_Get_library_version(buf.as_mut_ptr().cast(), &mut len) };
    let len = usize::try_from(len).unwrap_or(0).min(n);
    let text = String::from_utf8_lossy(&buf[..len]);
    let text = text.trim_end_matches('\0');
    match loggp_core::mpilib::serves(FLAVOUR.cli_name(), abi::LIB_VERSION, text) {
        Ok(l) => {
            let first = loggp_core::mpilib::first_line(text);
            let _ = LOADED.set((l.version_string(), first));
        }
        Err(line) => refuse(&line),
    }
}

/// Load-time check: only reads symbols, never calls MPI.
extern "C" fn on_load() {
    check_flavour();
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

/// The configuration, parsed from the environment before MPI_Init so that a
/// bad value stops the job with one line (printed by rank 0 only).
pub fn config_or_exit() -> Config {
    check_flavour();
    check_version();
    let parsed = Config::from_vars(std::env::vars()).map_err(|e| e.to_string());
    let parsed = parsed.and_then(|c| match crate::coll::config_error() {
        Some(line) => Err(line),
        None => Ok(c),
    });
    match parsed {
        Ok(c) => {
            crate::clock::set_test_clock(c.test_clock);
            c
        }
        Err(e) => {
            if log::launcher_rank().is_none_or(|r| r == 0) {
                log::line(&e);
            } else {
                // The other ranks leave a little later: Open MPI's mpirun
                // aborts the job at the first non-zero exit and then at times
                // drops rank 0's line (3 ranks, CI).
                // SAFETY: plain sleep.
                unsafe { libc::usleep(300_000) };
            }
            // SAFETY: ends the process; MPI is not initialised yet.
            unsafe { libc::_exit(1) }
        }
    }
}

static PRIVATE: OnceLock<SharedHandle> = OnceLock::new();
/// `Engine::payload_comm`, freed at MPI_Finalize.
static PAYLOAD: OnceLock<SharedHandle> = OnceLock::new();

/// MPI_TAG_UB of MPI_COMM_WORLD (at least 32767, MPI-4.0 §8.1.2).
unsafe fn tag_ub(c: &Consts) -> u32 {
    unsafe {
        let mut v: *mut c_int = std::ptr::null_mut();
        let mut flag: c_int = 0;
        PMPI_Comm_get_attr(
            c.comm_world,
            abi::TAG_UB,
            (&mut v as *mut *mut c_int).cast(),
            &mut flag,
        );
        if flag == 0 || v.is_null() {
            return 32767;
        }
        u32::try_from(*v).unwrap_or(32767).max(32767)
    }
}

/// After the real MPI_Init succeeded: agree on the configuration, learn the
/// native transit, install the engine.
///
/// # Safety
/// MPI must be initialised.
pub unsafe fn after_init(cfg: Config) {
    unsafe {
        let Some(c) = Consts::resolve() else {
            log::fatal_raw(
                "cannot resolve MPI's predefined handles; is this the MPI the shim was built for?",
            );
        };
        let clock_start = crate::clock::calibration_point();
        let (mut rank, mut size) = (0, 1);
        PMPI_Comm_rank(c.comm_world, &mut rank);
        PMPI_Comm_size(c.comm_world, &mut size);
        all_ranks_loaded_or_exit(&c, rank);
        // Every collective of the start-up is nonblocking and waited for
        // asleep (`lazy_wait`): where ranks outnumber processors, MPICH's
        // blocking collectives spin, and a spinning rank holds its processor
        // for a time slice from the rank it waits for (10 ranks on 2 cores:
        // 630 ms for a Comm_dup, two Allreduces and a Comm_split_type, even
        // with virtual time off).
        let mut private = c.comm_null;
        let mut req = c.request_null;
        PMPI_Comm_idup(c.comm_world, &mut private, &mut req);
        lazy_wait(&mut req);
        let _ = PRIVATE.set(SharedHandle(private));

        // Every rank must run with the same knobs: a rank that adds headers
        // talking to one that does not would corrupt messages.
        // The collectives' algorithm choices too: ranks running different
        // algorithms would mismatch their messages.
        // One reduction: the maximum of the fingerprint and of its complement
        // (the complement of the minimum).
        let fp = cfg.fingerprint() ^ crate::coll::config_hash() ^ build_hash();
        // With it, whether any rank runs MPI_THREAD_MULTIPLE: then no rank
        // sends tiny headers (`Engine::no_tiny`).
        let mut provided: c_int = abi::THREAD_MULTIPLE;
        PMPI_Query_thread(&mut provided);
        let mine = [fp, !fp, u64::from(provided >= abi::THREAD_MULTIPLE)];
        let mut mx = [0u64; 3];
        PMPI_Iallreduce(
            mine.as_ptr().cast(),
            mx.as_mut_ptr().cast(),
            3,
            c.uint64,
            c.op_max,
            private,
            &mut req,
        );
        lazy_wait(&mut req);
        if mx[0] != !mx[1] {
            settings_differ_exit(&c, private, rank, size, &cfg);
        }
        // Payloads of split messages travel on a communicator of their own
        // (`Engine::payload_comm`): every rank makes it, since a receiver
        // takes what any sender splits. Only once the ranks agree on the
        // settings: a rank without virtual time would not join the dup.
        let mut payload = c.comm_null;
        if cfg.vt_active() {
            PMPI_Comm_idup(c.comm_world, &mut payload, &mut req);
            lazy_wait(&mut req);
            PMPI_Comm_set_errhandler(payload, c.errors_return);
            let _ = PAYLOAD.set(SharedHandle(payload));
        }

        let vt = cfg.vt_active() && size >= 2;
        let t_start = now();
        let host_of = if vt {
            host_indices(&c, private, size)
        } else {
            Vec::new()
        };
        // Only waits under virtual time care (pass-through never waits).
        let mut placement = String::new();
        if vt {
            let me = host_of[as_index(rank)];
            let here = host_of.iter().filter(|&&h| h == me).count();
            let procs = host_processors();
            crate::clock::set_oversubscribed(here > procs);
            placement = format!(
                " ({here} on rank 0's host, {procs} processor{} for them{})",
                if procs == 1 { "" } else { "s" },
                if here > procs {
                    ": waits give the processor away"
                } else {
                    ""
                }
            );
        }
        let hosts_n = host_of.iter().max().map_or(1, |&h| h + 1);
        // Targeting: a selection naming a rank the job lacks, or selecting none
        // of its pairs (`@inter` on one host), stops the job with one line.
        if vt {
            if let Err(mut e) = cfg.check_job(u32::try_from(size).unwrap_or(0), &host_of) {
                // The value as the user wrote it.
                if let Ok(v) = std::env::var(&e.var) {
                    e.value = v;
                }
                if rank == 0 {
                    log::line(&e.to_string());
                }
                PMPI_Barrier(private);
                libc::_exit(1)
            }
        }
        // Several hosts: synchronise the clocks first, so that the transit
        // measurement below reads departures in this rank's clock.
        let mut epochs = Vec::new();
        let synced = if vt && hosts_n > 1 {
            let (map, uncertainty, offset, eps) = sync_clocks(&c, private, rank, &host_of);
            epochs = eps;
            let h = Hosts {
                tag: host_of[as_index(rank)] as u64 + 1,
                map,
                other_host: None,
            };
            crate::clock::set_hosts(h);
            if cfg.log >= LogLevel::Info {
                let me = as_index(rank);
                if host_of[me] != 0 && host_of.iter().position(|&x| x == host_of[me]) == Some(me) {
                    log::line(&format!(
                    "host {}: clock synchronised to rank 0's host within ±{:.0}ns (reference − this clock = {:.0}ns)",
                    processor_name(),
                    uncertainty,
                    offset
                ));
                }
            }
            Some(h)
        } else {
            None
        };
        // The probes below time the shim's own path as the run takes it:
        // with the status's count read in place, and below
        // MPI_THREAD_MULTIPLE without the state's mutex (with it, the own
        // cost of an 8-byte send read 130-140 ns against 30 ns in the run,
        // and o_s=+20us spun 100 ns short).
        engine::learn_status_count(c.byte);
        crate::clock::set_one_thread(provided < abi::THREAD_MULTIPLE);
        // While the transit is measured (every knob zero), the gate must never
        // hold a message: read every departure a second early, so that what
        // is left of the clocks' disagreement cannot add to the transit.
        let early = synced.map(|h| Hosts {
            map: ClockMap {
                offset_ns: h.map.offset_ns + 1e9,
                ..h.map
            },
            ..h
        });
        // The native transit of each class of pair, measured from rank 0: to
        // the next rank of its host, and to the first rank of another host.
        let same_peer = (1..host_of.len()).find(|&r| host_of[r] == 0);
        let other_peer = (1..host_of.len()).find(|&r| host_of[r] != 0);
        let (native, other) = if vt {
            let first = same_peer.or(other_peer).unwrap_or(1);
            let n = measure_native(&cfg, &c, private, rank, size, as_rank(first), true, early);
            match (same_peer, other_peer) {
                (Some(_), Some(o)) => {
                    let far =
                        measure_native(&cfg, &c, private, rank, size, as_rank(o), false, early);
                    (n, Some(far.transit))
                }
                (None, Some(_)) => (n, Some(n.transit)),
                _ => (n, None),
            }
        } else {
            (Native::default(), None)
        };
        let transit = native.transit;
        // Start-up so far took some milliseconds (~10 with the ping-pong):
        // enough to calibrate the counter behind `clock::now`.
        crate::clock::calibrate(
            clock_start,
            crate::clock::calibration_point(),
            cfg.tsc_clock,
        );
        let hosts = synced.map(|h| Hosts {
            other_host: other,
            ..h
        });
        if cfg.log >= LogLevel::Info && rank == 0 {
            log::line(&format!(
            "{} (shim built for {} {}), {} ranks on {} host{}{}, {}; native transit (through the shim, {}) {}, then {:.3}ns/B{}; shim's own cost {}ns per send, {}ns per receive; start-up {:.1}ms",
            loaded().1,
            FLAVOUR.name(),
            abi::LIB_VERSION,
            size,
            hosts_n,
            if hosts_n == 1 { "" } else { "s" },
            placement,
            cfg,
            match native.from_half_rtt {
                0 => "departure stamp to gate".to_string(),
                n => format!("{n} of 8 sizes from half round trips"),
            },
            fmt_transit(&transit),
            transit.per_byte_ns,
            match (&other, same_peer) {
                (Some(o), Some(_)) => format!("; to another host {}", fmt_transit(o)),
                _ => String::new(),
            },
            native.own_send_ns,
            native.own_recv_ns,
            (now() - t_start) as f64 / 1e6
        ));
        }
        crate::coll::nb::register();
        let mut e = Engine::new(cfg, c, rank, size, transit);
        e.set_own_costs(native.own_send_ns, native.own_recv_ns);
        e.set_pairs(&host_of);
        e.set_thread_level(provided);
        if mx[2] != 0 {
            e.no_tiny();
        }
        if let Some(h) = hosts {
            e.set_hosts(h);
            e.set_drift(DriftCorrection::new(h.tag, &epochs));
            let me = as_index(rank);
            let first = host_of.iter().position(|&x| x == host_of[me]) == Some(me);
            let _ = DRIFT_LOG.set((h.tag, hosts_n, first));
        }
        PMPI_Comm_dup(c.comm_self, &mut e.self_comm.0);
        e.progress_comm = SharedHandle(private);
        e.tag_ub = tag_ub(&c);
        if payload != c.comm_null {
            e.payload_comm = SharedHandle(payload);
            e.payload_tags = tag_ub(&c);
        }
        engine::install(e);
    }
}

/// The start-up below is collective. A rank started without the shim never
/// joins it, and would hang the job: wait for everyone in a nonblocking
/// barrier with a deadline, and stop with one line if it passes.
unsafe fn all_ranks_loaded_or_exit(c: &Consts, rank: c_int) {
    unsafe {
        // Every rank has entered MPI_Init once ours returns (both MPIs exchange
        // start-up data there), so the others arrive within milliseconds.
        const DEADLINE_NS: u64 = 10_000_000_000;
        let mut req = c.request_null;
        PMPI_Ibarrier(c.comm_world, &mut req);
        let start = now();
        let mut flag: c_int = 0;
        let mut st = Status::zeroed();
        let mut patience = crate::clock::Patience::asleep();
        loop {
            PMPI_Test(&mut req, &mut flag, &mut st);
            if flag != 0 {
                return;
            }
            if now() - start > DEADLINE_NS {
                log::abort_job(
                    Some(&format!(
                    "rank {rank}: not every rank reached MPI_Init with the shim loaded within 10 s \
                     (was LD_PRELOAD given to all ranks? use loggp run, or -x/-genv); stopping"
                )),
                    c.comm_world,
                );
            }
            patience.pause();
        }
    }
}

/// Native transit `L_native(s)`, and the shim's own per-call cost (see
/// below; when `own_costs`), measured between rank 0 and `peer` (minimum
/// half round trips at eight sizes) and broadcast.
///
/// The ping-pong runs *through the engine itself* with every knob at zero,
/// and the transit is the minimum time from the sender's departure stamp
/// `d` to the receiver's gate: the shim's own work between the two
/// (staging, header) is part of it, so it does not hide under `L`, and the
/// shim's work before the stamp and after the gate is not, so that at zero
/// knobs the gate holds no message (a half round trip would hold each by
/// that work, ~0.1 µs). Called once per class of pair (same host, other
/// host): 2 or 4 ranks take part, whatever the job's size.
#[allow(clippy::too_many_arguments)]
unsafe fn measure_native(
    cfg: &Config,
    c: &Consts,
    comm: Comm,
    rank: c_int,
    size: c_int,
    peer: c_int,
    own_costs: bool,
    early: Option<Hosts>,
) -> Native {
    unsafe {
        const BIG: usize = 1 << 20;
        // (bytes, warm-up, timed) per size: small sizes, both sides of the
        // usual eager limits and of LOGGP_INLINE_MAX, up to 1 MiB (~10 ms in
        // all). One line through 8 B and 1 MiB missed Open MPI's rendezvous:
        // the realised L fell ~5 us short at 16 KiB.
        const SIZES: [(usize, u32, u32); 8] = [
            (8, 300, 1000),
            (1 << 10, 50, 300),
            (4 << 10, 50, 200),
            (12 << 10, 30, 150),
            (16 << 10, 30, 150),
            (64 << 10, 10, 60),
            (256 << 10, 5, 20),
            (BIG, 3, 10),
        ];
        let zero = Config {
            l: 0,
            o_s: 0,
            o_r: 0,
            g_s: 0,
            g_r: 0,
            g_big: 0.0,
            vt: loggp_core::VtMode::On,
            // Every knob at zero means no targeted item and no draw either.
            targets: Default::default(),
            l_dist: loggp_core::dist::Dist::Fixed,
            o_s_dist: loggp_core::dist::Dist::Fixed,
            o_r_dist: loggp_core::dist::Dist::Fixed,
            // The knobs the job runs (set or armed), their values zero:
            // the probes take the paths the job's messages take.
            armed: cfg.running_knobs(),
            ..cfg.clone()
        };
        // The transit's probe runs L's paths besides: its sender stamps
        // departures and its gate reads them (the stamp-to-gate minima
        // below). At zero knobs the idle lanes stamp nothing: from the idle
        // lanes (f59c1b0) to session 49 the transit fell back to the half
        // round trip through the shim, and the own costs below were those
        // of the idle lanes, 10 ns where a knob's paths cost 40-70.
        // (Built only where the own costs are measured: not for the
        // far-host transit.)
        let mut own_probe =
            own_costs.then(|| Engine::new(zero.clone(), *c, rank, size, Transit::default()));
        let zero = Config {
            armed: zero.armed | loggp_core::config::ARM_L,
            ..zero
        };
        let mut probe = Engine::new(zero, *c, rank, size, Transit::default());
        if let Some(h) = early {
            probe.set_hosts(h);
            if let Some(p) = own_probe.as_mut() {
                p.set_hosts(h);
            }
        }
        // Large messages take the path they will take in the job: split
        // (`LOGGP_SPLIT`), not the struct datatype, whose protocol moves
        // them at another speed (here 2.9x native): a transit learned on
        // it left `LOGGP_G` floors 4-7 % short and G = 16 GB/s at 0.78x
        // native bandwidth.
        if let Some(p) = PAYLOAD.get() {
            probe.payload_comm = SharedHandle(p.0);
            probe.payload_tags = tag_ub(c);
        }
        let mut buf = vec![0u8; BIG];
        // Per size: the minimum one-way time from the sender's stamp `d` to
        // the receiver's gate, each direction seen by its receiver's gate
        // (rank 1: 0 → 1, rank 0: 1 → 0). Their mean is the transit; on one
        // host both are the same, across hosts a clock offset adds to one and
        // takes from the other. The half round trip is the fallback.
        let mut result = [0f64; SIZES.len()];
        // Per size, the minima of each run of CHUNK timed rounds, each
        // direction on its receiver: across hosts the two directions are
        // combined chunk by chunk, so that clocks drifting during a series
        // (1000 ppm: 30 us over the 8 B one) cannot make one direction's
        // minimum early in it and the other's late.
        const CHUNK: u32 = 50;
        let chunks = |reps: u32| reps.div_ceil(CHUNK) as usize;
        let total: usize = SIZES.iter().map(|s| chunks(s.2)).sum();
        let mut mins = vec![f64::INFINITY; total];
        let mut half_rtt = [f64::INFINITY; SIZES.len()];
        // Sizes whose transit is the half round trip (no stamp-to-gate
        // minimum in both directions): rank 0 counts them, for the log.
        let mut from_half_rtt = SIZES.len();
        let mut st = Status::zeroed();
        // Only rank 0 and `peer` take part; the others wait for the result
        // asleep (`lazy_wait`), so that where ranks outnumber cores (a test
        // bed, a laptop) spinning bystanders do not take the processors from
        // the measured pair: MPICH's spinning barrier made it 213 us at 8 B
        // between two ranks of one host, 4 ranks on 2 cores.
        let part = rank == 0 || rank == peer;
        // Warm-up rounds (first touches, lazy connection set-up) are not timed.
        let mut at = 0;
        for (i, &(len, warm, reps)) in SIZES.iter().enumerate().filter(|_| part) {
            let n = c_int::try_from(len).unwrap_or(0);
            let mut best = f64::INFINITY;
            pair_sync(c, comm, rank, peer);
            for k in 0..warm + reps {
                if k == warm {
                    best = f64::INFINITY;
                    probe.take_min_one_way();
                } else if k > warm && (k - warm) % CHUNK == 0 {
                    let m = probe.take_min_one_way().map_or(f64::INFINITY, |v| v as f64);
                    mins[at + ((k - warm) / CHUNK) as usize - 1] = m;
                }
                if rank == 0 {
                    let t0 = now();
                    probe.send(
                        Mode::Standard,
                        buf.as_ptr().cast(),
                        n,
                        c.byte,
                        peer,
                        7,
                        comm,
                    );
                    probe.recv(
                        buf.as_mut_ptr().cast(),
                        n,
                        c.byte,
                        peer,
                        7,
                        comm,
                        None,
                        &mut st,
                    );
                    best = best.min((now() - t0) as f64 / 2.0);
                } else if rank == peer {
                    probe.recv(
                        buf.as_mut_ptr().cast(),
                        n,
                        c.byte,
                        0,
                        7,
                        comm,
                        None,
                        &mut st,
                    );
                    probe.send(Mode::Standard, buf.as_ptr().cast(), n, c.byte, 0, 7, comm);
                }
            }
            half_rtt[i] = best;
            let m = probe.take_min_one_way().map_or(f64::INFINITY, |v| v as f64);
            mins[at + chunks(reps) - 1] = m;
            result[i] = mins[at..at + chunks(reps)]
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min);
            at += chunks(reps);
        }
        // The probe's kept datatypes go with it (MPICH counts a type not
        // freed by MPI_Finalize as leaked, and says so).
        probe.free_kept();
        // Rank 0 combines its direction with the peer's.
        let nm = c_int::try_from(total).unwrap_or(0);
        if rank == peer {
            PMPI_Send(mins.as_ptr().cast(), nm, c.double, 0, 12, comm);
        } else if rank == 0 {
            let mut other = vec![0f64; total];
            PMPI_Recv(
                other.as_mut_ptr().cast(),
                nm,
                c.double,
                peer,
                12,
                comm,
                &mut st,
            );
            // Across hosts the probe's gate reads departures a second early
            // (`early`): each direction's one-way time is a second longer.
            let early_ns = if early.is_some() { 1e9 } else { 0.0 };
            from_half_rtt = 0;
            let mut at = 0;
            for (i, &(_, _, reps)) in SIZES.iter().enumerate() {
                let n = chunks(reps);
                // On one host both directions read one clock: the minimum of
                // each (as ever). Across hosts: the best chunk of the two.
                let (a, b) = if early.is_some() {
                    let best = (at..at + n)
                        .filter(|&j| mins[j].is_finite() && other[j].is_finite())
                        .map(|j| (mins[j] + other[j]) / 2.0)
                        .fold(f64::INFINITY, f64::min);
                    (best, best)
                } else {
                    let fold = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
                    (result[i], fold(&other[at..at + n]))
                };
                result[i] = if a.is_finite() && b.is_finite() {
                    ((a + b) / 2.0 - early_ns).max(0.0)
                } else {
                    from_half_rtt += 1;
                    half_rtt[i]
                };
                at += n;
            }
        }

        // The shim's own cost inside a send call (measured on rank 0) and inside
        // a receive of an already-arrived message (on rank 1): minimum in-call
        // time through the engine minus the same through MPI alone, alternating
        // the two so that both see the same machine. o_s and o_r spin that much
        // less, so that what a benchmark sees in the call is native + the knob.
        let mut best = [[f64::INFINITY; 2]; 2]; // [send|recv][raw|shim]
        let mut ack = [0u8; 1];
        if let Some(own_probe) = own_probe.as_ref() {
            // One 8-byte message through the probe engine (`shim` 1) or
            // MPI alone (0), sent to `peer` or received from rank 0.
            let p = buf.as_mut_ptr().cast::<c_void>();
            let send8 = |shim: usize, tag: c_int| {
                if shim == 1 {
                    own_probe.send(Mode::Standard, p, 8, c.byte, peer, tag, comm);
                } else {
                    PMPI_Send(p, 8, c.byte, peer, tag, comm);
                }
            };
            let recv8 = |shim: usize, tag: c_int, st: &mut Status| {
                if shim == 1 {
                    own_probe.recv(p, 8, c.byte, 0, tag, comm, None, st);
                } else {
                    PMPI_Recv(p, 8, c.byte, 0, tag, comm, st);
                }
            };
            for k in 0..1200 {
                let shim = k % 2;
                let timed = k >= 200;
                // Send side.
                if rank == 0 {
                    let t0 = now();
                    send8(shim, 8);
                    let dt = (now() - t0) as f64;
                    if timed {
                        best[0][shim] = best[0][shim].min(dt);
                    }
                    PMPI_Recv(ack.as_mut_ptr().cast(), 1, c.byte, peer, 9, comm, &mut st);
                } else if rank == peer {
                    recv8(shim, 8, &mut st);
                    PMPI_Send(ack.as_ptr().cast(), 1, c.byte, 0, 9, comm);
                }
                // Receive side: rank 1 receives a message known to have arrived.
                if rank == 0 {
                    send8(shim, 10);
                    PMPI_Recv(ack.as_mut_ptr().cast(), 1, c.byte, peer, 9, comm, &mut st);
                } else if rank == peer {
                    let mut flag: c_int = 0;
                    while flag == 0 {
                        PMPI_Iprobe(0, 10, comm, &mut flag, &mut st);
                    }
                    let t0 = now();
                    recv8(shim, 10, &mut st);
                    let dt = (now() - t0) as f64;
                    if timed {
                        best[1][shim] = best[1][shim].min(dt);
                    }
                    PMPI_Send(ack.as_ptr().cast(), 1, c.byte, 0, 9, comm);
                }
            }
        }
        // Each side was timed on one rank only; elsewhere both minima are still
        // infinite, and ∞ − ∞ would raise FE_INVALID in the application's
        // floating-point state.
        let own = |b: [f64; 2]| {
            if b[0].is_finite() && b[1].is_finite() {
                (b[1] - b[0]).max(0.0)
            } else {
                0.0
            }
        };
        let mut own_r = own(best[1]);
        if !own_costs {
        } else if rank == peer {
            PMPI_Send((&own_r as *const f64).cast(), 1, c.double, 0, 11, comm);
        } else if rank == 0 {
            PMPI_Recv(
                (&mut own_r as *mut f64).cast(),
                1,
                c.double,
                peer,
                11,
                comm,
                &mut st,
            );
        }
        if let Some(p) = own_probe {
            p.free_kept();
        }
        let mut out = [0f64; SIZES.len() + 2];
        out[..SIZES.len()].copy_from_slice(&result);
        out[SIZES.len()] = own(best[0]);
        out[SIZES.len() + 1] = own_r;
        let n = c_int::try_from(out.len()).unwrap_or(0);
        let mut req = c.request_null;
        PMPI_Ibcast(out.as_mut_ptr().cast(), n, c.double, 0, comm, &mut req);
        lazy_wait(&mut req);
        let points: Vec<(u64, f64)> = SIZES
            .iter()
            .zip(out.iter())
            .map(|(&(len, _, _), &t)| (len as u64, t))
            .collect();
        let (own_s, own_r) = (out[SIZES.len()], out[SIZES.len() + 1]);
        Native {
            transit: Transit::from_points(&points),
            own_send_ns: loggp_core::units::round_ns(own_s),
            own_recv_ns: loggp_core::units::round_ns(own_r),
            from_half_rtt,
        }
    }
}

/// What start-up learns about the native machine and the shim itself.
#[derive(Clone, Copy, Debug, Default)]
pub struct Native {
    pub transit: Transit,
    /// The shim's own time inside a send call (subtracted from o_s).
    pub own_send_ns: u64,
    /// The shim's own time inside a receive call (subtracted from o_r).
    pub own_recv_ns: u64,
    /// On rank 0: the sizes whose transit is the half round trip through
    /// the shim, for want of departure stamps seen at the gate in both
    /// directions (0 where the probe works as meant).
    pub from_half_rtt: usize,
}

fn as_rank(i: usize) -> c_int {
    c_int::try_from(i).unwrap_or(0)
}

fn as_index(r: c_int) -> usize {
    usize::try_from(r).unwrap_or(0)
}

fn fmt_transit(t: &Transit) -> String {
    t.points()
        .iter()
        .map(|&(b, t)| format!("{b}B {t:.0}ns"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// This process's host, as MPI names it.
pub fn processor_name() -> String {
    let n = usize::try_from(abi::MAX_PROCESSOR_NAME).unwrap_or(256);
    let mut v = vec![0u8; n + 1];
    let mut len: c_int = 0;
    // SAFETY: a buffer of MPI_MAX_PROCESSOR_NAME bytes, as MPI requires.
    unsafe { PMPI_Get_processor_name(v.as_mut_ptr().cast(), &mut len) };
    v.truncate(usize::try_from(len).unwrap_or(0).min(n));
    String::from_utf8_lossy(&v).into_owned()
}

/// Waits for a start-up request asleep, from 20 us between tests to 1 ms
/// (`loggp_core::idle`, `Kind::Asleep`): a rank with nothing to do leaves
/// the processors to those measuring. Waking every 20 us, 8 bystanders
/// (10 ranks on 2 cores) preempted the measured pair so often that its
/// best 8-byte one-way time was 47 us instead of 0.13 us. At most 1 ms
/// late, once per phase of the start-up.
unsafe fn lazy_wait(req: &mut Request) {
    unsafe {
        let mut flag: c_int = 0;
        let mut st = Status::zeroed();
        let mut patience = crate::clock::Patience::asleep();
        loop {
            PMPI_Test(req, &mut flag, &mut st);
            if flag != 0 {
                return;
            }
            patience.pause();
        }
    }
}

/// Rank 0 and `peer` meet (an empty exchange), without the other ranks.
unsafe fn pair_sync(c: &Consts, comm: Comm, rank: c_int, peer: c_int) {
    unsafe {
        let other = if rank == 0 { peer } else { 0 };
        let mut st = Status::zeroed();
        PMPI_Sendrecv(
            std::ptr::null(),
            0,
            c.byte,
            other,
            13,
            std::ptr::null_mut(),
            0,
            c.byte,
            other,
            13,
            comm,
            &mut st,
        );
    }
}

/// The host of every rank, as an index: hosts numbered in the order of
/// their first rank (rank 0's host is 0). One Allgather of the names.
/// The processors the ranks on this host may use: those online, fewer where
/// the control group confines the process (`loggp_core::idle::processors`:
/// a batch system's cpuset, a container's CPU quota), cgroup v2 or v1, at
/// its own level and above.
fn host_processors() -> usize {
    use loggp_core::idle::processors;
    // SAFETY: plain libc call.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let mut n = usize::try_from(online).unwrap_or(1);
    let read = |p: &std::path::Path| std::fs::read_to_string(p).ok();
    let Some(own) = read(std::path::Path::new("/proc/self/cgroup")) else {
        return n.max(1);
    };
    for line in own.lines() {
        // `hierarchy:controllers:path`; cgroup v2's has no controllers.
        let Some((ctrl, path)) = line.split_once(':').and_then(|(_, r)| r.split_once(':')) else {
            continue;
        };
        let has = |c: &str| ctrl.split(',').any(|x| x == c);
        // The hierarchy's directory, its file of CPUs, and its quota's
        // file (with v1's period beside it).
        let (sub, cpus, quota) = if ctrl.is_empty() {
            ("", Some("cpuset.cpus.effective"), Some(("cpu.max", None)))
        } else if has("cpuset") {
            ("cpuset", Some("cpuset.cpus"), None)
        } else if has("cpu") {
            (
                "cpu",
                None,
                Some(("cpu.cfs_quota_us", Some("cpu.cfs_period_us"))),
            )
        } else {
            continue;
        };
        let root = std::path::Path::new("/sys/fs/cgroup").join(sub);
        // From the process's own group up to the hierarchy's root; a group
        // named from outside a cgroup namespace is not there.
        let mut dir = root.join(path.trim_start_matches('/'));
        loop {
            let c = cpus.and_then(|f| read(&dir.join(f)));
            let q = quota.and_then(|(f, period)| {
                let q = read(&dir.join(f))?;
                match period {
                    None => Some(q),
                    Some(p) => Some(format!("{} {}", q.trim(), read(&dir.join(p))?.trim())),
                }
            });
            n = processors(n, c.as_deref(), q.as_deref());
            if dir == root || !dir.pop() {
                break;
            }
        }
    }
    n.max(1)
}

unsafe fn host_indices(c: &Consts, comm: Comm, size: c_int) -> Vec<usize> {
    unsafe {
        let n = usize::try_from(abi::MAX_PROCESSOR_NAME).unwrap_or(256);
        let mut mine = processor_name().into_bytes();
        mine.resize(n, 0);
        let p = as_index(size);
        let mut all = vec![0u8; n * p];
        let mut req = c.request_null;
        PMPI_Iallgather(
            mine.as_ptr().cast(),
            abi::MAX_PROCESSOR_NAME,
            c.byte,
            all.as_mut_ptr().cast(),
            abi::MAX_PROCESSOR_NAME,
            c.byte,
            comm,
            &mut req,
        );
        lazy_wait(&mut req);
        let names: Vec<&[u8]> = all.chunks(n).collect();
        let mut firsts: Vec<&[u8]> = Vec::new();
        names
            .iter()
            .map(|name| match firsts.iter().position(|f| f == name) {
                Some(i) => i,
                None => {
                    firsts.push(name);
                    firsts.len() - 1
                }
            })
            .collect()
    }
}

/// Synchronises each host's clock to rank 0's (the reference) by Cristian's
/// method: the first rank of each other host exchanges timestamped
/// ping-pongs with rank 0, one host after the other (O(hosts) exchanges),
/// and the best round trip decides (`loggp_core::clocks`). Every rank of a
/// host gets that host's map, so ranks of one host agree exactly. Returns
/// the map and its uncertainty (half the best round trip; 0 on rank 0's
/// host), the offset measured here, and when each host's map was measured,
/// on this rank's clock (what drift correction counts from).
unsafe fn sync_clocks(
    c: &Consts,
    comm: Comm,
    rank: c_int,
    host_of: &[usize],
) -> (ClockMap, f64, f64, Vec<u64>) {
    unsafe {
        const ROUNDS: usize = 100;
        let hosts = host_of.iter().max().map_or(1, |&h| h + 1);
        let leader = |h: usize| host_of.iter().position(|&x| x == h).unwrap_or(0);
        let mut st = Status::zeroed();
        // The reference's epoch: rank 0's clock now, the base of the stamps.
        let mut ref_epoch: u64 = now();
        PMPI_Bcast((&mut ref_epoch as *mut u64).cast(), 1, c.uint64, 0, comm);
        // Per host: [epoch, offset bits, uncertainty bits], filled by its leader.
        // (Rank 0 fills its host's slot 0.)
        let mut mine = vec![0u64; 3 * hosts];
        let me = as_index(rank);
        let mut offset = 0.0;
        if rank == 0 {
            mine[0] = ref_epoch;
            mine[1] = ClockMap::reference(ref_epoch).offset_ns.to_bits();
            mine[2] = 0f64.to_bits();
            for h in 1..hosts {
                let l = as_rank(leader(h));
                for _ in 0..ROUNDS {
                    let mut t: u64 = 0;
                    PMPI_Recv(
                        (&mut t as *mut u64).cast(),
                        1,
                        c.uint64,
                        l,
                        21,
                        comm,
                        &mut st,
                    );
                    let t = now();
                    PMPI_Send((&t as *const u64).cast(), 1, c.uint64, l, 22, comm);
                }
            }
        } else if leader(host_of[me]) == me {
            let mut samples = Vec::with_capacity(ROUNDS);
            for _ in 0..ROUNDS {
                let sent = now();
                PMPI_Send((&sent as *const u64).cast(), 1, c.uint64, 0, 21, comm);
                let mut peer: u64 = 0;
                PMPI_Recv(
                    (&mut peer as *mut u64).cast(),
                    1,
                    c.uint64,
                    0,
                    22,
                    comm,
                    &mut st,
                );
                samples.push(SyncSample {
                    sent,
                    peer,
                    received: now(),
                });
            }
            if let Some(e) = estimate_offset(&samples) {
                offset = e.offset_ns;
                let m = ClockMap::from_offset(&e, ref_epoch, 0.0);
                let h = host_of[me];
                mine[3 * h] = m.epoch;
                mine[3 * h + 1] = m.offset_ns.to_bits();
                mine[3 * h + 2] = e.uncertainty_ns.to_bits();
            }
        }
        // Every rank's three words to every rank (pure data movement: no
        // reduction operation reads the bit patterns); each host's are its
        // leader's.
        // Ranks that took no part, and leaders done before the others, wait
        // asleep (see `measure_native`).
        let mut all = vec![0u64; 3 * host_of.len()];
        let mut req = c.request_null;
        PMPI_Iallgather(
            mine[3 * host_of[me]..3 * host_of[me] + 3].as_ptr().cast(),
            3,
            c.uint64,
            all.as_mut_ptr().cast(),
            3,
            c.uint64,
            comm,
            &mut req,
        );
        lazy_wait(&mut req);
        let l = leader(host_of[me]);
        let map = ClockMap {
            epoch: all[3 * l],
            offset_ns: f64::from_bits(all[3 * l + 1]),
            rate: 0.0,
        };
        // Host h's epoch in the reference time base is its epoch through its
        // map (REF_BASE for rank 0's host), then on this clock through ours.
        let epochs = (0..hosts)
            .map(|h| {
                let lh = leader(h);
                let m = ClockMap {
                    epoch: all[3 * lh],
                    offset_ns: f64::from_bits(all[3 * lh + 1]),
                    rate: 0.0,
                };
                let r = if h == 0 { REF_BASE } else { m.to_ref(m.epoch) };
                map.to_local(r)
            })
            .collect();
        (map, f64::from_bits(all[3 * l + 2]), offset, epochs)
    }
}

/// Across hosts: this rank's host tag, the number of hosts, and whether
/// it is its host's first rank (which reports the drift at the end).
static DRIFT_LOG: OnceLock<(u64, usize, bool)> = OnceLock::new();

/// The wire format's version: 2 since departures travel as stamps
/// (`loggp_core::clocks::Stamp`); 5 since the header is 32 bytes and names
/// the sender, carries the drawn L and the hand-off lag; 6 since it
/// carries the sender's sequence number. Ranks of different builds must
/// agree.
const WIRE: u32 = 6;

/// What must agree across ranks about the shim's build.
fn build_id() -> String {
    format!("loggp-shim {} wire {WIRE}", env!("CARGO_PKG_VERSION"))
}

fn build_hash() -> u64 {
    build_id().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Ranks disagree on the shim's build or settings: one line, by rank 0,
/// naming the first host (and rank) whose ranks differ from rank 0's and
/// both descriptions; then every rank stops.
unsafe fn settings_differ_exit(
    c: &Consts,
    comm: Comm,
    rank: c_int,
    size: c_int,
    cfg: &Config,
) -> ! {
    unsafe {
        const NI: c_int = 400;
        const N: usize = NI as usize;
        let describe = format!(
            "{}, {}, collectives {:016x}",
            build_id(),
            cfg,
            crate::coll::config_hash()
        );
        let mut mine = describe.into_bytes();
        mine.resize(N, 0);
        let n = usize::try_from(abi::MAX_PROCESSOR_NAME).unwrap_or(256);
        let mut name = processor_name().into_bytes();
        name.resize(n, 0);
        let p = as_index(size);
        let mut all = vec![0u8; N * p];
        let mut names = vec![0u8; n * p];
        PMPI_Allgather(
            mine.as_ptr().cast(),
            NI,
            c.byte,
            all.as_mut_ptr().cast(),
            NI,
            c.byte,
            comm,
        );
        PMPI_Allgather(
            name.as_ptr().cast(),
            abi::MAX_PROCESSOR_NAME,
            c.byte,
            names.as_mut_ptr().cast(),
            abi::MAX_PROCESSOR_NAME,
            c.byte,
            comm,
        );
        if rank == 0 {
            let text = |v: &[u8]| {
                String::from_utf8_lossy(v)
                    .trim_end_matches('\0')
                    .to_string()
            };
            let first = (1..p)
                .find(|&r| all[N * r..N * r + N] != all[..N])
                .unwrap_or(0);
            log::line(&format!(
            "the ranks on host {} (rank {first}) were started with a different shim build or              LOGGP_* settings than rank 0 on host {}: {} against {}; every rank must load the              same build with the same settings",
            text(&names[n * first..n * first + n]),
            text(&names[..n]),
            text(&all[N * first..N * first + N]),
            text(&all[..N])
        ));
        }
        PMPI_Barrier(comm);
        libc::_exit(1)
    }
}

/// Before the real MPI_Finalize: finish buffered sends, write the report.
///
/// # Safety
/// MPI must be initialised and not finalised.
pub unsafe fn before_finalize() {
    unsafe {
        let Some(e) = engine::get_opt() else {
            return;
        };
        if engine::active() {
            e.flush_bsends();
        }
        engine::deactivate();
        let drift_log = DRIFT_LOG.get().filter(|&&(_, _, first)| {
            e.cfg.log >= LogLevel::Debug || (first && e.cfg.log >= LogLevel::Info)
        });
        if let Some(&(tag, n, _)) = drift_log {
            let rates: Vec<String> = (1..=n as u64)
                .filter(|&t| t != tag)
                .map(|t| format!("host {}'s {:+.2}ppm", t - 1, e.drift_rate(t) * 1e6))
                .collect();
            log::line(&format!(
                "host {} (rank {}): drift corrected on departures from {}",
                processor_name(),
                e.rank,
                rates.join(", ")
            ));
        }
        if e.cfg.log >= LogLevel::Debug {
            let [sends, recvs, bytes_sent, bytes_recv] = e.totals();
            let [held_ns, holds, came] = e.gate_held();
            let k = &e.counters;
            log::line(&format!(
                "rank {}: {sends} sends ({bytes_sent} B), {recvs} deliveries ({bytes_recv} B), \
             {:.1} us holding {} deliveries, {came} came during the wait for them, \
             {:.1} us waiting to depart, {} probed early, {} sent split",
                e.rank,
                held_ns as f64 / 1e3,
                holds,
                k.send_wait_ns.load(Ordering::Relaxed) as f64 / 1e3,
                k.probed.load(Ordering::Relaxed),
                k.split.load(Ordering::Relaxed)
            ));
        }
        let private = PRIVATE.get().map(|p| p.0);
        if let (Some(path), Some(comm)) = (e.cfg.report.as_deref(), private) {
            write_report(e, comm, path);
        }
        crate::coll::finalize();
        e.free_kept();
        if let Some(mut comm) = private {
            // Every rank enters the library's MPI_Finalize with the shim's
            // traffic done. Without it MPICH 4.0 over UCX's TCP across the
            // test bed's two "hosts" hung in MPI_Finalize in 4 of 22 jobs
            // (`hosts 400 4000` with loggp-h1's clock drifted, as
            // mpi_hosts' drift test runs it): rank 0 in the launcher's
            // barrier, rank 1 in UCX's progress closing its endpoint; with
            // it, 0 of 22 (natively 0 of 10). MPI_Finalize is collective:
            // every rank comes here.
            crate::real::PMPI_Barrier(comm);
            PMPI_Comm_free(&mut comm);
        }
        if let Some(mut comm) = PAYLOAD.get().map(|p| p.0) {
            PMPI_Comm_free(&mut comm);
        }
    }
}

unsafe fn write_report(e: &Engine, comm: Comm, path: &str) {
    unsafe {
        let k = &e.counters;
        let [sends, recvs, bytes_sent, bytes_recv] = e.totals();
        let [held_ns, holds, _] = e.gate_held();
        const N: usize = 8;
        const NC: c_int = 8;
        let mine: [u64; N] = [
            sends,
            recvs,
            bytes_sent,
            bytes_recv,
            held_ns,
            holds,
            k.send_wait_ns.load(Ordering::Relaxed),
            k.probed.load(Ordering::Relaxed),
        ];
        let per_rank = path.contains("%r");
        let size = if per_rank {
            1
        } else {
            usize::try_from(e.size).unwrap_or(1)
        };
        let mut all = vec![0u64; N * size];
        // Gather through point-to-point on the private communicator (rank 0
        // collects); the shim's own traffic bypasses the engine.
        let mut st = Status::zeroed();
        if per_rank {
            all.copy_from_slice(&mine);
        } else if e.rank == 0 {
            all[..N].copy_from_slice(&mine);
            for r in 1..size {
                PMPI_Recv(
                    all[N * r..].as_mut_ptr().cast::<c_void>(),
                    NC,
                    e.c.uint64,
                    c_int::try_from(r).unwrap_or(0),
                    11,
                    comm,
                    &mut st,
                );
            }
        } else {
            PMPI_Send(mine.as_ptr().cast(), NC, e.c.uint64, 0, 11, comm);
            return;
        }
        let mut ranks = Vec::new();
        for r in 0..size {
            let v = &all[N * r..N * r + N];
            let r = if per_rank {
                usize::try_from(e.rank).unwrap_or(0)
            } else {
                r
            };
            ranks.push(format!(
            "{{\"rank\":{r},\"sends\":{},\"recvs\":{},\"bytes_sent\":{},\"bytes_recv\":{},\"gate_wait_ns\":{},\"gate_holds\":{},\"send_wait_ns\":{},\"probed\":{}}}",
            v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
        ));
        }
        let c = &e.cfg;
        let json = format!(
        "{{\n  \"tool\": \"loggp-shim\",\n  \"rank\": {},\n  \"mpi\": \"{}\",\n  \"mpi_version\": \"{}\",\n  \"mpi_library\": \"{}\",\n  \"shim_built_for\": \"{}\",\n  \"ranks\": {},\n  \"virtual_time\": {},\n  \"armed\": \"{}\",\n  \"idle_lanes\": {{\"send\":{},\"gate\":{},\"tiny\":{}}},\n  \"knobs\": {{\"L_ns\":{},\"o_s_ns\":{},\"o_r_ns\":{},\"g_s_ns\":{},\"g_r_ns\":{},\"G_ns_per_byte\":{},\"send_queue\":{}}},\n  \"native_transit\": {{\"base_ns\":{:.1},\"per_byte_ns\":{:.5},\"points\":[{}]}},\n  \"per_rank\": [\n    {}\n  ]\n}}\n",
        if per_rank { e.rank.to_string() } else { "null".into() },
        FLAVOUR.cli_name(),
        loaded().0,
        json_escape(loaded().1),
        abi::LIB_VERSION,
        e.size,
        c.vt_active(),
        loggp_core::config::arm_text(c.armed),
        e.idle_lanes().0,
        e.idle_lanes().1,
        e.tiny_headers(),
        c.l,
        c.o_s,
        c.o_r,
        c.g_s,
        c.g_r,
        c.g_big,
        c.send_queue,
        e.transit.base_ns,
        e.transit.per_byte_ns,
        e.transit
            .points()
            .iter()
            .map(|&(b, t)| format!("[{b},{t:.1}]"))
            .collect::<Vec<_>>()
            .join(","),
        ranks.join(",\n    ")
    );
        let path = path.replace("%r", &e.rank.to_string());
        if let Err(err) = std::fs::write(&path, json) {
            log::line(&format!(
                "LOGGP_REPORT={path:?}: cannot write the report: {err}"
            ));
        }
    }
}

/// A string as the inside of a JSON string literal.
fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
