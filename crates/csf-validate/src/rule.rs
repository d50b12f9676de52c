//! The rules, named after the spec clauses they enforce, and the violation report.

use core::fmt;

use hurray_format::limits::RankError;
use hurray_format::{Container, DeviceTag, ElementType, LayoutTag, QuantScheme};

macro_rules! rules {
    ($( $(#[$doc:meta])* $variant:ident = $id:literal, $clause:literal, $structural:literal; )*) => {
        /// A rule of the CSF spec (or of `docs/format.md`) that a tensor can break.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Rule {
            $( $(#[$doc])* $variant, )*
        }

        impl Rule {
            /// Every rule.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant,)*];

            /// A stable kebab-case identifier (used in JSON output and the corpus).
            pub const fn id(self) -> &'static str {
                match self { $( Rule::$variant => $id, )* }
            }

            /// The spec clause the rule comes from.
            pub const fn clause(self) -> &'static str {
                match self { $( Rule::$variant => $clause, )* }
            }

            /// Whether permissive mode enforces it too (`docs/format.md` § 7.4
            /// has the table). csf-layout.txt lets a reader in permissive mode
            /// skip two things: the check that `mode_order` is a permutation,
            /// and the storage invariants, whose paragraph includes the
            /// empty-tensor form (the leaf `crd` size is invariant 3's
            /// `n_{rank-1} = nnz`, so it goes with them). Every other MUST
            /// (rank, buffer table, buffer sizes, `byte_offset`, sharding,
            /// quantization devices and rules, statistics `nnz`) holds in both
            /// modes; all of those are O(rank) checks of the descriptor and of
            /// buffer lengths, so permissive validation never reads an index
            /// array and runs in constant time per level. The value-content
            /// rules of `docs/format.md` § 2.1 (bool bytes, unused bits) are
            /// skipped too: they read every value byte, and the accessors
            /// never let the unused bits change a value.
            pub const fn is_structural(self) -> bool {
                match self { $( Rule::$variant => $structural, )* }
            }
        }
    };
}

rules! {
    /// The descriptor's layout is not CSF (`found` is its tag). The container
    /// decoder rejects every other layout, so only a container made some
    /// other way could get here.
    LayoutNotCsf = "layout-not-csf", "csf-layout (layout tag 0x09)", true;
    /// `csf-core` refused to view the buffers for a reason no rule of the
    /// format covers: the tensor's rank (`found`) exceeds the capacity
    /// (`expected`) of the view the caller chose (`validate_capped::<MAX>`;
    /// never at the default capacity, 64), or a structural check added to
    /// `csf-core`'s `ViewError` after this crate was written (`found` and
    /// `expected` 0).
    ViewRefused = "view-refused", "format.md § 7.4", true;
    /// Rank is below 3: CSF is defined for rank >= 3 only.
    RankBelow3 = "rank-below-3", "csf-layout § Validity Constraints", true;
    /// Rank exceeds the cap of 64.
    RankAbove64 = "rank-above-64", "csf-layout § Validity Constraints (data model cap)", true;
    /// `mode_order` does not have `rank` entries.
    ModeOrderLength = "mode-order-length", "csf-layout § Mode Ordering", true;
    /// `mode_order` is not a permutation of `0..rank` (duplicate or out of range).
    ModeOrderNotPermutation = "mode-order-not-permutation", "csf-layout § Mode Ordering", false;
    /// A buffer the layout needs is missing (fewer than `2 * rank + 1`).
    MissingBuffer = "missing-buffer", "csf-layout § Buffer Table", true;
    /// `buffer_count` is not `2 * rank + 1` plus the quantization buffers.
    BufferCount = "buffer-count", "csf-layout § Buffer Table", true;
    /// A `pos`/`crd` buffer is not a whole number of `u64`s.
    BufferNotU64 = "buffer-not-u64", "csf-layout § Buffer Size", true;
    /// The values buffer is not `nnz * width` (or `ceil(nnz / packing_factor)`) bytes.
    ValuesSize = "values-size", "csf-layout § Buffer Size", true;
    /// `pos_L` is not `(n_{L-1} + 1) * 8` bytes (`pos_0`: 16 bytes).
    PosSize = "pos-size", "csf-layout § Buffer Size", true;
    /// `byte_offset` is not 0.
    ByteOffset = "byte-offset", "csf-layout § Buffer Size", true;
    /// A CSF tensor carries a shard descriptor.
    ShardDescriptor = "shard-descriptor", "csf-layout § Sharding", true;
    /// A quantization-parameter buffer's device tag differs from the values buffer's.
    QuantizationDevice = "quantization-device", "csf-layout § Quantization Compatibility", true;
    /// The value, scale or zero-point element type does not suit the quantization scheme.
    QuantizationTypes = "quantization-types", "format.md § 5.7.2", true;
    /// A per-channel axis outside the rank, or an axis on a scheme without one.
    QuantizationAxis = "quantization-axis", "format.md § 5.7.2", true;
    /// A block scheme without a block size (MXFP: not 32), or a block size on another scheme.
    QuantizationBlockSize = "quantization-block-size", "format.md § 5.7.2", true;
    /// A quantization-parameter buffer does not hold one element per group.
    QuantizationSize = "quantization-size", "format.md § 5.7.1", true;
    /// The statistics section's `nnz` differs from the descriptor's.
    StatisticsNnz = "statistics-nnz", "csf-layout § Interaction with Statistics Section", true;
    /// Invariant 1: `pos_L[0] = 0`.
    PosStart = "pos-start", "csf-layout § Storage Invariants 1", false;
    /// Invariant 2: `pos_L` is non-decreasing.
    PosDecreasing = "pos-decreasing", "csf-layout § Storage Invariants 2", false;
    /// Invariant 3: the terminal `pos_L` entry equals `n_L`.
    TerminalCount = "terminal-count", "csf-layout § Storage Invariants 3", false;
    /// Invariant 3: `n_{rank-1} = nnz`.
    LeafCount = "leaf-count", "csf-layout § Storage Invariants 3", false;
    /// Invariant 4: siblings are strictly increasing within each parent slice.
    SiblingOrder = "sibling-order", "csf-layout § Storage Invariants 4", false;
    /// Invariant 5: `crd_L[i] < shape[mode_order[L]]`.
    CoordinateBounds = "coordinate-bounds", "csf-layout § Storage Invariants 5", false;
    /// The empty-tensor form: with `nnz = 0`, an interior level stores a node
    /// (`pos_0` must be `[0, 0]`, every `crd_L` empty, `pos_L = [0]` for `L >= 1`).
    /// The leaf level is [`Rule::LeafCount`]'s.
    EmptyForm = "empty-form", "csf-layout § Storage Invariants (empty tensor)", false;
    /// Unused element bits are not zero: the high nibble after an odd count
    /// of 4-bit elements, or the top two bits of an FP6 byte. It applies to
    /// the values buffer and, since format.md § 5.7.1 packs them the same way,
    /// to the quantization-parameter buffers; `buffer` says which.
    ValuesPadding = "values-padding", "format.md § 2.1 (sub-byte packing, FP6)", false;
    /// A `bool` element is neither 0 nor 1 (in the values buffer or, were a
    /// scheme to allow `bool` parameters, a parameter buffer).
    BoolValue = "bool-value", "format.md § 2.1 (bool)", false;
}

/// One broken rule, with where and what.
///
/// `level`, `buffer` and `index` locate the fault (the tree level, the buffer
/// index in the table, the element index inside that buffer) when they apply;
/// `found` and `expected` are the values seen and required, whose meaning the
/// rule gives (for [`Rule::SiblingOrder`] and [`Rule::PosDecreasing`],
/// `expected` is the previous element, which `found` had to exceed).
/// [`Violation::offset`] turns `buffer` and `index` into a byte offset in the
/// file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which rule of the spec (or of `docs/format.md`) is broken.
    pub rule: Rule,
    /// The tree level, when the rule is about one.
    pub level: Option<usize>,
    /// The buffer the broken value lies in, as its row in the buffer table
    /// (0 values, `2L + 1` `pos_L`, `2L + 2` `crd_L`, then quantization
    /// parameters), when the rule is about one.
    pub buffer: Option<usize>,
    /// The element index within the buffer: a `u64` word of a `pos` or
    /// `crd` buffer, or for the value-content rules ([`Rule::ValuesPadding`],
    /// [`Rule::BoolValue`]) a byte, which for a 4-bit type holds two elements.
    /// For [`Rule::ModeOrderNotPermutation`], the position in `mode_order`.
    pub index: Option<u64>,
    /// The value the file holds where the rule is broken (a count, a
    /// coordinate, a `pos` entry, a byte: see each rule's message).
    pub found: u64,
    /// The value required (or the bound it broke).
    pub expected: u64,
}

