//! The FROSTT `.tns` reader: one non-zero a line, 1-based coordinates then
//! the value, separated by spaces or tabs; blank lines, `#` comments (whole
//! lines, or after the value) and `\r\n` line ends are allowed.
//!
//! It is a byte scanner over the whole input (a memory map, or the
//! decompressed bytes of a `.gz`), in two parallel passes over chunks cut at
//! line ends:
//!
//! 1. count the lines of each chunk, which gives every chunk its first line
//!    number and an upper bound on its entries;
//! 2. parse each chunk straight into its own disjoint slice of the final
//!    arrays (allocated once, for that bound), keeping the first bad line of
//!    the chunk. The arrays are what csf-build takes without a copy: one
//!    coordinate column per dimension (`Indices::Columnar`) and the values
//!    buffer's little-endian bytes.
//!
//! Chunks with comment or blank lines leave gaps that one in-place pass
//! (per column, and over the values) closes. Nothing is ever copied into per-line strings, and the arrays are
//! never concatenated, so the peak is the input plus the output. The first
//! bad line *in file order* is reported, whatever the thread count.

mod value;

use std::marker::PhantomData;

use rayon::prelude::*;

pub use value::{Bool, TnsValue};

/// A malformed line: its 1-based number and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// The 1-based line number.
    pub line: u64,
    /// What is wrong.
    pub message: String,
}

/// The first line that holds a non-zero: its number and its field count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FirstLine {
    /// The 1-based line number.
    pub line: u64,
    /// Whitespace-separated fields on it (the rank is one less).
    pub fields: usize,
}

/// A parsed `.tns` file, laid out as csf-build takes it without a copy
/// (`Indices::Columnar` and the values buffer's bytes).
#[derive(Debug)]
pub struct Parsed<V> {
    /// Coordinates, 0-based: one column per dimension, one entry per data line.
    pub columns: Vec<Vec<u64>>,
    /// The values buffer: each entry's value as `V::SIZE` little-endian bytes.
    pub values: Vec<u8>,
    /// Per dimension, the largest 1-based coordinate (0 with no entries):
    /// the shape FROSTT files imply.
    pub max: Vec<u64>,
    /// Lines in the input.
    pub lines: u64,
    /// Chunks parsed (a measure of the parallelism available).
    pub chunks: usize,
    /// The element type the value bytes hold.
    value: PhantomData<V>,
}

impl<V: TnsValue> Parsed<V> {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.values.len() / V::SIZE
    }

    /// The columns as borrowed slices, for `Indices::Columnar`.
    pub fn column_slices(&self) -> Vec<&[u64]> {
        self.columns.iter().map(Vec::as_slice).collect()
    }
}

#[inline]
fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\r'
}

/// The index just past the end of the line containing `i`.
#[inline]
fn skip_line(b: &[u8], i: usize) -> usize {
    match b.get(i..).and_then(|rest| rest.iter().position(|&c| c == b'\n')) {
        Some(p) => i + p + 1,
        None => b.len(),
    }
}

/// What a line holds.
enum Kind {
    /// Blank, or a comment.
    Empty,
    /// Data, starting at this index (first non-blank byte).
    Data(usize),
}

/// Classifies the line that starts at `i`; returns the kind and, for empty
/// lines, where the next line starts.
#[inline]
fn classify(b: &[u8], mut i: usize) -> (Kind, usize) {
    while let Some(&c) = b.get(i) {
        if is_blank(c) {
            i += 1;
            continue;
        }
        return match c {
            b'\n' => (Kind::Empty, i + 1),
            b'#' => (Kind::Empty, skip_line(b, i)),
            _ => (Kind::Data(i), i),
        };
    }
    (Kind::Empty, b.len())
}

