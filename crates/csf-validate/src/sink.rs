//! Where violations go: the first one (fail-fast), or all of them up to a cap.

use crate::rule::{Violation, Warning};

/// Returned by a [`Sink`] that wants no more violations; validation stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop;

/// Receives violations and warnings as validation finds them, in check order
/// (see [`crate::validate_with`]).
///
/// Implement it to collect violations without an allocator (a fixed array,
/// a counter, a log line each).
pub trait Sink {
    /// A broken rule. Return `Err(Stop)` to end validation.
    ///
    /// # Errors
    /// `Stop` when the sink wants no more.
    fn violation(&mut self, violation: Violation) -> Result<(), Stop>;

    /// A SHOULD not followed. Never stops validation.
    fn warning(&mut self, warning: Warning) {
        let _ = warning;
    }
}

/// Keeps the first violation and stops.
#[derive(Debug, Default)]
pub(crate) struct FailFast(pub(crate) Option<Violation>);

impl Sink for FailFast {
    fn violation(&mut self, violation: Violation) -> Result<(), Stop> {
        self.0 = Some(violation);
        Err(Stop)
    }
}
