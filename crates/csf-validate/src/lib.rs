#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)
)]

#[cfg(feature = "alloc")]
extern crate alloc;

mod contents;
mod invariants;
mod level;
#[cfg(feature = "parallel")]
mod parallel;
#[cfg(feature = "alloc")]
mod report;
mod rule;
mod sink;
mod structure;

use core::ops::Deref;

use hurray_format::limits::MAX_RANK;
use hurray_format::{Container, DecodeError};

use csf_core::CsfView;

#[cfg(feature = "alloc")]
pub use report::{report, Report};
pub use rule::{Rule, Violation, Warning};
pub use sink::{Sink, Stop};

/// How much to check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Every MUST of the CSF spec and of `docs/format.md` (the default).
    #[default]
    Strict,
    /// Skips what csf-layout.txt lets a permissive reader skip, the
    /// `mode_order` permutation check and the storage invariants with the
    /// empty-tensor form (the leaf `crd` size among them, as invariant 3), and
    /// the value-content rules of `docs/format.md` § 2.1: the rules whose
    /// [`Rule::is_structural`] is false (`docs/format.md` § 7.4 gives each
    /// rule's mode and the reason). What remains is O(rank) and reads no index
    /// array: trusted data at full speed. For the same reason it gives no
    /// [`Warning::ChildlessNodes`]. The accessors of `csf-core` stay total on
    /// whatever it lets through.
    Permissive,
}

/// A CSF tensor that passed strict validation.
///
/// Holding one means every rule of the spec holds, so lookups and iteration
/// give the spec's answers. It dereferences to its [`CsfView`], of the
/// same capacity `MAX` (64 by default; [`validate_capped`] makes a smaller
/// one, see `csf_core::CsfView`'s capacity).
#[derive(Clone, Copy, Debug)]
pub struct ValidCsf<'a, const MAX: usize = MAX_RANK> {
    view: CsfView<'a, MAX>,
}

impl<'a, const MAX: usize> ValidCsf<'a, MAX> {
    /// Wraps a view the caller already knows to be valid (written by this
    /// crate family a moment ago, say) without checking it. This is not
    /// `unsafe`: a wrong claim gives wrong answers, never undefined behaviour,
    /// because `csf-core`'s accessors are total.
    pub fn assume_valid(view: CsfView<'a, MAX>) -> Self {
        Self { view }
    }

    /// The tensor's view, borrowed (the proof of validity is kept).
    pub fn view(&self) -> &CsfView<'a, MAX> {
        &self.view
    }

    /// The view, giving up the proof of validity.
    pub fn into_view(self) -> CsfView<'a, MAX> {
        self.view
    }
}

impl<'a, const MAX: usize> Deref for ValidCsf<'a, MAX> {
    type Target = CsfView<'a, MAX>;
    fn deref(&self) -> &CsfView<'a, MAX> {
        &self.view
    }
}

/// Strictly validates a decoded container, stopping at the first violation.
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
/// // `spec_example()` is the spec's worked example as a file: shape [2, 3, 4], f32.
/// let bytes = spec_example();
/// let container = hurray_format::Container::decode(&bytes)?;
/// let tensor: csf_validate::ValidCsf<'_> = csf_validate::validate(&container)?;
/// assert_eq!(tensor.get_f64(&[1, 1, 2])?, 4.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// The first [`Violation`] in check order (see [`validate_with`]).
#[inline]
pub fn validate<'a>(container: &Container<'a>) -> Result<ValidCsf<'a>, Violation> {
    validate_capped(container)
}

