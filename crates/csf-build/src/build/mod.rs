//! The build pipeline: one sort of packed keys (the values travel with them,
//! and each sorted bucket's nodes are counted while it is in cache), then one
//! pass over the sorted keys that writes every level, in parallel chunks.
//!
//! The radix path's phases each have a module: `keyer` makes the keys,
//! `radix` sorts and tallies them, `plan` places every chunk of sorted keys
//! in the output, `fill` writes the chunks. Keys too wide for a `u128` take
//! `comparison` instead, input already in storage order `presorted`, and
//! inputs of at most 64 entries `small`.

mod comparison;
mod fill;
mod in_place;
mod keyer;
mod packed;
mod plan;
mod radix;
mod reorder;
mod small;

pub use reorder::{reorder, ReorderOptions};

use csf_core::{OwnedCsf, OwnedLevel};

use crate::distinct;
use crate::key::Layout;
use crate::order::{choose, AutoChoice};
use crate::presorted;
use crate::sort::Payload;
use crate::values::Slots;
use crate::{
    check_rank, BuildError, Built, Coo, Duplicates, Indices, ModeOrderPolicy, Options, OwnedCoo, Source,
};
use plan::Spare;
use radix::SortedTree;

/// The most entries the presorted path's scan for strays takes when the
/// build could use several threads: above, the radix sort's parallel passes
/// are faster on nearly sorted input. Input fully in storage order takes
/// the one-pass walk at any size: one thread's walk costs about what two
/// threads' sort does in wall time, and half its CPU (docs/benchmarks.md).
const PRESORTED_PARALLEL_MAX: usize = 1 << 17;

/// Builds a CSF tensor from COO input.
///
/// # Example
/// ```
/// use csf_build::{build, Coo, Duplicates, Indices, Options};
///
/// // Three entries of a [2, 3, 4] tensor, in any order, two of them at (1, 1, 2).
/// let coo = Coo::new(&[2, 3, 4], Indices::RowMajor(&[1, 1, 2, 0, 0, 1, 1, 1, 2]), &[4.0f64, 1.0, 0.5]);
/// let options = Options { duplicates: Duplicates::Sum, ..Options::default() };
/// let built = build(&coo, &options)?;
/// assert_eq!(built.removed, 1); // merged into the other (1, 1, 2)
/// let view = built.tensor.view();
/// assert_eq!((view.nnz(), view.get_f64(&[1, 1, 2])?), (2, 4.5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// A [`BuildError`] for rank outside `3..=64`, arrays of mismatched lengths,
/// an invalid explicit mode order, a coordinate outside the shape, a
/// duplicate under [`Duplicates::Error`], or a sum of an unsummable type.
pub fn build(coo: &Coo<'_>, options: &Options) -> Result<Built, BuildError> {
    build_with(coo, options, true)
}

