//! The general path: a pruned depth-first walk emitting output COO, then
//! the build (rank 3 or more) or the entries in row-major order.

use csf_core::{CsfView, Fiber};
use hurray_format::limits::MAX_RANK;
use hurray_format::{ElementType, Packing};

use super::{code, lower_bound, Pick, Plan, SelectError, Selection, Table};
use crate::{build_owned, BuildError, Duplicates, ModeOrderPolicy, Options, OwnedCoo};

/// The general path: walk, then build or order the entries.
pub(super) fn general(view: &CsfView<'_>, plan: &Plan, parallel: bool) -> Result<Selection, SelectError> {
    let entries = plan.out_shape.len() < 3;
    let (sink, value_out, element_type) = walk(view, plan, entries)?;
    let Sink { columns, values, len, .. } = sink;
    if entries {
        return row_major(plan.out_shape.clone(), columns, values, len, element_type, parallel);
    }
    let values = match value_out {
        ValueOut::Code { .. } => crate::values::pack(element_type, values),
        _ => values,
    };
    let coo = OwnedCoo { shape: plan.out_shape.clone(), columns, element_type, values };
    Ok(Selection::Tensor(build_owned(coo, &build_options(plan, parallel))?))
}

/// How the general path builds: in the restricted mode order, duplicates an
/// error. Input in that storage order (a monotone plan's) takes
/// `build_owned`'s presorted path, which adopts the leaf column and values.
pub(super) fn build_options(plan: &Plan, parallel: bool) -> Options {
    Options {
        mode_order: ModeOrderPolicy::Explicit(plan.out_order.clone()),
        duplicates: Duplicates::Error,
        drop_zeros: false,
        parallel,
        quantize: None,
    }
}

/// The general path's walk: the output COO (for entries, or for a tensor),
/// how its values were written and their type.
pub(super) fn walk(
    view: &CsfView<'_>,
    plan: &Plan,
    entries: bool,
) -> Result<(Sink, ValueOut, ElementType), SelectError> {
    let (value_out, element_type) = ValueOut::of(view, entries);
    let sink = Sink {
        columns: vec![Vec::new(); plan.out_shape.len()],
        values: Vec::new(),
        len: 0,
        room: 0,
        width: value_out.width(),
    };
    let mut walk = Walk {
        view,
        plan,
        values: view.values().as_bytes(),
        value_out,
        last: view.rank().saturating_sub(1),
        high: [0; MAX_RANK],
        index: [0; MAX_RANK],
        out: [0; MAX_RANK],
        sink,
    };
    if !plan.empty {
        walk.visit(0, 0)?;
    }
    Ok((walk.sink, value_out, element_type))
}

/// The entries of a result of rank 0 to 2, sorted by logical index (only
/// when the walk did not emit them so) and checked for repeats.
fn row_major(
    shape: Vec<u64>,
    columns: Vec<Vec<u64>>,
    values: Vec<u8>,
    len: usize,
    element_type: ElementType,
    parallel: bool,
) -> Result<Selection, SelectError> {
    let ordered = (1..len).all(|i| key(&columns, i - 1) < key(&columns, i));
    let (columns, values) = if ordered {
        (columns, values)
    } else {
        let width = element_type.byte_width().map_or(1, usize::from);
        sorted(columns, &values, len, width, parallel)?
    };
    let coords = match <[Vec<u64>; 2]>::try_from(columns) {
        Ok([first, second]) => first.iter().zip(&second).flat_map(|(&i, &j)| [i, j]).collect(),
        // Rank 0 or 1: no column, or the one column.
        Err(mut columns) => columns.pop().unwrap_or_default(),
    };
    Ok(Selection::Entries { shape, coords, values, element_type })
}

/// Entry `i`'s coordinates in at most two columns, as a sort key.
#[inline]
fn key(columns: &[Vec<u64>], i: usize) -> (u64, u64) {
    let at = |d: usize| columns.get(d).and_then(|c| c.get(i)).copied().unwrap_or(0);
    (at(0), at(1))
}

/// The columns and values (`width` bytes each) of `len` entries in row-major
/// order; an error when two share an index (unvalidated input).
fn sorted(
    columns: Vec<Vec<u64>>,
    values: &[u8],
    len: usize,
    width: usize,
    parallel: bool,
) -> Result<(Vec<Vec<u64>>, Vec<u8>), SelectError> {
    let mut order: Vec<usize> = (0..len).collect();
    if parallel {
        use rayon::prelude::*;
        order.par_sort_unstable_by_key(|&i| key(&columns, i));
    } else {
        order.sort_unstable_by_key(|&i| key(&columns, i));
    }
    if order.windows(2).any(|w| w.first().map(|&i| key(&columns, i)) == w.last().map(|&i| key(&columns, i))) {
        return Err(SelectError::Unvalidated { what: "two stored entries share an index" });
    }
    let values = order.iter().flat_map(|&i| values.get(i * width..(i + 1) * width).unwrap_or(&[])).copied();
    let columns = columns.iter().map(|c| order.iter().map(|&i| c.get(i).copied().unwrap_or(0)).collect());
    Ok((columns.collect(), values.collect()))
}

