//! Why parts could not be joined: each error names the part (its position
//! among the pushes, from 0) and, where it applies, the level and element.

use std::convert::Infallible;

use csf_validate::Violation;
use hurray_format::{ElementType, QuantScheme};

use crate::BuildError;

/// Why parts could not be joined into one tensor.
///
/// `E` is the error of the [`ArraySink`](crate::ArraySink) the joiner writes
/// to; the in-memory [`concat`](crate::concat()) cannot fail to write, so its
/// `E` is [`Infallible`].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConcatError<E = Infallible> {
    /// [`concat`](crate::concat()) was given no parts, so there is no shape,
    /// mode order or element type to give the result. (A
    /// [`Joiner`](crate::Joiner), made with them, joins zero parts into the
    /// empty tensor.)
    #[error(
        "no parts to join: concat takes the shape, mode order and element type from the first part \
         (a Joiner made with them joins zero parts into an empty tensor)"
    )]
    NoParts,
    /// The header the joiner was made with is not a CSF header: rank outside
    /// `3..=64` or a mode order that is not a permutation, as [`build`](crate::build())
    /// reports them.
    #[error("the joined tensor's header: {0}")]
    Header(#[from] BuildError),
    /// A part's element type differs from the joined tensor's.
    #[error("part {part}: element type {found}, but the joined tensor's is {expected}")]
    ElementType {
        /// Which part, counting pushes from 0.
        part: usize,
        /// Its element type.
        found: ElementType,
        /// The joined tensor's.
        expected: ElementType,
    },
    /// A part's shape differs from the joined tensor's.
    #[error("part {part}: shape {found:?}, but the joined tensor's is {expected:?}")]
    Shape {
        /// Which part, counting pushes from 0.
        part: usize,
        /// Its shape.
        found: Vec<u64>,
        /// The joined tensor's.
        expected: Vec<u64>,
    },
    /// A part's mode order differs from the joined tensor's.
    #[error("part {part}: mode order {found:?}, but the joined tensor's is {expected:?}")]
    ModeOrder {
        /// Which part, counting pushes from 0.
        part: usize,
        /// Its mode order.
        found: Vec<u32>,
        /// The joined tensor's.
        expected: Vec<u32>,
    },
    /// A part is quantized. Parts built independently would each carry
    /// parameters fitted to their own values, which one tensor cannot hold;
    /// join unquantized parts and quantize the result.
    #[error(
        "part {part} is quantized ({scheme:?}): join unquantized parts, then quantize the joined tensor \
         (its parameters must come from all of its values)"
    )]
    Quantized {
        /// Which part, counting pushes from 0.
        part: usize,
        /// Its scheme.
        scheme: QuantScheme,
    },
    /// A part breaks a rule of the spec the join relies on (a buffer size, a
    /// storage invariant, the empty-tensor form, a value-content rule); the
    /// violation says which, at which level and element of the part.
    #[error("part {part}: {violation}")]
    Invalid {
        /// Which part, counting pushes from 0.
        part: usize,
        /// The rule broken, and where in the part.
        violation: Violation,
    },
    /// An interior node of a part has no children. The spec allows them in a
    /// non-empty tensor, but a writer should not store them (`docs/format.md`
    /// § 7.5) and [`build`](crate::build()) never does; the join refuses them
    /// because a part's first and last leaves are then not its first and last
    /// nodes, which is how it finds where the part starts and ends.
    #[error(
        "part {part}: node {node} of level {level} has no children; parts must store only paths to leaves"
    )]
    ChildlessNode {
        /// Which part, counting pushes from 0.
        part: usize,
        /// The interior level.
        level: usize,
        /// The node's index in the part's `crd_level`.
        node: u64,
    },
    /// A part's first entry does not come after the previous non-empty
    /// part's last entry in storage order: the parts are out of order, or
    /// their key ranges overlap.
    #[error(
        "part {part} starts at index {first:?}, which does not come after index {last:?}, where part \
         {previous} ends: parts must come in storage order with disjoint key ranges"
    )]
    OutOfOrder {
        /// Which part, counting pushes from 0.
        part: usize,
        /// The last non-empty part before it.
        previous: usize,
        /// The logical index of `previous`'s last entry.
        last: Vec<u64>,
        /// The logical index of `part`'s first entry.
        first: Vec<u64>,
    },
    /// A part starts with the entry the previous non-empty part ends with.
    #[error("part {part} starts with index {index:?}, where part {previous} ends: a duplicate entry")]
    Duplicate {
        /// Which part, counting pushes from 0.
        part: usize,
        /// The last non-empty part before it.
        previous: usize,
        /// The logical index both hold.
        index: Vec<u64>,
    },
    /// A node count of the joined tensor would not fit `u64` (or, for the
    /// values, the address space).
    #[error("part {part}: the joined tensor's level {level} would hold more than 2^64 nodes")]
    Overflow {
        /// Which part, counting pushes from 0.
        part: usize,
        /// The level whose count overflows.
        level: usize,
    },
    /// A push failed after writing part of its part to the sink, so the
    /// output is incomplete: the joiner refuses every later push and
    /// `finish`. (A part refused by the checks that precede writing, such as
    /// a wrong shape or an out-of-order key, leaves the joiner as it was.)
    #[error("part {part} failed after the joiner had written some of it; the output is incomplete")]
    Poisoned {
        /// The part that failed.
        part: usize,
    },
    /// The sink failed to take the output.
    #[error(transparent)]
    Sink(E),
}