/// Builds a CSF tensor from COO input whose arrays it may take over: the
/// same tensor as [`build`] of the same entries, in less time and memory
/// when the input is in storage order.
///
/// Input in strict storage order (for the mode order that `options`
/// chooses; no two entries at one index, no zero to drop) of an element
/// type of whole bytes other than `bool` and the FP6 types gives the
/// tensor its leaf level's coordinate array (the column of the last
/// dimension in `mode_order`) and its values without copying them: only
/// the levels above are written. Any other input is built as [`build`]
/// builds it, except that once its keys are sorted (the input is not read
/// again) the values are freed and the coordinate columns become the upper
/// levels' arrays, longest first, where they are long enough: memory
/// already touched rather than fresh pages, and a lower peak.
///
/// # Example
/// ```
/// use csf_build::{build_owned, Options, OwnedCoo};
/// use hurray_format::ElementType;
///
/// // Three entries of a [2, 3, 4] tensor, one array per dimension, in storage order.
/// let coo = OwnedCoo {
///     shape: vec![2, 3, 4],
///     columns: vec![vec![0, 0, 1], vec![0, 2, 1], vec![1, 3, 2]],
///     element_type: ElementType::F32,
///     values: [1.5f32, 2.5, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
/// };
/// let built = build_owned(coo, &Options::default())?;
/// let view = built.tensor.view();
/// assert_eq!((view.nnz(), view.get_f64(&[0, 2, 3])?), (3, 2.5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`build`].
pub fn build_owned(coo: OwnedCoo, options: &Options) -> Result<Built, BuildError> {
    let OwnedCoo { shape, mut columns, element_type, mut values } = coo;
    // `Auto` of input out of order counts over keys packed over a column.
    let chosen = match packed::auto_over_packed(&shape, &mut columns, element_type, &mut values, options)? {
        packed::Early::Built(built) => return Ok(built),
        packed::Early::Chosen(chosen) => Some(chosen),
        packed::Early::Declined => None,
    };
    let first = with_borrowed(&shape, &columns, element_type, &values, |coo| {
        let plan = Plan::new(coo, options, chosen)?;
        if plan.slots.is_input() {
            Ok(Err(plan.chosen))
        } else {
            plan.build(options, Presort::Any).map(Ok)
        }
    })?;
    // A tensor, or the mode order for the walk over the input's own arrays.
    let chosen = match first {
        Ok(built) => return Ok(built),
        Err(chosen) => chosen,
    };
    let Chosen { mode_order, auto, in_identity_order } = chosen;
    let input = presorted::OwnedInput {
        shape: &shape,
        columns: &mut columns,
        values: &mut values,
        element_type,
        mode_order: &mode_order,
        options,
    };
    match presorted::adopt(input) {
        presorted::Adoption::Built { mut levels, leaves } => {
            // The leaves are the (compacted) leaf column and values.
            let len = columns.first().map_or(0, Vec::len);
            let leaf_dim = mode_order[mode_order.len() - 1] as usize;
            if let (Some(leaf), Some(column)) = (levels.last_mut(), columns.get_mut(leaf_dim)) {
                leaf.1 = std::mem::take(column);
                presorted::cut(&mut leaf.1, leaves);
            }
            drop(columns);
            let value_bytes = element_type.values_len(leaves as u64).unwrap_or(u64::MAX);
            presorted::cut(&mut values, usize::try_from(value_bytes).unwrap_or(usize::MAX));
            let removed = (len - leaves) as u64;
            assemble(Assembly { element_type, shape, mode_order, auto, levels, values, removed }, options)
        }
        presorted::Adoption::Declined { read, kept, in_order } => {
            // The input (its first `read` entries restored as the `kept`
            // they merged into) built by the other paths, in the order
            // already chosen; entry positions and counts given as the
            // caller's. An input found out of order does not try the
            // one-pass walk again.
            let merged = read - kept;
            let presort = if in_order { Presort::Any } else { Presort::Disordered };
            let staged = with_borrowed(&shape, &columns, element_type, &values, |coo| {
                let chosen = Chosen { mode_order, auto, in_identity_order };
                Plan::new(coo, options, Some(chosen))?.stage(options, presort, true)
            });
            let built = staged.and_then(|staged| staged.finish(Owned { columns, values }, options));
            match built {
                Ok(built) => Ok(Built { removed: built.removed + merged as u64, ..built }),
                Err(BuildError::OutOfBounds { entry, dim, coord, extent }) if entry >= kept => {
                    Err(BuildError::OutOfBounds { entry: entry + merged, dim, coord, extent })
                }
                Err(other) => Err(other),
            }
        }
    }
}

