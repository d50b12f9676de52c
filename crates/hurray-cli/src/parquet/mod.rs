//! The Parquet reader of `convert` (feature `parquet`): a file's coordinate
//! columns and values column, read a batch of rows at a time into the arrays
//! csf-build takes (one 0-based `u64` column per dimension, and the values'
//! little-endian bytes in the element type).
//!
//! It uses the parquet crate's column readers, not its arrow layer: rows are
//! decoded straight into those arrays. The file is memory-mapped and given
//! to the reader as `Bytes`, so every page is a bounds-checked slice of the
//! map; what is allocated beyond the map is one decompressed page per
//! column (at most 2 GiB, the format's limit) and the batch being decoded.
//! Row counts in the footer are taken as estimates only (for progress and
//! the choice of build): rows are counted as they are decoded, and a column
//! that ends before its row group does is an error.
//!
//! Rows are numbered from 0 across row groups, and every row is an entry,
//! so an entry's position in the builder's errors is its row.

mod column;
mod guard;
mod value;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use hurray_format::limits::RankError;
use hurray_format::ElementType;
use parquet::basic::Compression;
use parquet::column::reader::ColumnReader;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::SerializedFileReader;

pub use value::FromParquet;

use crate::error::{Error, Result};
use crate::files;
use column::{Batch, Column, CoordinateRules, Decoded, Kind, Scratch};

/// The names a values column is found by, in order of preference.
pub const VALUE_NAMES: [&str; 4] = ["value", "values", "val", "v"];

/// The prefix of the columns pandas writes for an unnamed index (after the
/// data columns), which the defaults leave out.
const PANDAS_INDEX: &str = "__index_level_";

/// What `convert` asks of the file.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request<'a> {
    /// `--coords`.
    pub coords: Option<&'a [String]>,
    /// `--values`.
    pub values: Option<&'a str>,
    /// `--one-based`.
    pub one_based: bool,
    /// `--shape`: every coordinate is checked against it, naming its row.
    pub shape: Option<&'a [u64]>,
}

/// Decoded rows, laid out as csf-build takes them.
#[derive(Debug)]
pub struct Entries {
    /// Coordinates, 0-based: one column per dimension.
    pub columns: Vec<Vec<u64>>,
    /// The values: each entry's value as little-endian bytes.
    pub values: Vec<u8>,
    /// One past the largest coordinate per dimension (0 with no entries):
    /// the shape the rows imply. Kept across [`clear`](Self::clear).
    pub extent: Vec<u64>,
}

impl Entries {
    pub fn new(rank: usize) -> Self {
        Entries { columns: vec![Vec::new(); rank], values: Vec::new(), extent: vec![0; rank] }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.columns.first().map_or(0, Vec::len)
    }

    /// Forgets the entries (not the extent), keeping the allocations.
    pub fn clear(&mut self) {
        self.columns.iter_mut().for_each(Vec::clear);
        self.values.clear();
    }

    /// The columns as borrowed slices, for `Indices::Columnar`.
    pub fn column_slices(&self) -> Vec<&[u64]> {
        self.columns.iter().map(Vec::as_slice).collect()
    }
}

/// The memory map, as the reader's `Bytes` own it.
struct Map(files::Input);

