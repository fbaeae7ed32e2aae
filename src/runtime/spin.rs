//! Waiting briefly for something that usually happens within microseconds,
//! without sleeping: a sleeping thread costs a wake-up (on a virtual machine, an
//! interrupt across processors) to get back.

use std::time::{Duration, Instant};

/// How often a spinning thread offers its processor to others.
const YIELD_EVERY: Duration = Duration::from_micros(2);

/// Calls `done` until it returns true or `limit` has passed, offering the
/// processor to other threads every couple of microseconds. Returns whether
/// `done` returned true.
pub(crate) fn spin_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    let mut last_yield = started;
    loop {
        if done() {
            return true;
        }
        let now = Instant::now();
        if now - started >= limit {
            return false;
        }
        if now - last_yield >= YIELD_EVERY {
            std::thread::yield_now();
            last_yield = now;
        } else {
            std::hint::spin_loop();
        }
    }
}