/// `f` of the owned arrays as a borrowed [`Coo`].
fn with_borrowed<R>(
    shape: &[u64],
    columns: &[Vec<u64>],
    element_type: hurray_format::ElementType,
    values: &[u8],
    f: impl FnOnce(&Coo<'_>) -> R,
) -> R {
    let refs: Vec<&[u64]> = columns.iter().map(Vec::as_slice).collect();
    f(&Coo { shape, indices: Indices::Columnar(&refs), element_type, values: values.into() })
}

/// [`build`], with the shortcuts (the small-input and presorted paths)
/// allowed or not: without them, the sort alone (the tests compare the two).
pub(crate) fn build_with(coo: &Coo<'_>, options: &Options, presort: bool) -> Result<Built, BuildError> {
    let presort = if presort { Presort::Any } else { Presort::Off };
    Plan::new(coo, options, None)?.build(options, presort)
}

/// What a build knows of its input's order, for the presorted paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Presort {
    /// Nothing: every path that fits may run.
    Any,
    /// It is not in storage order (the strays may still be few).
    Disordered,
    /// The shortcuts (the small-input and presorted paths) are not to run
    /// (the tests compare the sort's output with theirs).
    Off,
}

/// A build's checked input and chosen mode order.
struct Plan<'a> {
    source: Source<'a>,
    slots: Slots<'a>,
    chosen: Chosen,
}

/// The mode order to store, and what choosing it found.
struct Chosen {
    mode_order: Vec<u32>,
    /// Auto's choice, when it made it.
    auto: Option<AutoChoice>,
    /// The input is in identity order (Auto's first scan tells; the other
    /// policies do not look).
    in_identity_order: bool,
}

impl<'a> Plan<'a> {
    /// Checks the input's rank and lengths (and, for a sum, its type) and
    /// chooses the mode order, unless it is `chosen` already.
    fn new(coo: &'a Coo<'a>, options: &Options, chosen: Option<Chosen>) -> Result<Self, BuildError> {
        let rank = coo.shape.len();
        check_rank(rank)?;
        let len = entry_count(coo.indices, rank)?;
        check_values_len(coo, len)?;
        let source = Source { shape: coo.shape, indices: coo.indices, len, packed: None };
        let slots = Slots::new(coo.element_type, &coo.values, len);
        if options.duplicates == Duplicates::Sum {
            slots.can_sum()?;
        }
        let chosen = match chosen {
            Some(chosen) => chosen,
            None => mode_order_of(&source, options)?,
        };
        Ok(Plan { source, slots, chosen })
    }

    fn build(self, options: &Options, presort: Presort) -> Result<Built, BuildError> {
        self.stage(options, presort, false)?.finish(Owned::default(), options)
    }

    /// As much of the build as reads the input: on the radix path, up to the
    /// sorted keys; on the others, the whole tree. With `owned` (the input's
    /// columns and values are the caller's to hand over, to `finish`), the
    /// radix path over `u64` keys stops before it reads anything: its keys
    /// are packed over the columns (`in_place.rs`).
    fn stage(self, options: &Options, presort: Presort, owned: bool) -> Result<Staged, BuildError> {
        let stage = build_levels(&self.source, &self.slots, &self.chosen, options, presort, owned)?;
        let Plan { source, slots, chosen: Chosen { mode_order, auto, .. } } = self;
        let (element_type, width) = (slots.element_type, slots.width);
        Ok(Staged {
            stage,
            len: source.len,
            width,
            element_type,
            shape: source.shape.to_vec(),
            mode_order,
            auto,
        })
    }
}

/// A build whose input has been read: the tree, or the sorted keys to write it from.
struct Staged {
    stage: Stage,
    /// Input entries.
    len: usize,
    /// The bytes of a value slot.
    width: usize,
    element_type: hurray_format::ElementType,
    shape: Vec<u64>,
    mode_order: Vec<u32>,
    auto: Option<AutoChoice>,
}

/// What [`build_levels`] leaves: the levels and values, or the radix path's
/// sorted keys (by key type) before the tree is written. (The sorted keys
/// are boxed: their plan and writer take about 1.3 KiB, which every move of
/// a `Stage` would copy, a good part of a small input's build.)
enum Stage {
    Written(Output),
    Sorted64(Box<SortedTree<u64>>),
    Sorted128(Box<SortedTree<u128>>),
    /// The radix path over `u64` keys, to run over the owned input.
    InPlace(Box<in_place::InPlace>),
}