impl AsRef<[u8]> for Map {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// A Parquet file opened for `convert`, its columns chosen.
pub struct Table {
    path: PathBuf,
    reader: SerializedFileReader<Bytes>,
    /// The file's size.
    len: u64,
    coords: Vec<Column>,
    values: Column,
    one_based: bool,
    shape: Option<Vec<u64>>,
    /// The row group being read.
    group: Option<Group>,
    next_group: usize,
    /// Rows decoded so far: the next row's number.
    row: u64,
    /// Compressed bytes of the row groups read to the end.
    bytes_done: u64,
    scratch: Scratch,
}

/// The readers of the chosen columns in one row group.
struct Group {
    index: usize,
    /// Rows its footer declares.
    rows: u64,
    /// Of which not yet read.
    left: u64,
    bytes: u64,
    coords: Vec<ColumnReader>,
    values: ColumnReader,
}

impl Table {
    /// Maps the file, reads its footer and chooses the columns.
    ///
    /// # Errors
    /// [`Error::Data`] for a file that is not Parquet or whose footer does
    /// not decode; [`Error::Usage`] for columns that cannot be used (missing,
    /// not integers, too few or too many), the file's columns listed.
    pub fn open(path: &Path, request: Request<'_>) -> Result<Self> {
        let bytes = Bytes::from_owner(Map(files::open(path, true)?));
        let len = bytes.len() as u64;
        let reader = guard::contain(|| SerializedFileReader::new(bytes).map_err(|e| e.to_string()))
            .and_then(|read| read)
            .map_err(|e| Error::data(path, format!("not a readable Parquet file: {e}")))?;
        let schema = reader.metadata().file_metadata().schema_descr_ptr();
        let all: Vec<Column> = schema.columns().iter().enumerate().map(|(i, c)| Column::new(i, c)).collect();
        let (coords, values) = select(path, &all, request)?;
        if let Some(shape) = request.shape.filter(|s| s.len() != coords.len()) {
            return Err(Error::Usage(format!(
                "{}: --shape has {} dimensions, but there are {} coordinate columns ({})",
                path.display(),
                shape.len(),
                coords.len(),
                names(&coords)
            )));
        }
        Ok(Table {
            path: path.to_owned(),
            reader,
            len,
            coords,
            values,
            one_based: request.one_based,
            shape: request.shape.map(<[u64]>::to_vec),
            group: None,
            next_group: 0,
            row: 0,
            bytes_done: 0,
            scratch: Scratch::default(),
        })
    }

    /// The number of coordinate columns.
    pub fn rank(&self) -> usize {
        self.coords.len()
    }

    /// The chosen columns, for `--timings`: `i, j, k -> v (DOUBLE)`.
    pub fn describe(&self) -> String {
        format!("{} -> {} ({})", names(&self.coords), self.values.name, self.values.shown)
    }

    /// The values column's own element type: what `convert` writes without `--dtype`.
    ///
    /// # Errors
    /// [`Error::Usage`] for FLOAT16, which `convert` does not write (`--dtype
    /// f32` or `f64` widens it).
    pub fn natural_type(&self) -> Result<ElementType> {
        Ok(match self.values.kind {
            Kind::Int { bits: 8, signed: true } => ElementType::I8,
            Kind::Int { bits: 16, signed: true } => ElementType::I16,
            Kind::Int { bits: 32, signed: true } => ElementType::I32,
            Kind::Int { bits: 8, signed: false } => ElementType::U8,
            Kind::Int { bits: 16, signed: false } => ElementType::U16,
            Kind::Int { bits: 32, signed: false } => ElementType::U32,
            Kind::Int { bits: _, signed: true } => ElementType::I64,
            Kind::Int { bits: _, signed: false } => ElementType::U64,
            Kind::Bool => ElementType::Bool,
            Kind::Float => ElementType::F32,
            Kind::Double => ElementType::F64,
            Kind::Float16 | Kind::Other => {
                return Err(Error::Usage(format!(
                    "{}: the values column '{}' is {}, and convert does not write f16: \
                     give --dtype f32 or f64 (both hold every f16 exactly)",
                    self.path.display(),
                    self.values.name,
                    self.values.shown
                )))
            }
        })
    }

    /// The rows the footer declares (an estimate: a hostile file may lie).
    pub fn declared_rows(&self) -> u64 {
        let groups = self.reader.metadata().row_groups();
        groups.iter().map(|g| u64::try_from(g.num_rows()).unwrap_or(0)).fold(0, u64::saturating_add)
    }

    /// The file's size in bytes.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// The row groups in the file.
    pub fn row_groups(&self) -> usize {
        self.reader.num_row_groups()
    }

    /// Compressed bytes of the row groups read to the end, for a progress bar over the file's size.
    pub fn bytes_done(&self) -> u64 {
        self.bytes_done
    }

    /// Rows decoded so far.
    pub fn rows_read(&self) -> u64 {
        self.row
    }