/// The number of whitespace-separated fields from `i` to the end of the line
/// (a trailing `#` comment excluded).
fn count_fields(b: &[u8], mut i: usize) -> usize {
    let mut fields = 0;
    loop {
        while b.get(i).copied().is_some_and(is_blank) {
            i += 1;
        }
        match b.get(i) {
            None | Some(b'\n' | b'#') => return fields,
            Some(_) => {
                fields += 1;
                while b.get(i).is_some_and(|&c| !is_blank(c) && c != b'\n') {
                    i += 1;
                }
            }
        }
    }
}

/// Finds the first data line (its number and field count), or `None` for a
/// file with none.
pub fn first_data_line(b: &[u8]) -> Option<FirstLine> {
    let mut i = 0;
    let mut line = 0;
    while i < b.len() {
        line += 1;
        match classify(b, i) {
            (Kind::Empty, next) => i = next,
            (Kind::Data(start), _) => return Some(FirstLine { line, fields: count_fields(b, start) }),
        }
    }
    None
}

/// The 1-based line number of the `entry`-th data line (0-based), for
/// naming the lines of an error found after parsing (a duplicate).
pub fn line_of_entry(b: &[u8], entry: usize) -> Option<u64> {
    let (mut i, mut line, mut seen) = (0, 0u64, 0usize);
    while i < b.len() {
        line += 1;
        match classify(b, i) {
            (Kind::Empty, next) => i = next,
            (Kind::Data(start), _) => {
                if seen == entry {
                    return Some(line);
                }
                seen += 1;
                i = skip_line(b, start);
            }
        }
    }
    None
}

/// Splits `b` into chunks of about `target` bytes, each ending just after a
/// `\n` (the last one at the end of the input).
fn chunks(b: &[u8], target: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < b.len() {
        let end = if b.len() - start <= target { b.len() } else { skip_line(b, start + target - 1) };
        out.push(start..end);
        start = end;
    }
    out
}

/// Lines in a chunk: its `\n`s, plus one for a last line with no `\n`.
fn count_lines(chunk: &[u8]) -> u64 {
    // Counting in blocks keeps the inner loop branch-free, which compilers vectorise.
    let newlines: u64 = chunk
        .chunks(1 << 12)
        .map(|block| block.iter().map(|&c| u32::from(c == b'\n')).sum::<u32>() as u64)
        .sum();
    newlines + u64::from(chunk.last().is_some_and(|&c| c != b'\n'))
}

/// What parsing one chunk gave.
struct ChunkOut {
    entries: usize,
    max: Vec<u64>,
    error: Option<LineError>,
}

/// Parses `b`, whose lines hold `rank` coordinates then a value each.
/// With `shape`, every coordinate is checked against it (so the error names
/// the line). `progress` is called with the bytes of each chunk done.
///
/// # Errors
/// The first malformed line in file order.
pub fn parse<V: TnsValue>(
    b: &[u8],
    rank: usize,
    shape: Option<&[u64]>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Parsed<V>, LineError> {
    let threads = rayon::current_num_threads().max(1);
    // Enough chunks to balance the load, each large enough to amortise its setup.
    let target = (b.len() / (threads * 8)).clamp(1 << 20, 64 << 20);
    parse_in_chunks(b, rank, shape, progress, target)
}

/// One chunk's share of the work: its bytes, the line before its first,
/// and its disjoint slices of every column and of the values buffer.
struct ChunkTask<'a> {
    bytes: &'a [u8],
    first_line: u64,
    /// Its first entry slot in the output.
    start: usize,
    columns: Vec<&'a mut [u64]>,
    values: &'a mut [u8],
}