/// How the walk writes a leaf's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ValueOut {
    /// The stored bytes, `width` each.
    Bytes(usize),
    /// The stored code of a sub-byte type, one per byte (packed again for a
    /// tensor; a `u4`'s value for entries).
    Code { bits: u8, per_byte: u8 },
    /// An `i4` code sign-extended to an `i8`.
    I4,
    /// A `bool` as 0 or 1.
    Bool,
    /// The value (dequantized, or a narrow float decoded) as an `f32`.
    F32,
}

impl ValueOut {
    /// How values are written for a tensor (`entries`: false) or for entries,
    /// and the type they then have.
    fn of(view: &CsfView<'_>, entries: bool) -> (Self, ElementType) {
        let element_type = view.element_type();
        if view.quantization().is_some() {
            return (ValueOut::F32, ElementType::F32);
        }
        match element_type.packing() {
            Packing::SubByte { bits, per_byte } => match (entries, element_type) {
                (false, _) => (ValueOut::Code { bits, per_byte }, element_type),
                (true, ElementType::U4) => (ValueOut::Code { bits, per_byte }, ElementType::U8),
                (true, ElementType::I4) => (ValueOut::I4, ElementType::I8),
                (true, _) => (ValueOut::F32, ElementType::F32),
            },
            Packing::Bytes(width) if !entries || numpy_has(element_type) => {
                (ValueOut::Bytes(usize::from(width)), element_type)
            }
            Packing::Bytes(_) if element_type == ElementType::Bool => (ValueOut::Bool, ElementType::Bool),
            Packing::Bytes(_) => (ValueOut::F32, ElementType::F32),
        }
    }

    fn width(self) -> usize {
        match self {
            ValueOut::Bytes(width) => width,
            ValueOut::F32 => 4,
            ValueOut::Code { .. } | ValueOut::I4 | ValueOut::Bool => 1,
        }
    }
}

/// Whether numpy has a dtype for the element type (besides `bool`).
fn numpy_has(element_type: ElementType) -> bool {
    use ElementType as E;
    matches!(
        element_type,
        E::I8 | E::I16 | E::I32 | E::I64 | E::U8 | E::U16 | E::U32 | E::U64 | E::F16 | E::F32 | E::F64
    )
}

/// The walk's output: one coordinate column per result dimension, the values.
pub(super) struct Sink {
    pub(super) columns: Vec<Vec<u64>>,
    pub(super) values: Vec<u8>,
    pub(super) len: usize,
    /// The entries that fit without growing.
    pub(super) room: usize,
    pub(super) width: usize,
}

impl Sink {
    /// Room for one more entry, grown by fallible reservations.
    #[inline]
    pub(super) fn make_room(&mut self) -> Result<(), SelectError> {
        if self.len < self.room {
            return Ok(());
        }
        let too_large = SelectError::TooLarge { entries: self.len as u64 };
        let more = self.len.max(1024);
        let room = self.len.checked_add(more).ok_or(too_large.clone())?;
        // Each array must fit `room` elements of its size in an isize.
        room.checked_mul(self.width.max(8)).filter(|&b| b <= isize::MAX as usize).ok_or(too_large.clone())?;
        for column in &mut self.columns {
            column.try_reserve(more).map_err(|_| too_large.clone())?;
        }
        self.values.try_reserve(more * self.width).map_err(|_| too_large)?;
        self.room = room;
        Ok(())
    }
}

/// The depth-first walk of the general path.
struct Walk<'p, 'v, 'a> {
    view: &'v CsfView<'a>,
    plan: &'p Plan,
    values: &'a [u8],
    value_out: ValueOut,
    last: usize,
    /// Per level, the first node not yet visited (see the parent module's docs).
    high: [usize; MAX_RANK],
    /// The input's logical index of the current path (for dequantization).
    index: [u64; MAX_RANK],
    /// The result's coordinates of the current path.
    out: [u64; MAX_RANK],
    sink: Sink,
}