/// The input arrays of `build_owned`, handed over to the build's last steps
/// (empty for a borrowed input).
#[derive(Default)]
struct Owned {
    columns: Vec<Vec<u64>>,
    values: Vec<u8>,
}

impl Staged {
    /// The tensor: on the radix path, its keys sorted over the `owned`
    /// input when `stage` chose to, its levels written into the owned
    /// columns where they fit.
    fn finish(self, owned: Owned, options: &Options) -> Result<Built, BuildError> {
        let Staged { stage, len, width, element_type, shape, mode_order, auto } = self;
        let Owned { mut columns, values } = owned;
        let (levels, values) = match stage {
            Stage::Written(output) => output,
            // Once the keys are sorted, the input is not read again: its
            // columns become the levels' arrays (fresh memory costs more).
            Stage::Sorted64(tree) => (*tree).write(Spare::new(columns), values)?,
            Stage::Sorted128(tree) => (*tree).write(Spare::new(columns), values)?,
            Stage::InPlace(job) => {
                let payload = Payload { data: &values, width };
                let settings = in_place::Settings { shape: &shape, mode_order: &mode_order, payload };
                let tree = (*job).sort(&mut columns, &settings)?;
                // The key column and those of the levels below the second
                // but the last (the second holds the sorted keys now, the
                // last the value slots); the values go over the input's.
                columns.retain(|c| c.capacity() > 0);
                tree.write(Spare::new(columns), values)?
            }
        };
        let removed = (len - values.len() / width.max(1)) as u64;
        let values = crate::values::pack(element_type, values);
        assemble(Assembly { element_type, shape, mode_order, auto, levels, values, removed }, options)
    }
}

/// A built tree's parts, before they are a tensor.
struct Assembly {
    element_type: hurray_format::ElementType,
    shape: Vec<u64>,
    mode_order: Vec<u32>,
    auto: Option<AutoChoice>,
    levels: Levels,
    /// Packed as the element type prescribes.
    values: Vec<u8>,
    /// Input entries merged or dropped.
    removed: u64,
}

/// The tensor of built parts, quantized when asked.
fn assemble(parts: Assembly, options: &Options) -> Result<Built, BuildError> {
    let Assembly { element_type, shape, mode_order, auto, levels, values, removed } = parts;
    let nnz = levels.last().map_or(0, |(_, crd)| crd.len()) as u64;
    let levels = levels.into_iter().map(|(pos, crd)| OwnedLevel { pos, crd }).collect();
    let tensor = OwnedCsf::builder(element_type, shape)
        .mode_order(mode_order)
        .nnz(nnz)
        .levels(levels)
        .values(values)
        .build()?;
    let tensor = match options.quantize {
        Some(spec) => crate::quantize(tensor, spec)?,
        None => tensor,
    };
    debug_assert!(
        csf_validate::validate_view(tensor.view()).is_ok(),
        "the builder broke a storage invariant: {:?}",
        csf_validate::validate_view(tensor.view()).err()
    );
    // Auto estimated the size from all input entries; report what is stored
    // (duplicates merged and zeros dropped make it smaller).
    let auto = auto.map(|choice| {
        choice.settle(tensor.view().levels().iter().map(|l| (l.pos.len() + l.crd.len()) as u64 * 8).sum())
    });
    Ok(Built { tensor, auto, removed })
}

/// A values buffer of other than `len` values is refused before anything reads it.
fn check_values_len(coo: &Coo<'_>, len: usize) -> Result<(), BuildError> {
    let want = coo.element_type.values_len(len as u64).unwrap_or(u64::MAX);
    if coo.values.len() as u64 != want {
        return Err(BuildError::LengthMismatch {
            what: "values (bytes)",
            found: coo.values.len() as u64,
            expected: want,
        });
    }
    Ok(())
}

