//! One Parquet column as `convert` sees it: what its type means (an
//! integer of some width and signedness, a float, a boolean, or something
//! it refuses), and a batch of its rows decoded into coordinates or values.

use parquet::basic::{ConvertedType, LogicalType, Type as Physical};
use parquet::column::reader::ColumnReader;
use parquet::data_type::FixedLenByteArray;
use parquet::errors::ParquetError;
use parquet::schema::types::ColumnDescriptor;

use super::value::FromParquet;

/// What a column holds, as far as `convert` is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// INT32 or INT64 holding integers of `bits` bits (8, 16, 32 or 64;
    /// unannotated: signed, the physical width).
    Int { bits: u8, signed: bool },
    /// BOOLEAN.
    Bool,
    /// FLOAT.
    Float,
    /// DOUBLE.
    Double,
    /// FIXED_LEN_BYTE_ARRAY(2) annotated FLOAT16.
    Float16,
    /// Anything else (strings, decimals, dates and times, INT96, repeated
    /// fields): refused.
    Other,
}

/// A leaf column of the file's schema.
#[derive(Clone, Debug)]
pub struct Column {
    /// Its index among the schema's leaves (the row groups' column chunks).
    pub leaf: usize,
    /// Its dotted path (the name, for a top-level column).
    pub name: String,
    pub kind: Kind,
    /// Its type as Parquet names it, for messages: `INT64`, `INT32 (UINT_8)`.
    pub shown: String,
    /// The definition level of a present value (0: the column cannot be null).
    pub max_def: i16,
}

impl Column {
    pub fn new(leaf: usize, descr: &ColumnDescriptor) -> Self {
        Column {
            leaf,
            name: descr.path().string(),
            kind: kind(descr),
            shown: shown(descr),
            max_def: descr.max_def_level(),
        }
    }
}

fn kind(descr: &ColumnDescriptor) -> Kind {
    if descr.max_rep_level() > 0 {
        return Kind::Other;
    }
    let plain = descr.logical_type_ref().is_none() && descr.converted_type() == ConvertedType::NONE;
    match descr.physical_type() {
        Physical::INT32 => int_kind(descr, 32),
        Physical::INT64 => int_kind(descr, 64),
        Physical::BOOLEAN if plain => Kind::Bool,
        Physical::FLOAT if plain => Kind::Float,
        Physical::DOUBLE if plain => Kind::Double,
        Physical::FIXED_LEN_BYTE_ARRAY
            if descr.type_length() == 2 && matches!(descr.logical_type_ref(), Some(LogicalType::Float16)) =>
        {
            Kind::Float16
        }
        _ => Kind::Other,
    }
}

/// An INT32 or INT64 column's integers: from its logical type, else its
/// converted type, else signed of the physical width. A width wider than
/// the physical type, or any other annotation (a date, a decimal), is not
/// an integer column.
fn int_kind(descr: &ColumnDescriptor, physical: u8) -> Kind {
    let (bits, signed) = match descr.logical_type_ref() {
        Some(LogicalType::Integer(int)) => (int.bit_width, int.is_signed),
        Some(_) => return Kind::Other,
        None => match descr.converted_type() {
            ConvertedType::NONE => (physical as i8, true),
            ConvertedType::INT_8 => (8, true),
            ConvertedType::INT_16 => (16, true),
            ConvertedType::INT_32 => (32, true),
            ConvertedType::INT_64 => (64, true),
            ConvertedType::UINT_8 => (8, false),
            ConvertedType::UINT_16 => (16, false),
            ConvertedType::UINT_32 => (32, false),
            ConvertedType::UINT_64 => (64, false),
            _ => return Kind::Other,
        },
    };
    match u8::try_from(bits) {
        Ok(bits @ (8 | 16 | 32 | 64)) if bits <= physical => Kind::Int { bits, signed },
        _ => Kind::Other,
    }
}