impl Violation {
    pub(crate) const fn new(rule: Rule, found: u64, expected: u64) -> Self {
        Self { rule, level: None, buffer: None, index: None, found, expected }
    }

    pub(crate) const fn at_level(mut self, level: usize) -> Self {
        self.level = Some(level);
        self
    }

    pub(crate) const fn in_buffer(mut self, buffer: usize) -> Self {
        self.buffer = Some(buffer);
        self
    }

    pub(crate) const fn at_index(mut self, index: u64) -> Self {
        self.index = Some(index);
        self
    }

    /// The size in bytes of what `index` counts in `buffer`, for the rules
    /// about one element of a buffer; `None` for the others (a rule about a
    /// descriptor field, a buffer's size, or a position in `mode_order`).
    pub const fn element_size(&self) -> Option<u64> {
        match self.rule {
            // `pos` and `crd` are arrays of u64 words.
            Rule::PosStart
            | Rule::PosDecreasing
            | Rule::TerminalCount
            | Rule::SiblingOrder
            | Rule::CoordinateBounds => Some(8),
            // Their `index` is a byte of the values or a parameter buffer.
            Rule::ValuesPadding | Rule::BoolValue => Some(1),
            Rule::LayoutNotCsf
            | Rule::ViewRefused
            | Rule::RankBelow3
            | Rule::RankAbove64
            | Rule::ModeOrderLength
            | Rule::ModeOrderNotPermutation
            | Rule::MissingBuffer
            | Rule::BufferCount
            | Rule::BufferNotU64
            | Rule::ValuesSize
            | Rule::PosSize
            | Rule::ByteOffset
            | Rule::ShardDescriptor
            | Rule::QuantizationDevice
            | Rule::QuantizationTypes
            | Rule::QuantizationAxis
            | Rule::QuantizationBlockSize
            | Rule::QuantizationSize
            | Rule::StatisticsNnz
            | Rule::LeafCount
            | Rule::EmptyForm => None,
        }
    }

