//! Robust statistics (owned by the calibrate work; see issue 3).