/// [`validate`] into a view of capacity `MAX` (`validate_capped::<8>`), for
/// a microcontroller whose tensors' ranks are known: its view, and the
/// cursors and walks made from it, are sized by `MAX` rather than by the
/// data model's cap of 64 (see `csf_core::CsfView`'s capacity).
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
/// let bytes = spec_example(); // rank 3
/// let container = hurray_format::Container::decode(&bytes)?;
/// let tensor = csf_validate::validate_capped::<4>(&container)?;
/// assert_eq!(tensor.get_f64(&[1, 1, 2])?, 4.0);
/// // Its view is sized by the capacity, not by the data model's 64:
/// assert!(core::mem::size_of_val(&tensor) < core::mem::size_of::<csf_validate::ValidCsf<'_>>() / 8);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`validate`]; a rank above `MAX` (but within the format's 64) is
/// [`Rule::ViewRefused`] with the rank as `found` and `MAX` as `expected`.
// Out of line, like `Container::decode` and `CsfView::from_container`: once
// per file. (Inlined, the result and the caller's copy of it were both in
// the caller's frame: 1.9 KiB more stack on a 32-bit target.)
#[inline(never)]
pub fn validate_capped<'a, const MAX: usize>(
    container: &Container<'a>,
) -> Result<ValidCsf<'a, MAX>, Violation> {
    // The result is the local returned, with the view read into it in
    // place: built in the caller's slot, not here and then copied there.
    let mut out = Ok(ValidCsf { view: CsfView::empty_capped() });
    if let Ok(valid) = &mut out {
        if let Some(v) = first_violation(container, &mut valid.view, Mode::Strict) {
            out = Err(v);
        }
    }
    out
}

/// Reads `container` into `view` and checks it in `mode`, up to the first
/// violation. Out of line: once per file, and its frames are not the caller's.
#[inline(never)]
fn first_violation<'a, const MAX: usize>(
    container: &Container<'a>,
    view: &mut CsfView<'a, MAX>,
    mode: Mode,
) -> Option<Violation> {
    let mut sink = sink::FailFast::default();
    match view.read_container(container) {
        Ok(()) => {
            // `FailFast` drops warnings: they are not worked out.
            let _ = structure::check_rules(container, view, mode, structure::Warnings::Drop, &mut sink);
            sink.0
        }
        Err(e) => Some(structure::structural(e)),
    }
}

/// Checks only the structural rules and returns the view, for trusted data.
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
/// use csf_validate::Rule;
///
/// // The spec's example with `mode_order` [0, 0, 2]: not a permutation, which
/// // only strict validation checks.
/// let bytes = spec_example();
/// let container = hurray_format::Container::decode(&bytes)?;
/// let mut descriptor = container.descriptor();
/// descriptor.mode_order = hurray_format::ModeOrder::from_slice(&[0, 0, 2]).unwrap();
/// let buffers: Vec<&[u8]> = (0..7).map(|b| container.buffer(b).unwrap()).collect();
/// let bytes = hurray_format::encode_to_vec(&descriptor, &buffers)?;
/// let container = hurray_format::Container::decode(&bytes)?;
/// assert_eq!(csf_validate::validate(&container).unwrap_err().rule, Rule::ModeOrderNotPermutation);
/// let view = csf_validate::validate_permissive(&container)?;
/// assert_eq!(view.nnz(), 4); // and every accessor stays total on it
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// The structural [`Violation`] that makes a view impossible.
#[inline]
pub fn validate_permissive<'a>(container: &Container<'a>) -> Result<CsfView<'a>, Violation> {
    validate_permissive_capped(container)
}

/// [`validate_permissive`] into a view of capacity `MAX`, as
/// [`validate_capped`] is [`validate`] into one.
///
/// # Errors
/// As [`validate_permissive`], and [`Rule::ViewRefused`] for a rank above
/// `MAX` (see [`validate_capped`]).
#[inline(never)]
pub fn validate_permissive_capped<'a, const MAX: usize>(
    container: &Container<'a>,
) -> Result<CsfView<'a, MAX>, Violation> {
    // As `validate`: the view read in place into the result.
    let mut out = Ok(CsfView::empty_capped());
    if let Ok(view) = &mut out {
        if let Some(v) = first_violation(container, view, Mode::Permissive) {
            out = Err(v);
        }
    }
    out
}