/// The mode order to store, and Auto's choice when it made it. Auto reads
/// every coordinate, so it checks them against the shape first.
fn mode_order_of(source: &Source<'_>, options: &Options) -> Result<Chosen, BuildError> {
    let rank = source.shape.len();
    let given = |mode_order| Chosen { mode_order, auto: None, in_identity_order: false };
    Ok(match &options.mode_order {
        ModeOrderPolicy::Identity => given((0..rank as u32).collect()),
        ModeOrderPolicy::Explicit(order) => {
            check_permutation(order, rank)?;
            given(order.clone())
        }
        ModeOrderPolicy::Auto => {
            // The bounds are checked as the singles are counted (one read
            // of the input, which `Auto` needs anyway).
            let singles = match distinct::checked_singles(source, options.parallel, true) {
                Ok(singles) => singles,
                Err(from) => {
                    first_outside(source, from)?;
                    Vec::new()
                }
            };
            let (choice, in_identity_order) = choose(source, options.parallel, &singles);
            Chosen { mode_order: choice.mode_order.clone(), auto: Some(choice), in_identity_order }
        }
    })
}

/// The levels and values in `mode_order`, by the cheapest path that can take
/// the input: a sort of packed keys for a small input, the presorted walk,
/// the radix sort on the narrowest key type that holds a key (which stops
/// at the sorted keys: the caller writes the tree), or the comparison sort.
fn build_levels(
    source: &Source<'_>,
    slots: &Slots<'_>,
    chosen: &Chosen,
    options: &Options,
    presort: Presort,
    owned: bool,
) -> Result<Stage, BuildError> {
    let mode_order = &chosen.mode_order[..];
    if presort != Presort::Off {
        if let Some(output) = small::try_build(source, slots, mode_order, options) {
            return output.map(Stage::Written);
        }
    }
    let extents: Vec<u64> = mode_order.iter().map(|&d| source.shape[d as usize]).collect();
    let layout = Layout::new(&extents, source.len);
    // The presorted path is one thread's walk: with more threads the radix
    // sort's parallel passes win on large inputs that are only nearly sorted.
    let one_thread = !options.parallel || rayon::current_num_threads() == 1;
    let paths = presorted::Paths {
        one_pass: presort != Presort::Off && presort != Presort::Disordered,
        strays: presort != Presort::Off && (one_thread || source.len <= PRESORTED_PARALLEL_MAX),
    };
    if paths.one_pass || paths.strays {
        let input = presorted::Input { source, slots, mode_order, options };
        if let Some(output) = presorted::try_build(&input, paths)? {
            return Ok(Stage::Written(output));
        }
    }
    let ordered = match identity_suffix(mode_order, &layout) {
        Some(bit) if chosen.in_identity_order && presort != Presort::Off => bit,
        _ => 0,
    };
    // Owned columns take the keys packed over them: every entry is keyed
    // (no zeros dropped) from its input bytes (no slots made for the sort).
    let columnar = matches!(source.indices, Indices::Columnar(_));
    let job = BuildJob { source, slots, mode_order, layout, ordered, options };
    if owned && columnar && layout.total_bits() <= 64 && !options.drop_zeros && slots.is_input() {
        let packed = None;
        return Ok(Stage::InPlace(Box::new(in_place::InPlace { writer: job.writer(), ordered, packed })));
    }
    let sorted = match layout.total_bits() {
        0..=64 => job.sort_tree::<u64>()?.map(|tree| Stage::Sorted64(Box::new(tree))),
        65..=128 => job.sort_tree::<u128>()?.map(|tree| Stage::Sorted128(Box::new(tree))),
        _ => None,
    };
    match sorted {
        Some(stage) => Ok(stage),
        None => job.run_by_comparison().map(Stage::Written),
    }
}