    /// Where the element the violation is about lies in the file, as a byte
    /// offset from its start: the buffer's start, `data_start` plus the
    /// table's `offset`, plus [`Violation::element_size`] times `index`.
    ///
    /// `container` must be the one validated. `None` when the violation is
    /// not about an element of a buffer, or `container` has no such buffer
    /// (a violation found by [`crate::validate_view`], which has no file).
    pub fn offset(&self, container: &Container<'_>) -> Option<u64> {
        let (Some(buffer), Some(index), Some(size)) = (self.buffer, self.index, self.element_size()) else {
            return None;
        };
        // `as u64` is lossless: usize is at most 64 bits wide.
        let start = container.buffer_range(buffer)?.start as u64;
        start.checked_add(size.checked_mul(index)?)
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (found, expected) = (self.found, self.expected);
        match self.rule {
            Rule::LayoutNotCsf => match u8::try_from(found) {
                Ok(tag) => write!(f, "the layout is {}, not {}", LayoutTag(tag), LayoutTag::CSF),
                Err(_) => write!(f, "the layout tag is {found}, not {}", LayoutTag::CSF),
            },
            Rule::ViewRefused => {
                f.write_str("csf-core cannot view the buffers as a CSF tensor")?;
                if found != 0 {
                    write!(f, ": rank {found} exceeds the view's capacity of {expected}")?;
                }
                Ok(())
            }
            // The one wording of the rank check (hurray-format's `RankError`).
            Rule::RankBelow3 => write!(f, "{}", RankError::TooSmall(usize::try_from(found).unwrap_or(0))),
            Rule::RankAbove64 => {
                write!(f, "{}", RankError::TooLarge(usize::try_from(found).unwrap_or(usize::MAX)))
            }
            Rule::ModeOrderLength => write!(f, "mode_order has {found} entries, rank is {expected}"),
            Rule::ModeOrderNotPermutation => {
                write!(f, "mode_order is not a permutation of 0..{expected}: value {found}")?;
                if let Some(i) = self.index {
                    write!(f, " at position {i} is out of range or repeated")?;
                }
                Ok(())
            }
            Rule::MissingBuffer => write!(f, "the buffer table has {found} buffers, rank needs {expected}"),
            Rule::BufferCount => write!(f, "buffer_count is {found}, expected {expected}"),
            Rule::BufferNotU64 => write!(f, "buffer length {found} is not a multiple of 8"),
            Rule::ValuesSize => write!(f, "values buffer is {found} bytes, expected {expected}"),
            Rule::PosSize => write!(f, "pos buffer has {found} elements, expected {expected} (n_(L-1) + 1)"),
            Rule::ByteOffset => write!(f, "byte_offset is {found}, must be 0"),
            Rule::ShardDescriptor => write!(f, "a CSF tensor must not carry a shard descriptor"),
            Rule::QuantizationDevice => write!(
                f,
                "quantization buffer is on device {}, the values buffer on {}",
                Named::device(found),
                Named::device(expected)
            ),
            Rule::QuantizationTypes => write!(
                f,
                "element type {} does not suit the quantization scheme {}",
                Named::element_type(found),
                Named::scheme(expected)
            ),
            Rule::QuantizationAxis => write!(f, "quantization axis is {found}, must be below {expected}"),
            Rule::QuantizationBlockSize => {
                write!(f, "quantization block_size is {found}, expected {expected}")
            }
            Rule::QuantizationSize => write!(f, "quantization buffer is {found} bytes, expected {expected}"),
            Rule::StatisticsNnz => write!(f, "statistics nnz is {found}, the descriptor's nnz is {expected}"),
            Rule::PosStart => write!(f, "pos[0] is {found}, must be 0"),
            Rule::PosDecreasing => write!(f, "pos decreases: {found} after {expected}"),
            Rule::TerminalCount => {
                write!(f, "terminal pos entry is {found}, but the level stores {expected} nodes")
            }
            Rule::LeafCount => write!(f, "the leaf level stores {found} nodes, nnz is {expected}"),
            Rule::SiblingOrder => {
                write!(f, "sibling coordinates not strictly increasing: {found} after {expected}")
            }
            Rule::CoordinateBounds => {
                write!(f, "coordinate {found} is not below the level's bound {expected}")
            }
            Rule::EmptyForm => write!(
                f,
                "nnz is 0 but the level stores {found} node(s); an empty tensor stores none \
                 (pos_0 = [0, 0], every crd_L empty, pos_L = [0] for L >= 1)"
            ),
            Rule::ValuesPadding => write!(f, "unused bits of an element byte are {found:#x}, must be 0"),
            Rule::BoolValue => write!(f, "bool element byte is {found}, must be 0 or 1"),
        }?;
        let mut sep = " (";
        if let Some(level) = self.level {
            write!(f, "{sep}level {level}")?;
            sep = ", ";
        }
        if let Some(buffer) = self.buffer {
            write!(f, "{sep}buffer {buffer}")?;
            sep = ", ";
        }
        if let Some(index) = self.index {
            write!(f, "{sep}element {index}")?;
            sep = ", ";
        }
        if sep == ", " {
            f.write_str(")")?;
        }
        write!(f, " [{}; {}]", self.rule.id(), self.rule.clause())
    }
}