/// Strictly validates a view built from parts (no descriptor): `mode_order`,
/// the quantization attached with `CsfView::with_quantization`, if any
/// (`docs/format.md` § 5.7: types, axis, block size, parameter sizes), the
/// level and values sizes, every storage invariant with the empty-tensor
/// form, and the contents of the values and parameter buffers.
///
/// # Errors
/// The first [`Violation`].
pub fn validate_view<const MAX: usize>(view: CsfView<'_, MAX>) -> Result<ValidCsf<'_, MAX>, Violation> {
    let mut sink = sink::FailFast::default();
    let _ = check_view_rules(&view, &mut sink);
    match sink.0 {
        None => Ok(ValidCsf { view }),
        Some(v) => Err(v),
    }
}

fn check_view_rules<const MAX: usize>(view: &CsfView<'_, MAX>, sink: &mut dyn Sink) -> Result<(), Stop> {
    structure::check_mode_order(view.mode_order(), sink)?;
    if let Some(q) = view.quantization() {
        structure::check_quantization(&structure::QuantFields::from_view(view, q), sink)?;
    }
    invariants::check_sizes(view, sink)?;
    invariants::check_invariants(view, sink)
}

/// Validates `container` in `mode`, sending every violation and warning to
/// `sink` until it returns [`Stop`]. Returns the view when the structural
/// rules hold (even if other violations were reported).
///
/// Check order: the `mode_order` permutation (strict), the descriptor rules
/// (buffer table, quantization, `byte_offset`, shard, statistics), the buffer
/// sizes, then the storage invariants level by level (within a level in
/// element order), then the empty-tensor form, then the value contents.
pub fn validate_with<'a>(container: &Container<'a>, mode: Mode, sink: &mut dyn Sink) -> Option<CsfView<'a>> {
    let mut view = None;
    let _ = structure::check_container(container, mode, sink, &mut view);
    view
}

/// Either way a byte string can fail to be a valid CSF tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The container framing is broken.
    #[error("{0}")]
    Decode(#[from] DecodeError),
    /// The container is sound but the tensor breaks a rule. The message
    /// opens with the byte, when there is one (`byte 392: sibling ...`).
    #[error("{}{violation}", at(.offset))]
    Invalid {
        /// The first rule broken, in check order.
        #[source]
        violation: Violation,
        /// Where, as a byte offset from the start of the input: the
        /// violation's [`Violation::offset`] in the decoded container.
        offset: Option<u64>,
    },
}

/// The `byte N: ` that opens a message about byte `N`, or nothing.
fn at(offset: &Option<u64>) -> impl core::fmt::Display {
    struct At(Option<u64>);
    impl core::fmt::Display for At {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            match self.0 {
                Some(offset) => write!(f, "byte {offset}: "),
                None => Ok(()),
            }
        }
    }
    At(*offset)
}

/// Decodes `bytes` and validates the tensor strictly, returning the
/// [`ValidCsf`] that proves it: [`validate`] on the decoded container.
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
/// let bytes = spec_example(); // the spec's worked example as a file
/// let tensor = csf_validate::read(&bytes)?;
/// assert_eq!(tensor.get_f64(&[0, 2, 3])?, 2.0);
/// // One byte short: a decode error, with where it happened.
/// let err = csf_validate::read(&bytes[..bytes.len() - 1]).unwrap_err();
/// assert!(matches!(err, csf_validate::Error::Decode(_)), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Decode`] when the framing is broken, or [`Error::Invalid`] with
/// the first violation and, when it is about an element of a buffer, its
/// byte offset in `bytes`.
pub fn read(bytes: &[u8]) -> Result<ValidCsf<'_>, Error> {
    let container = Container::decode(bytes)?;
    validate(&container).map_err(|violation| invalid(&container, violation))
}

/// Decodes `bytes` and checks only the structural rules, for trusted data:
/// [`validate_permissive`] on the decoded container. The view's accessors
/// stay total on whatever it lets through.
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
/// let bytes = spec_example(); // the spec's worked example as a file
/// let view = csf_validate::read_permissive(&bytes)?;
/// assert_eq!(view.get_f64(&[1, 1, 2])?, 4.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`read`], for the structural rules only.
pub fn read_permissive(bytes: &[u8]) -> Result<CsfView<'_>, Error> {
    let container = Container::decode(bytes)?;
    validate_permissive(&container).map_err(|violation| invalid(&container, violation))
}

/// `violation` of `container`, with the byte of the input it is about.
fn invalid(container: &Container<'_>, violation: Violation) -> Error {
    Error::Invalid { offset: violation.offset(container), violation }
}