/// The key bits that need no sorting if the input is in identity order (as
/// files are written): such input is in storage order among the entries
/// that share the levels above the mode order's last run of increasing
/// dimensions (that run's order is the identity's), so a stable sort by
/// those levels alone puts it in storage order. Those levels' bits are the
/// key's from the returned bit up. `None` for the identity order itself
/// (the presorted walk builds sorted input in it).
///
/// Only `Auto` knows the input's order for free (its first scan). A scan of
/// its own cost more than the shorter bucket sorts saved on 10M entries,
/// and left 3% on 100k (docs/benchmarks-history.md, "Auto on input in identity order").
fn identity_suffix(mode_order: &[u32], layout: &Layout) -> Option<u32> {
    let rank = mode_order.len();
    let run = (1..rank).rev().find(|&l| mode_order[l - 1] > mode_order[l])?;
    Some(layout.shift[run] + layout.bits[run])
}

pub(crate) fn entry_count(indices: Indices<'_>, rank: usize) -> Result<usize, BuildError> {
    match indices {
        Indices::RowMajor(flat) => {
            if flat.len() % rank != 0 {
                let expected = (flat.len() / rank * rank) as u64;
                return Err(BuildError::LengthMismatch {
                    what: "row-major indices",
                    found: flat.len() as u64,
                    expected,
                });
            }
            Ok(flat.len() / rank)
        }
        Indices::Columnar(cols) => {
            if cols.len() != rank {
                return Err(BuildError::LengthMismatch {
                    what: "index columns",
                    found: cols.len() as u64,
                    expected: rank as u64,
                });
            }
            let len = cols.first().map_or(0, |c| c.len());
            if let Some(bad) = cols.iter().find(|c| c.len() != len) {
                return Err(BuildError::LengthMismatch {
                    what: "index column",
                    found: bad.len() as u64,
                    expected: len as u64,
                });
            }
            Ok(len)
        }
    }
}

pub(crate) fn check_permutation(order: &[u32], rank: usize) -> Result<(), BuildError> {
    if order.len() == rank && hurray_format::limits::permutation_faults(order).next().is_none() {
        Ok(())
    } else {
        Err(BuildError::BadModeOrder { order: order.to_vec(), rank })
    }
}

/// The first entry outside the shape, in input order.
fn check_bounds(source: &Source<'_>) -> Result<(), BuildError> {
    match distinct::checked_singles(source, false, false) {
        Ok(_) => Ok(()),
        Err(from) => first_outside(source, from),
    }
}

/// The first coordinate outside the shape, in entry then dimension order,
/// searched from `from` (no entry before it has one; the block check that
/// gave `from` found one at or after it).
fn first_outside(source: &Source<'_>, from: usize) -> Result<(), BuildError> {
    for entry in from..source.len {
        for (dim, &extent) in source.shape.iter().enumerate() {
            let coord = source.coord(entry, dim);
            if coord >= extent {
                return Err(BuildError::OutOfBounds { entry, dim, coord, extent });
            }
        }
    }
    Ok(())
}

use presorted::Levels;
/// Levels, and the values in leaf order as slots (see [`Slots`]).
type Output = (Levels, Vec<u8>);

/// One in-memory COO -> CSF build: its input and settings, as the radix and
/// comparison paths read them.
struct BuildJob<'j> {
    source: &'j Source<'j>,
    slots: &'j Slots<'j>,
    mode_order: &'j [u32],
    layout: Layout,
    /// The key bits below this one are in storage order already where the
    /// bits above are equal (`identity_suffix` of input in identity order):
    /// the sort skips them. 0 otherwise.
    ordered: u32,
    options: &'j Options,
}

impl BuildJob<'_> {
    fn keep(&self, entry: usize) -> bool {
        !self.options.drop_zeros || !self.slots.is_zero(entry)
    }
}

#[cfg(test)]
mod tests;
