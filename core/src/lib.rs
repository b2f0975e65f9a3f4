//! Pure core of loggp-shim.
//!
//! Nothing here knows about MPI, libc or a real clock: every function that
//! decides *when* something happens takes the current time (nanoseconds on
//! some monotonic clock) as an argument, so the rules of `DESIGN.md` §1 are
//! unit-tested with plain numbers.

pub mod clocks;
pub mod coll;
pub mod config;
pub mod dist;
pub mod fit;
pub mod handles;
pub mod idle;
pub mod lifecycle;
pub mod mpilib;
pub mod oncemap;
pub mod prtt;
pub mod reduce;
pub mod sched;
pub mod spread;
pub mod stash;
pub mod stats;
pub mod target;
pub mod tolerance;
pub mod tsc;
pub mod units;
pub mod vt;

pub use config::{Config, ConfigError, VtMode};
pub use stash::{Envelope, Pattern, Stash};
pub use vt::{Departure, RecvGate, Seen, SendSide, Transit};
