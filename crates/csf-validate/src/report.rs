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
///
/// # Example
/// ```
/// # fn spec_example() -> Vec<u8> {
/// #     let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
/// #     let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
/// #     let arrays = [values, le(&[0, 2]), le(&[0, 1]), le(&[0, 2, 3]), le(&[0, 2, 1]), le(&[0, 1, 2, 4]), le(&[1, 3, 0, 2])];
/// #     let buffers: Vec<&[u8]> = arrays.iter().map(Vec::as_slice).collect();
/// #     let d = hurray_format::Descriptor::csf(hurray_format::ElementType::F32, &[2, 3, 4], &[0, 1, 2], 4).unwrap();
/// #     hurray_format::encode_to_vec(&d, &buffers).unwrap()
/// # }
/// use csf_validate::{report, Mode, Rule};
///
/// // The spec's worked example with two leaf coordinates out of the shape.
/// let mut bytes = spec_example();
/// let crd_2 = hurray_format::Container::decode(&bytes)?.buffer_range(6).unwrap();
/// bytes[crd_2.start..crd_2.start + 8].copy_from_slice(&9u64.to_le_bytes());
/// bytes[crd_2.start + 8..crd_2.start + 16].copy_from_slice(&8u64.to_le_bytes());
/// let container = hurray_format::Container::decode(&bytes)?;
/// let found = report(&container, Mode::Strict, 10);
/// assert!(!found.is_valid());
/// assert_eq!(found.errors.len(), 2, "{:?}", found.errors);
/// assert!(found.errors.iter().all(|v| v.rule == Rule::CoordinateBounds && v.level == Some(2)));
/// // Capped: the first violation only, and the report says it stopped early.
/// let first = report(&container, Mode::Strict, 1);
/// assert_eq!((first.errors.len(), first.truncated), (1, true));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn report(container: &Container<'_>, mode: Mode, max_errors: usize) -> Report {
    let mut report = Report::default();
    let _ = crate::validate_with(container, mode, &mut Collect { report: &mut report, cap: max_errors });
    report
}