impl core::error::Error for Violation {}

/// A code held in a violation's `found` or `expected`, shown by its name
/// (`f32`, `per-channel`, `cuda (1)`), or as a number when it has none.
enum Named {
    Type(ElementType),
    Scheme(QuantScheme),
    Device(DeviceTag),
    Code(u64),
}

impl Named {
    fn element_type(code: u64) -> Self {
        u8::try_from(code).ok().and_then(ElementType::from_code).map_or(Named::Code(code), Named::Type)
    }

    fn scheme(code: u64) -> Self {
        u8::try_from(code).ok().and_then(QuantScheme::from_code).map_or(Named::Code(code), Named::Scheme)
    }

    fn device(tag: u64) -> Self {
        u8::try_from(tag).map_or(Named::Code(tag), |tag| Named::Device(DeviceTag(tag)))
    }
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Named::Type(t) => write!(f, "{t}"),
            Named::Scheme(s) => write!(f, "{s}"),
            Named::Device(d) => write!(f, "{d}"),
            Named::Code(code) => write!(f, "with code {code:#04x}"),
        }
    }
}

/// A SHOULD (of the spec, or of `docs/format.md`) that the tensor does not follow. Never an error.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Warning {
    /// The statistics `sparsity_ratio` is not `1 - nnz / total_elements`
    /// (csf-layout § Interaction with Statistics Section).
    SparsityRatio {
        /// The ratio stored.
        found: f64,
        /// The ratio the shape and nnz give, computed as `docs/format.md`
        /// § 5.6 prescribes (binary64; 1.0 once the element count overflows it).
        expected: f64,
    },
    /// Interior nodes without children in a non-empty tensor
    /// (`docs/format.md` § 7.5: a writer SHOULD NOT store them). One warning
    /// per level, so that their number is bounded by the rank, not the input.
    ChildlessNodes {
        /// The level of the childless nodes (an interior level, `< rank - 1`).
        level: usize,
        /// The first childless node: its index in `crd_level`.
        first: u64,
        /// How many nodes of the level have no children.
        count: u64,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::SparsityRatio { found, expected } => write!(
                f,
                "statistics sparsity_ratio is {found}, expected 1 - nnz / total_elements = {expected} \
                 [sparsity-ratio; csf-layout § Interaction with Statistics Section (SHOULD)]"
            ),
            Warning::ChildlessNodes { level, first, count } => write!(
                f,
                "{count} interior node(s) of level {level} have no children, the first is node {first} \
                 of crd_{level} [childless-nodes; format.md § 7.5 (SHOULD NOT)]"
            ),
        }
    }
}

impl Warning {
    /// A stable kebab-case identifier.
    pub const fn id(&self) -> &'static str {
        match self {
            Warning::SparsityRatio { .. } => "sparsity-ratio",
            Warning::ChildlessNodes { .. } => "childless-nodes",
        }
    }
}
