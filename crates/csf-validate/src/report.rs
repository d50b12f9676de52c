//! Collecting every violation up to a cap (feature `alloc`).

use alloc::vec::Vec;

use hurray_format::Container;

use crate::rule::{Violation, Warning};
use crate::sink::{Sink, Stop};
use crate::Mode;

/// Every violation found (up to a cap) and every warning.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Violations, in check order (see [`crate::validate_with`]).
    pub errors: Vec<Violation>,
    /// Warnings (SHOULDs not followed).
    pub warnings: Vec<Warning>,
    /// Whether validation stopped at the cap with more left to find.
    pub truncated: bool,
}

impl Report {
    /// Whether no rule is broken. (A report truncated at a cap of 0 holds no
    /// error but is not valid: a violation was found and left out.)
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty() && !self.truncated
    }
}

struct Collect<'r> {
    report: &'r mut Report,
    cap: usize,
}

impl Sink for Collect<'_> {
    fn violation(&mut self, violation: Violation) -> Result<(), Stop> {
        if self.report.errors.len() >= self.cap {
            self.report.truncated = true;
            return Err(Stop);
        }
        self.report.errors.push(violation);
        Ok(())
    }

    fn warning(&mut self, warning: Warning) {
        self.report.warnings.push(warning);
    }
}

/// Validates `container` in `mode` and collects up to `max_errors` violations.
pub fn report(container: &Container<'_>, mode: Mode, max_errors: usize) -> Report {
    let mut report = Report::default();
    let _ = crate::validate_with(container, mode, &mut Collect { report: &mut report, cap: max_errors });
    report
}