fn shown(descr: &ColumnDescriptor) -> String {
    let physical = descr.physical_type().to_string();
    let annotation = match descr.logical_type_ref() {
        Some(LogicalType::Integer(int)) => {
            Some(format!("INT({}, {})", int.bit_width, if int.is_signed { "signed" } else { "unsigned" }))
        }
        Some(LogicalType::Float16) => Some("FLOAT16".to_owned()),
        Some(LogicalType::String) => Some("STRING".to_owned()),
        // The variant's name: `Decimal`, `Timestamp`, `Date`...
        Some(other) => format!("{other:?}").split([' ', '(', '{']).next().map(str::to_uppercase),
        None if descr.converted_type() != ConvertedType::NONE => Some(descr.converted_type().to_string()),
        None => None,
    };
    let repeated = if descr.max_rep_level() > 0 { ", repeated" } else { "" };
    match annotation {
        Some(a) => format!("{physical} ({a}{repeated})"),
        None if repeated.is_empty() => physical,
        None => format!("{physical} (repeated)"),
    }
}

/// Buffers reused from batch to batch: the definition levels and the
/// decoded values of one column at a time.
#[derive(Default)]
pub struct Scratch {
    defs: Vec<i16>,
    i32s: Vec<i32>,
    i64s: Vec<i64>,
    f32s: Vec<f32>,
    f64s: Vec<f64>,
    bools: Vec<bool>,
    fixed: Vec<FixedLenByteArray>,
}

/// One batch of a column's present values, borrowed from the scratch.
pub enum Decoded<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    Bool(&'a [bool]),
    Fixed(&'a [FixedLenByteArray]),
}

impl Decoded<'_> {
    fn len(&self) -> usize {
        match self {
            Decoded::I32(v) => v.len(),
            Decoded::I64(v) => v.len(),
            Decoded::F32(v) => v.len(),
            Decoded::F64(v) => v.len(),
            Decoded::Bool(v) => v.len(),
            Decoded::Fixed(v) => v.len(),
        }
    }
}

/// What reading a batch of a column found.
pub enum Batch<'a> {
    /// Every row of the batch, present.
    Full(Decoded<'a>),
    /// The column ended after this many rows of the batch.
    Short(usize),
    /// The row at this position of the batch is null.
    Null(usize),
}

/// Reads the next `rows` rows of `reader` (a column that is not repeated).
pub fn read<'a>(
    reader: &mut ColumnReader,
    rows: usize,
    max_def: i16,
    s: &'a mut Scratch,
) -> Result<Batch<'a>, ParquetError> {
    s.defs.clear();
    let defs = Some(&mut s.defs);
    macro_rules! typed {
        ($r:expr, $buffer:ident, $variant:ident) => {{
            s.$buffer.clear();
            let (records, _, _) = $r.read_records(rows, defs, None, &mut s.$buffer)?;
            (records, Decoded::$variant(&s.$buffer))
        }};
    }
    let (records, decoded) = match reader {
        ColumnReader::Int32ColumnReader(r) => typed!(r, i32s, I32),
        ColumnReader::Int64ColumnReader(r) => typed!(r, i64s, I64),
        ColumnReader::FloatColumnReader(r) => typed!(r, f32s, F32),
        ColumnReader::DoubleColumnReader(r) => typed!(r, f64s, F64),
        ColumnReader::BoolColumnReader(r) => typed!(r, bools, Bool),
        ColumnReader::FixedLenByteArrayColumnReader(r) => typed!(r, fixed, Fixed),
        // Never selected (their kind is `Other`).
        ColumnReader::Int96ColumnReader(_) | ColumnReader::ByteArrayColumnReader(_) => {
            return Err(ParquetError::General("unsupported column type".into()))
        }
    };
    if decoded.len() < records {
        // Without nulls there is one value a row; the first row whose
        // definition level is below the column's holds a null.
        let row = s.defs.iter().take(records).position(|&d| d < max_def).unwrap_or(decoded.len());
        return Ok(Batch::Null(row));
    }
    Ok(if records < rows { Batch::Short(records) } else { Batch::Full(decoded) })
}

/// How a batch's coordinates are checked and stored.
pub struct CoordinateRules<'a> {
    /// Whether the column's integers are unsigned (stored as their bits).
    pub unsigned: bool,
    /// `--one-based`.
    pub one_based: bool,
    /// `--shape`'s extent for this dimension.
    pub extent: Option<u64>,
    /// One past the largest coordinate seen so far, updated.
    pub seen: &'a mut u64,
}