    /// Decodes up to `max_rows` more rows into `out` (appended), as values
    /// of `V`; returns how many, 0 at the end of the file. A batch never
    /// crosses a row group.
    ///
    /// # Errors
    /// [`Error::Data`] naming the row (0-based, counted across row groups)
    /// and the column of a null, a negative coordinate, a coordinate
    /// outside `--shape`, or a value `V` cannot hold; naming the row group
    /// and column of a page that does not decode or a column that ends early.
    pub fn read_into<V: FromParquet>(&mut self, max_rows: usize, out: &mut Entries) -> Result<usize> {
        loop {
            match &self.group {
                Some(group) if group.left > 0 => break,
                Some(group) => {
                    self.bytes_done = self.bytes_done.saturating_add(group.bytes);
                    self.group = None;
                }
                None if self.next_group == self.reader.num_row_groups() => return Ok(0),
                None => {
                    self.group = Some(self.open_group(self.next_group)?);
                    self.next_group += 1;
                }
            }
        }
        let Some(group) = self.group.as_mut() else { return Ok(0) };
        let rows = usize::try_from(group.left).unwrap_or(usize::MAX).min(max_rows.max(1));
        let place = Place {
            path: &self.path,
            group: group.index,
            declared: group.rows,
            before: group.rows - group.left,
            first_row: self.row,
        };
        for (d, (column, reader)) in self.coords.iter().zip(&mut group.coords).enumerate() {
            let scratch = &mut self.scratch;
            let read = guard::contain(|| column::read(reader, rows, column.max_def, scratch));
            let decoded = place.full(column, read)?;
            let rules = CoordinateRules {
                unsigned: matches!(column.kind, Kind::Int { signed: false, .. }),
                one_based: self.one_based,
                extent: self.shape.as_ref().and_then(|s| s.get(d).copied()),
                seen: &mut out.extent[d],
            };
            column::push_coordinates(&mut out.columns[d], &decoded, rules)
                .map_err(|(i, what)| place.in_row(column, i, what))?;
        }
        let column = &self.values;
        let (values, scratch) = (&mut group.values, &mut self.scratch);
        let read = guard::contain(|| column::read(values, rows, column.max_def, scratch));
        let decoded = place.full(column, read)?;
        column::push_values::<V>(&mut out.values, &decoded, column.kind)
            .map_err(|(i, what)| place.in_row(column, i, what))?;
        group.left -= rows as u64;
        self.row += rows as u64;
        Ok(rows)
    }

    /// The readers of row group `index`, once its declared row count and
    /// each chosen column's codec are known to be usable.
    fn open_group(&self, index: usize) -> Result<Group> {
        let path = self.path.as_path();
        let group = guard::contain(|| self.reader.get_row_group(index).map_err(|e| e.to_string()))
            .and_then(|group| group)
            .map_err(|e| Error::data(path, format!("row group {index}: {e}")))?;
        let meta = group.metadata();
        let rows = u64::try_from(meta.num_rows())
            .map_err(|_| Error::data(path, format!("row group {index} declares {} rows", meta.num_rows())))?;
        let open = |column: &Column| -> Result<ColumnReader> {
            let at = |what: String| {
                Error::data(path, format!("row group {index}, column '{}': {what}", column.name))
            };
            let chunk = meta.columns().get(column.leaf).ok_or_else(|| at("no column chunk".into()))?;
            check_codec(chunk.compression()).map_err(at)?;
            check_range(chunk, self.len).map_err(at)?;
            guard::contain(|| group.get_column_reader(column.leaf).map_err(|e| e.to_string()))
                .and_then(|reader| reader)
                .map_err(at)
        };
        let coords = self.coords.iter().map(open).collect::<Result<Vec<_>>>()?;
        let values = open(&self.values)?;
        let bytes = u64::try_from(meta.compressed_size()).unwrap_or(0);
        Ok(Group { index, rows, left: rows, bytes, coords, values })
    }
}

/// Where a batch is, for naming what is wrong in it.
struct Place<'a> {
    path: &'a Path,
    group: usize,
    /// Rows the row group declares.
    declared: u64,
    /// Rows of the row group before the batch.
    before: u64,
    /// The batch's first row in the file.
    first_row: u64,
}