impl Walk<'_, '_, '_> {
    /// Visits the children of node `parent` of the level above `level`.
    fn visit(&mut self, level: usize, parent: usize) -> Result<(), SelectError> {
        let (Some(lvl), Some(plan)) = (self.view.level(level), self.plan.levels.get(level)) else {
            return Ok(());
        };
        let (start, end) = lvl.children(parent);
        let high = self.high.get(level).copied().unwrap_or(end);
        let start = start.max(high);
        let end = end.max(start);
        if let Some(h) = self.high.get_mut(level) {
            *h = end;
        }
        let fiber = Fiber { start, crd: lvl.crd.slice(start, end) };
        match &plan.pick {
            Pick::Index(c) => match fiber.find(*c) {
                Some(node) => self.enter(level, node, *c, 0),
                None => Ok(()),
            },
            Pick::All(_) => self.each(level, fiber, 0, fiber.len()),
            Pick::Step { lo, hi, .. } => {
                let (a, b) = (lower_bound(fiber.crd, *lo), lower_bound(fiber.crd, hi.saturating_add(1)));
                self.each(level, fiber, a, b)
            }
            Pick::Take(table) => self.take(level, fiber, table),
        }
    }

    /// Enters the children `a..b` of `fiber` whose coordinates map (`All`, `Step`).
    fn each(&mut self, level: usize, fiber: Fiber<'_>, a: usize, b: usize) -> Result<(), SelectError> {
        let Some(plan) = self.plan.levels.get(level) else { return Ok(()) };
        for (i, c) in fiber.crd.slice(a, b).iter().enumerate() {
            if let Some(o) = plan.pick.map(c) {
                self.enter(level, fiber.start + a + i, c, o)?;
            }
        }
        Ok(())
    }

    /// Enters the children of `fiber` that `table` takes, each once per
    /// output position, by the cheaper of the two searches.
    fn take(&mut self, level: usize, fiber: Fiber<'_>, table: &Table) -> Result<(), SelectError> {
        let (Some(&lo), Some(&hi)) = (table.coords.first(), table.coords.last()) else { return Ok(()) };
        let (a, b) = (lower_bound(fiber.crd, lo), lower_bound(fiber.crd, hi.saturating_add(1)));
        let narrowed = Fiber { start: fiber.start + a, crd: fiber.crd.slice(a, b) };
        let log = |n: usize| (usize::BITS - n.leading_zeros()) as usize;
        if table.coords.len().saturating_mul(log(narrowed.len())) < narrowed.len() {
            for (i, &c) in table.coords.iter().enumerate() {
                if let Some(node) = narrowed.find(c) {
                    self.repeat(level, node, c, table.positions(i))?;
                }
            }
        } else {
            for (node, c) in narrowed.iter() {
                if let Ok(i) = table.coords.binary_search(&c) {
                    self.repeat(level, node, c, table.positions(i))?;
                }
            }
        }
        Ok(())
    }

    /// Enters `node` once per output position, the levels below seen afresh each time.
    fn repeat(&mut self, level: usize, node: usize, c: u64, positions: &[u64]) -> Result<(), SelectError> {
        if let [o] = positions {
            return self.enter(level, node, c, *o);
        }
        let saved = self.high;
        for (k, &o) in positions.iter().enumerate() {
            if k > 0 {
                self.high = saved;
            }
            self.enter(level, node, c, o)?;
        }
        Ok(())
    }

    /// Takes coordinate `c` (output coordinate `o`) at `level`, node `node`.
    #[inline]
    fn enter(&mut self, level: usize, node: usize, c: u64, o: u64) -> Result<(), SelectError> {
        if let Some(plan) = self.plan.levels.get(level) {
            if let Some(slot) = self.index.get_mut(plan.dim) {
                *slot = c;
            }
            if let Some(slot) = plan.out.and_then(|d| self.out.get_mut(d)) {
                *slot = o;
            }
        }
        if level >= self.last {
            self.emit(node)
        } else {
            self.visit(level + 1, node)
        }
    }

    /// Writes the current path's entry, whose leaf is `leaf`.
    fn emit(&mut self, leaf: usize) -> Result<(), SelectError> {
        self.sink.make_room()?;
        let missing = || SelectError::Build(BuildError::MissingValue { leaf: leaf as u64 });
        // The descriptor's nnz is authoritative: past it, no leaf has a value.
        if leaf as u64 >= self.view.nnz() {
            return Err(missing());
        }
        let values = &mut self.sink.values;
        match self.value_out {
            ValueOut::Bytes(width) => {
                let start = leaf.checked_mul(width).ok_or_else(missing)?;
                let end = start.checked_add(width).ok_or_else(missing)?;
                values.extend_from_slice(self.values.get(start..end).ok_or_else(missing)?);
            }
            ValueOut::Code { bits, per_byte } => {
                values.push(code(self.values, leaf, bits, per_byte).ok_or_else(missing)?);
            }
            ValueOut::I4 => {
                let c = code(self.values, leaf, 4, 2).ok_or_else(missing)?;
                values.push((((c << 4) as i8) >> 4) as u8);
            }
            ValueOut::Bool => values.push(u8::from(*self.values.get(leaf).ok_or_else(missing)? != 0)),
            ValueOut::F32 => {
                let index = self.index.get(..self.view.rank()).unwrap_or(&[]);
                let value = self.view.value(leaf, index).ok_or_else(missing)?;
                values.extend_from_slice(&value.to_f32().to_le_bytes());
            }
        }
        for (column, &o) in self.sink.columns.iter_mut().zip(&self.out) {
            column.push(o);
        }
        self.sink.len += 1;
        Ok(())
    }
}
