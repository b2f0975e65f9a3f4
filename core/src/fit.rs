//! Least-squares fitting and protocol-change detection (owned by the
//! calibrate work; see issue 3).