impl Place<'_> {
    fn at(&self, column: &Column, what: impl std::fmt::Display) -> Error {
        Error::data(self.path, format!("row group {}, column '{}': {what}", self.group, column.name))
    }

    fn in_row(&self, column: &Column, i: usize, what: impl std::fmt::Display) -> Error {
        let row = self.first_row.saturating_add(i as u64);
        Error::data(self.path, format!("row {row}, column '{}': {what}", column.name))
    }

    /// The batch's values, when every row was read and present.
    fn full<'d>(
        &self,
        column: &Column,
        read: Result<Result<Batch<'d>, parquet::errors::ParquetError>, String>,
    ) -> Result<Decoded<'d>> {
        match read.map_err(|e| self.at(column, e))?.map_err(|e| self.at(column, e))? {
            Batch::Full(decoded) => Ok(decoded),
            Batch::Null(i) => Err(self.in_row(column, i, "null: coordinates and values must be present")),
            Batch::Short(n) => Err(self.at(
                column,
                format!(
                    "the column ends after {} rows, its row group declares {}",
                    self.before.saturating_add(n as u64),
                    self.declared
                ),
            )),
        }
    }
}

/// The codecs this build reads (the parquet crate's features in Cargo.toml).
const CODECS: &str = "uncompressed, snappy, gzip, lz4, lz4_raw, zstd and brotli";

fn check_codec(codec: Compression) -> Result<(), String> {
    match codec {
        Compression::UNCOMPRESSED
        | Compression::SNAPPY
        | Compression::GZIP(_)
        | Compression::LZ4
        | Compression::LZ4_RAW
        | Compression::ZSTD(_)
        | Compression::BROTLI(_) => Ok(()),
        other => Err(format!("compressed with {other}, which hurray does not read (it reads {CODECS})")),
    }
}

/// The column chunk's bytes lie within the file (the crate asserts that
/// its offsets are not negative; the map's bounds check does the rest).
fn check_range(chunk: &ColumnChunkMetaData, file_len: u64) -> Result<(), String> {
    let start = chunk.dictionary_page_offset().unwrap_or_else(|| chunk.data_page_offset());
    let range = u64::try_from(start).ok().zip(u64::try_from(chunk.compressed_size()).ok());
    match range {
        Some((start, len)) if start.checked_add(len).is_some_and(|end| end <= file_len) => Ok(()),
        _ => Err(format!(
            "its bytes ({} from offset {start}) are not within the file's {file_len}",
            chunk.compressed_size()
        )),
    }
}