fn parse_in_chunks<V: TnsValue>(
    b: &[u8],
    rank: usize,
    shape: Option<&[u64]>,
    progress: &(dyn Fn(u64) + Sync),
    target: usize,
) -> Result<Parsed<V>, LineError> {
    let ranges = chunks(b, target.max(1));
    let line_counts: Vec<u64> = ranges.par_iter().map(|r| count_lines(&b[r.clone()])).collect();
    let lines: u64 = line_counts.iter().sum();
    let too_big = || LineError { line: lines, message: "too many lines for this machine's memory".into() };
    // Room for one entry per line; the byte total is checked so that no
    // allocation below can overflow.
    let capacity = usize::try_from(lines).map_err(|_| too_big())?;
    let entry_bytes = rank.checked_mul(8).and_then(|c| c.checked_add(V::SIZE)).ok_or_else(too_big)?;
    match capacity.checked_mul(entry_bytes) {
        Some(total) if total <= isize::MAX as usize => {}
        _ => return Err(too_big()),
    }
    let mut columns: Vec<Vec<u64>> = (0..rank).map(|_| vec![0u64; capacity]).collect();
    let mut values = vec![0u8; capacity * V::SIZE];

    let tasks = split_tasks::<V>(b, &ranges, &line_counts, &mut columns, &mut values);
    let outs: Vec<(usize, ChunkOut)> = tasks
        .into_par_iter()
        .map(|mut task| {
            let out = parse_chunk::<V>(task.bytes, shape, task.first_line, &mut task.columns, task.values);
            progress(task.bytes.len() as u64);
            (task.start, out)
        })
        .collect();
    if let Some(error) = outs.iter().find_map(|(_, out)| out.error.clone()) {
        return Err(error);
    }
    // Close the gaps left by blank and comment lines, and merge the maxima.
    let mut max = vec![0u64; rank];
    let mut len = 0usize;
    for (start, out) in &outs {
        if *start != len {
            for column in &mut columns {
                column.copy_within(*start..start + out.entries, len);
            }
            values.copy_within(start * V::SIZE..(start + out.entries) * V::SIZE, len * V::SIZE);
        }
        len += out.entries;
        for (m, &c) in max.iter_mut().zip(&out.max) {
            *m = (*m).max(c);
        }
    }
    for column in &mut columns {
        column.truncate(len);
    }
    values.truncate(len * V::SIZE);
    Ok(Parsed { columns, values, max, lines, chunks: outs.len(), value: PhantomData })
}

/// Hands each chunk its slices of the output (one slot per line, cut from
/// the front of every column and of the values) and its first line number.
fn split_tasks<'a, V: TnsValue>(
    b: &'a [u8],
    ranges: &[std::ops::Range<usize>],
    line_counts: &[u64],
    columns: &'a mut [Vec<u64>],
    values: &'a mut [u8],
) -> Vec<ChunkTask<'a>> {
    let mut tasks = Vec::with_capacity(ranges.len());
    let mut column_rest: Vec<&mut [u64]> = columns.iter_mut().map(Vec::as_mut_slice).collect();
    let mut value_rest = values;
    let (mut first_line, mut start) = (0u64, 0usize);
    for (range, &count) in ranges.iter().zip(line_counts) {
        let count = count as usize;
        let chunk_columns = column_rest
            .iter_mut()
            .map(|rest| {
                let (mine, others) = std::mem::take(rest).split_at_mut(count);
                *rest = others;
                mine
            })
            .collect();
        let (v, v_rest) = value_rest.split_at_mut(count * V::SIZE);
        value_rest = v_rest;
        tasks.push(ChunkTask {
            bytes: &b[range.clone()],
            first_line,
            start,
            columns: chunk_columns,
            values: v,
        });
        first_line += count as u64;
        start += count;
    }
    tasks
}