/// Appends a batch of an integer column as 0-based coordinates; on a bad
/// one, its position in the batch and what is wrong.
pub fn push_coordinates(
    out: &mut Vec<u64>,
    decoded: &Decoded<'_>,
    rules: CoordinateRules<'_>,
) -> Result<(), (usize, String)> {
    let CoordinateRules { unsigned, one_based, extent, seen } = rules;
    out.reserve(decoded.len());
    let mut push = |i: usize, v: i128| -> Result<(), (usize, String)> {
        let c = u64::try_from(v).map_err(|_| (i, format!("coordinate {v} is negative")))?;
        let c = if one_based {
            c.checked_sub(1).ok_or((i, "coordinate 0 with --one-based".to_owned()))?
        } else {
            c
        };
        let end = c.checked_add(1).ok_or((i, format!("coordinate {v} is too large: no extent holds it")))?;
        if let Some(extent) = extent.filter(|&e| end > e) {
            return Err((i, format!("coordinate {v} is outside --shape's extent {extent}")));
        }
        *seen = (*seen).max(end);
        out.push(c);
        Ok(())
    };
    match decoded {
        Decoded::I32(v) if unsigned => {
            v.iter().enumerate().try_for_each(|(i, &x)| push(i, (x as u32).into()))
        }
        Decoded::I32(v) => v.iter().enumerate().try_for_each(|(i, &x)| push(i, x.into())),
        Decoded::I64(v) if unsigned => {
            v.iter().enumerate().try_for_each(|(i, &x)| push(i, (x as u64).into()))
        }
        Decoded::I64(v) => v.iter().enumerate().try_for_each(|(i, &x)| push(i, x.into())),
        _ => Err((0, "not an integer column".to_owned())),
    }
}

/// Appends a batch of the values column as `V`'s little-endian bytes; on a
/// value `V` cannot hold, its position in the batch and what is wrong.
pub fn push_values<V: FromParquet>(
    out: &mut Vec<u8>,
    decoded: &Decoded<'_>,
    kind: Kind,
) -> Result<(), (usize, String)> {
    let start = out.len();
    let Some(len) = decoded.len().checked_mul(V::SIZE) else { return Err((0, "batch too large".into())) };
    out.resize(start + len, 0);
    let slots = out[start..].chunks_exact_mut(V::SIZE);
    let unsigned = matches!(kind, Kind::Int { signed: false, .. });
    let mut put = |(i, (slot, v)): (usize, (&mut [u8], Result<V, String>))| -> Result<(), (usize, String)> {
        v.map_err(|e| (i, e))?.write_le(slot);
        Ok(())
    };
    match decoded {
        Decoded::I32(v) if unsigned => {
            slots.zip(v.iter().map(|&x| V::from_int((x as u32).into()))).enumerate().try_for_each(&mut put)
        }
        Decoded::I32(v) => {
            slots.zip(v.iter().map(|&x| V::from_int(x.into()))).enumerate().try_for_each(&mut put)
        }
        Decoded::I64(v) if unsigned => {
            slots.zip(v.iter().map(|&x| V::from_int((x as u64).into()))).enumerate().try_for_each(&mut put)
        }
        Decoded::I64(v) => {
            slots.zip(v.iter().map(|&x| V::from_int(x.into()))).enumerate().try_for_each(&mut put)
        }
        Decoded::Bool(v) => {
            slots.zip(v.iter().map(|&x| V::from_int(u8::from(x).into()))).enumerate().try_for_each(&mut put)
        }
        Decoded::F32(v) => {
            slots.zip(v.iter().map(|&x| V::from_float(x.into()))).enumerate().try_for_each(&mut put)
        }
        Decoded::F64(v) => slots.zip(v.iter().map(|&x| V::from_float(x))).enumerate().try_for_each(&mut put),
        Decoded::Fixed(v) => {
            slots.zip(v.iter().map(|x| float16(x.data()))).enumerate().try_for_each(&mut put)
        }
    }
}

/// A FLOAT16 value (two little-endian bytes), widened exactly.
fn float16<V: FromParquet>(bytes: &[u8]) -> Result<V, String> {
    match bytes {
        &[lo, hi] => V::from_float(half::f16::from_le_bytes([lo, hi]).to_f64()),
        _ => Err(format!("a FLOAT16 value of {} bytes", bytes.len())),
    }
}