fn names(columns: &[Column]) -> String {
    columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// Chooses the coordinate columns and the values column: as asked, or by
/// the defaults `--help` documents.
fn select(path: &Path, all: &[Column], request: Request<'_>) -> Result<(Vec<Column>, Column)> {
    let usage = |what: String| Error::Usage(format!("{}: {what}", path.display()));
    let listing = || {
        let columns: Vec<String> = all.iter().map(|c| format!("{}: {}", c.name, c.shown)).collect();
        if columns.is_empty() {
            "the file has no columns".to_owned()
        } else {
            format!("the file's columns: {}", columns.join(", "))
        }
    };
    let find = |name: &str, flag: &str| {
        all.iter()
            .find(|c| c.name == name)
            .ok_or_else(|| usage(format!("{flag}: no column '{name}'; {}", listing())))
    };
    let named_coordinate = |c: &Column| request.coords.is_some_and(|names| names.contains(&c.name));
    let pandas_index = |c: &Column| c.name.starts_with(PANDAS_INDEX);
    let values = match request.values {
        Some(name) => find(name, "--values")?,
        None => VALUE_NAMES
            .iter()
            .find_map(|name| all.iter().find(|c| c.name == *name && !named_coordinate(c)))
            .or_else(|| all.iter().rev().find(|c| !named_coordinate(c) && !pandas_index(c)))
            .ok_or_else(|| usage(format!("no values column; {}", listing())))?,
    };
    if matches!(values.kind, Kind::Other) {
        return Err(usage(format!(
            "the values column '{}' is {}: values must be integer, floating-point or boolean; \
             name another with --values",
            values.name, values.shown
        )));
    }
    let coords: Vec<Column> = match request.coords {
        Some(wanted) => {
            let mut coords: Vec<Column> = Vec::with_capacity(wanted.len());
            for name in wanted {
                let column = find(name, "--coords")?;
                if column.leaf == values.leaf {
                    return Err(usage(format!("--coords: '{name}' is the values column")));
                }
                if coords.iter().any(|c| c.leaf == column.leaf) {
                    return Err(usage(format!("--coords: '{name}' is named twice")));
                }
                if !matches!(column.kind, Kind::Int { .. }) {
                    return Err(usage(format!(
                        "--coords: column '{name}' is {}: coordinates must be integer columns",
                        column.shown
                    )));
                }
                coords.push(column.clone());
            }
            coords
        }
        None => {
            let coordinate =
                |c: &&Column| matches!(c.kind, Kind::Int { .. }) && c.leaf != values.leaf && !pandas_index(c);
            all.iter().filter(coordinate).cloned().collect()
        }
    };
    if let Err(e) = RankError::check(coords.len()) {
        let hint = if request.coords.is_none() {
            format!(
                " (every integer column but the values column '{}'); name them with --coords",
                values.name
            )
        } else {
            String::new()
        };
        return Err(usage(format!(
            "{} coordinate columns [{}]{hint}: {e}; {}",
            coords.len(),
            names(&coords),
            listing()
        )));
    }
    Ok((coords, values.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::basic::{GzipLevel, ZstdLevel};
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::SchemaDescriptor;

    fn columns(message: &str) -> Vec<Column> {
        let schema = SchemaDescriptor::new(std::sync::Arc::new(parse_message_type(message).unwrap()));
        schema.columns().iter().enumerate().map(|(i, c)| Column::new(i, c)).collect()
    }

    fn chosen(all: &[Column], request: Request<'_>) -> Result<(Vec<String>, String)> {
        let (coords, values) = select(Path::new("t.parquet"), all, request)?;
        Ok((coords.into_iter().map(|c| c.name).collect(), values.name))
    }

    #[test]
    fn the_default_columns() {
        let all = columns(
            "message t { required int64 row; required double weight; required int32 col (INTEGER(8,false));
             required binary tag (STRING); optional int32 depth (INT_16); required float val;
             required int64 __index_level_0__; }",
        );
        let (coords, values) = chosen(&all, Request::default()).unwrap();
        assert_eq!((coords, values.as_str()), (vec!["row".into(), "col".into(), "depth".into()], "val"));
        let kinds: Vec<Kind> = all.iter().map(|c| c.kind).collect();
        assert_eq!(kinds[2], Kind::Int { bits: 8, signed: false });
        assert_eq!(kinds[3], Kind::Other);
        assert_eq!(kinds[4], Kind::Int { bits: 16, signed: true });
        assert_eq!(all[2].shown, "INT32 (INT(8, unsigned))");
        // Without a column named for values, the last one that is no coordinate (nor a pandas index).
        let all =
            columns("message t { required int32 a; required int32 b; required int32 c; required int32 n; }");
        assert_eq!(
            chosen(&all, Request::default()).unwrap(),
            (vec!["a".into(), "b".into(), "c".into()], "n".into())
        );
        let named = ["n".to_owned(), "a".to_owned(), "b".to_owned()];
        let request = Request { coords: Some(&named), ..Request::default() };
        assert_eq!(chosen(&all, request).unwrap(), (named.to_vec(), "c".into()));
    }

    #[test]
    fn columns_of_other_types_are_not_integers() {
        let all = columns(
            "message t { required int32 d (DATE); required int64 ts (TIMESTAMP(MILLIS,true));
             required int32 dec (DECIMAL(5,0)); required int96 old; repeated int32 list;
             required fixed_len_byte_array(2) h (FLOAT16); required boolean b; }",
        );
        let kinds: Vec<Kind> = all.iter().map(|c| c.kind).collect();
        assert_eq!(&kinds[..5], &[Kind::Other; 5]);
        assert_eq!(&kinds[5..], &[Kind::Float16, Kind::Bool]);
        assert_eq!(all[4].shown, "INT32 (repeated)");
    }

    #[test]
    fn codecs_outside_the_build_are_refused_by_name() {
        assert!(check_codec(Compression::ZSTD(ZstdLevel::default())).is_ok());
        assert!(check_codec(Compression::GZIP(GzipLevel::default())).is_ok());
        let message = check_codec(Compression::LZO).unwrap_err();
        assert!(message
            .starts_with("compressed with LZO, which hurray does not read (it reads uncompressed, snappy"));
    }
}