/// Parses the lines of one chunk into `columns` and `values` (which have
/// room for one entry per line); the rank is the number of columns.
fn parse_chunk<V: TnsValue>(
    b: &[u8],
    shape: Option<&[u64]>,
    first_line: u64,
    columns: &mut [&mut [u64]],
    values: &mut [u8],
) -> ChunkOut {
    let mut max = vec![0u64; columns.len()];
    let mut line = first_line;
    let mut entries = 0usize;
    let mut i = 0usize;
    while i < b.len() {
        line += 1;
        match classify(b, i) {
            (Kind::Empty, next) => i = next,
            (Kind::Data(start), _) => {
                let slot = &mut values[entries * V::SIZE..(entries + 1) * V::SIZE];
                let entry = Entry { b, line_start: i, columns: &mut *columns, index: entries, max: &mut max };
                match entry.parse::<V>(start, shape, slot) {
                    Ok(next) => i = next,
                    Err(message) => {
                        return ChunkOut { entries, max, error: Some(LineError { line, message }) }
                    }
                }
                entries += 1;
            }
        }
    }
    ChunkOut { entries, max, error: None }
}

/// One data line being parsed into output slot `index`.
struct Entry<'a, 'c> {
    b: &'a [u8],
    /// Where the line starts (error messages count its fields from there).
    line_start: usize,
    columns: &'a mut [&'c mut [u64]],
    index: usize,
    /// The chunk's largest coordinate per dimension so far.
    max: &'a mut [u64],
}

impl Entry<'_, '_> {
    /// Parses the coordinates from `i` (the first non-blank byte), then the
    /// value into `slot`, then checks that the line ends; returns where the
    /// next line starts, or what is wrong with this one.
    #[inline]
    fn parse<V: TnsValue>(
        self,
        mut i: usize,
        shape: Option<&[u64]>,
        slot: &mut [u8],
    ) -> Result<usize, String> {
        let rank = self.columns.len();
        for (d, (column, max)) in self.columns.iter_mut().zip(self.max.iter_mut()).enumerate() {
            let (v, end) = coordinate(self.b, i, self.line_start, d, rank)?;
            check_coordinate(v, d, shape)?;
            *max = (*max).max(v);
            column[self.index] = v - 1;
            i = skip_blanks(self.b, end);
        }
        let end = value_token(self.b, i);
        if end == i {
            return Err(field_count_message(self.b, self.line_start, rank));
        }
        V::parse(&self.b[i..end])?.write_le(slot);
        line_end(self.b, end, self.line_start, rank)
    }
}

/// The index of the first non-blank byte from `i` (or the end).
#[inline]
fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    while b.get(i).copied().is_some_and(is_blank) {
        i += 1;
    }
    i
}

/// The end of the value token that starts at `i`: the next blank, line end
/// or end of input (a `#` inside the token is the value parser's to reject).
#[inline]
fn value_token(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|&c| !is_blank(c) && c != b'\n') {
        i += 1;
    }
    i
}

/// After the value, only blanks then the line end or a comment may follow;
/// anything else is one field too many. Returns where the next line starts.
#[inline]
fn line_end(b: &[u8], end: usize, line_start: usize, rank: usize) -> Result<usize, String> {
    let i = skip_blanks(b, end);
    match b.get(i) {
        None => Ok(i),
        Some(b'\n') => Ok(i + 1),
        Some(b'#') => Ok(skip_line(b, i)),
        Some(_) => Err(field_count_message(b, line_start, rank)),
    }
}

/// One coordinate token from `i`, as written (1-based); returns it and the
/// index after it. The common token, 1 to 7 digits, is read in one 8-byte
/// load; longer digit runs by the byte loop; anything unusual (no digits, a
/// 20-digit number, a token that does not end in a blank) by the careful
/// path, which also words the errors.
#[inline]
fn coordinate(
    b: &[u8],
    mut i: usize,
    line_start: usize,
    d: usize,
    rank: usize,
) -> Result<(u64, usize), String> {
    let start = i;
    let mut v = 0u64;
    let ends_well;
    if let Some((value, len)) = b.get(i..i + 8).and_then(swar_digits) {
        // 1 to 7 digits then a non-digit, all in one 8-byte load.
        v = value;
        i += len;
        ends_well = is_blank(b[i]);
    } else {
        while let Some(digit) = b.get(i).map(|c| c.wrapping_sub(b'0')).filter(|&digit| digit <= 9) {
            v = v.wrapping_mul(10).wrapping_add(u64::from(digit));
            i += 1;
        }
        ends_well = b.get(i).copied().is_some_and(is_blank);
    }
    if i == start || i - start > 19 || !ends_well {
        return slow_coordinate(b, line_start, start, d, rank);
    }
    Ok((v, i))
}

/// A coordinate must be 1-based, and inside `--shape` when one is given
/// (checked here so that the error names the line).
#[inline]
fn check_coordinate(v: u64, d: usize, shape: Option<&[u64]>) -> Result<(), String> {
    if v == 0 {
        return Err(format!("coordinate 0 in dimension {}: .tns coordinates are 1-based", d + 1));
    }
    match shape {
        Some(shape) if v > shape[d] => {
            Err(format!("coordinate {v} of dimension {} is outside --shape's extent {}", d + 1, shape[d]))
        }
        _ => Ok(()),
    }
}

/// Parses the leading decimal digits of 8 bytes at once (SWAR): returns the
/// value and the digit count when there are 1 to 7 digits (so that the byte
/// after them is also among the 8), `None` otherwise.
#[inline]
fn swar_digits(bytes: &[u8]) -> Option<(u64, usize)> {
    let word = u64::from_le_bytes(bytes.try_into().ok()?);
    // Digits become 0..=9; every other byte becomes something above 9.
    let t = word ^ 0x3030_3030_3030_3030;
    // The high bit of each byte is set where the byte is not a digit. A
    // carry out of a non-digit byte only disturbs later bytes, and only the
    // first non-digit matters.
    let non_digit = (t.wrapping_add(0x7676_7676_7676_7676) | t) & 0x8080_8080_8080_8080;
    let len = (non_digit.trailing_zeros() / 8) as usize;
    if len == 0 || len >= 8 {
        return None;
    }
    // Keep the `len` digits, moved to the top bytes: the zero bytes shifted
    // in below act as leading zeros. The first character (the most
    // significant digit) is in the lowest byte.
    let mut v = t << (64 - 8 * len as u32);
    v = ((v & 0x0f0f_0f0f_0f0f_0f0f).wrapping_mul(2561)) >> 8;
    v = ((v & 0x00ff_00ff_00ff_00ff).wrapping_mul(6_553_601)) >> 16;
    v = ((v & 0x0000_ffff_0000_ffff).wrapping_mul(42_949_672_960_001)) >> 32;
    Some((v, len))
}

fn field_count_message(b: &[u8], line_start: usize, rank: usize) -> String {
    let found = count_fields(b, line_start);
    format!("found {found} fields, expected {} ({rank} coordinates and a value)", rank + 1)
}

/// The careful path for a coordinate token that is not 1 to 19 digits
/// followed by a blank: a 20-digit coordinate that still fits `u64`, or an
/// error saying what is wrong. Returns the value and the index after it.
#[cold]
fn slow_coordinate(
    b: &[u8],
    line_start: usize,
    start: usize,
    dim: usize,
    rank: usize,
) -> Result<(u64, usize), String> {
    let mut end = start;
    while end < b.len() && !is_blank(b[end]) && b[end] != b'\n' {
        end += 1;
    }
    let token = &b[start..end];
    let at_line_end = end == b.len() || b[end] == b'\n';
    if token.is_empty() || at_line_end {
        // The line ended where a coordinate (or the value after it) should be.
        return Err(field_count_message(b, line_start, rank));
    }
    let text = String::from_utf8_lossy(token);
    if token.iter().all(u8::is_ascii_digit) {
        return match text.parse::<u64>() {
            Ok(v) => Ok((v, end)),
            Err(_) => Err(format!("coordinate {text} of dimension {} overflows u64", dim + 1)),
        };
    }
    let shown: String = text.chars().take(40).collect();
    Err(format!("bad coordinate '{shown}' in dimension {}: expected a positive integer", dim + 1))
}

#[cfg(test)]
mod tests;
