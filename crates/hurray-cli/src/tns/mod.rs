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
//!    coordinate and value arrays (allocated once, for that bound), keeping
//!    the first bad line of the chunk.
//!
//! Chunks with comment or blank lines leave gaps that one in-place pass
//! closes. Nothing is ever copied into per-line strings, and the arrays are
//! never concatenated, so the peak is the input plus the output. The first
//! bad line *in file order* is reported, whatever the thread count.

mod value;

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

/// A parsed `.tns` file.
#[derive(Debug)]
pub struct Parsed<V> {
    /// Coordinates, 0-based, `rank` per entry, row-major.
    pub coords: Vec<u64>,
    /// One value per entry.
    pub values: Vec<V>,
    /// Per dimension, the largest 1-based coordinate (0 with no entries):
    /// the shape FROSTT files imply.
    pub max: Vec<u64>,
    /// Lines in the input.
    pub lines: u64,
    /// Chunks parsed (a measure of the parallelism available).
    pub chunks: usize,
}

impl<V> Parsed<V> {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.values.len()
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
    let capacity = usize::try_from(lines).map_err(|_| too_big())?;
    let mut coords = vec![0u64; capacity.checked_mul(rank).ok_or_else(too_big)?];
    let mut values = vec![V::default(); capacity];

    // Hand each chunk its slices of the output and its first line number.
    struct ChunkTask<'a, V> {
        bytes: &'a [u8],
        first_line: u64,
        start: usize,
        coords: &'a mut [u64],
        values: &'a mut [V],
    }
    let mut tasks = Vec::with_capacity(ranges.len());
    let (mut coord_rest, mut value_rest) = (&mut coords[..], &mut values[..]);
    let (mut first_line, mut start) = (0u64, 0usize);
    for (range, &count) in ranges.iter().zip(&line_counts) {
        let count = count as usize;
        let (c, c_rest) = std::mem::take(&mut coord_rest).split_at_mut(count * rank);
        let (v, v_rest) = std::mem::take(&mut value_rest).split_at_mut(count);
        tasks.push(ChunkTask { bytes: &b[range.clone()], first_line, start, coords: c, values: v });
        (coord_rest, value_rest) = (c_rest, v_rest);
        first_line += count as u64;
        start += count;
    }
    let outs: Vec<(usize, ChunkOut)> = tasks
        .into_par_iter()
        .map(|task| {
            let out = parse_chunk(task.bytes, rank, shape, task.first_line, task.coords, task.values);
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
            coords.copy_within(start * rank..(start + out.entries) * rank, len * rank);
            values.copy_within(*start..start + out.entries, len);
        }
        len += out.entries;
        for (m, &c) in max.iter_mut().zip(&out.max) {
            *m = (*m).max(c);
        }
    }
    coords.truncate(len * rank);
    values.truncate(len);
    Ok(Parsed { coords, values, max, lines, chunks: outs.len() })
}

/// Parses the lines of one chunk into `coords` and `values` (which have room
/// for one entry per line).
fn parse_chunk<V: TnsValue>(
    b: &[u8],
    rank: usize,
    shape: Option<&[u64]>,
    first_line: u64,
    coords: &mut [u64],
    values: &mut [V],
) -> ChunkOut {
    let mut max = vec![0u64; rank];
    let mut line = first_line;
    let mut entries = 0usize;
    let mut i = 0usize;
    let n = b.len();
    let fail = |line: u64, message: String, entries: usize, max: Vec<u64>| ChunkOut {
        entries,
        max,
        error: Some(LineError { line, message }),
    };
    while i < n {
        line += 1;
        let line_start = i;
        // Leading blanks, then a blank line, a comment, or data.
        let mut c = b[i];
        while is_blank(c) {
            i += 1;
            if i == n {
                return ChunkOut { entries, max, error: None };
            }
            c = b[i];
        }
        if c == b'\n' {
            i += 1;
            continue;
        }
        if c == b'#' {
            i = skip_line(b, i);
            continue;
        }
        let row = &mut coords[entries * rank..(entries + 1) * rank];
        for (d, slot) in row.iter_mut().enumerate() {
            let start = i;
            let mut v = 0u64;
            let mut ends_well = false;
            if let Some((value, len)) = b.get(i..i + 8).and_then(swar_digits) {
                // 1 to 7 digits then a non-digit, all in one 8-byte load.
                v = value;
                i += len;
                ends_well = is_blank(b[i]);
            } else {
                while i < n {
                    let digit = b[i].wrapping_sub(b'0');
                    if digit > 9 {
                        break;
                    }
                    v = v.wrapping_mul(10).wrapping_add(u64::from(digit));
                    i += 1;
                }
                ends_well |= i < n && is_blank(b[i]);
            }
            if i == start || i - start > 19 || !ends_well {
                match slow_coordinate(b, line_start, start, d, rank) {
                    Ok((value, end)) => {
                        v = value;
                        i = end;
                    }
                    Err(message) => return fail(line, message, entries, max),
                }
            }
            if v == 0 {
                let message = format!("coordinate 0 in dimension {}: .tns coordinates are 1-based", d + 1);
                return fail(line, message, entries, max);
            }
            if let Some(shape) = shape {
                if v > shape[d] {
                    let message = format!(
                        "coordinate {v} of dimension {} is outside --shape's extent {}",
                        d + 1,
                        shape[d]
                    );
                    return fail(line, message, entries, max);
                }
            }
            if v > max[d] {
                max[d] = v;
            }
            *slot = v - 1;
            while i < n && is_blank(b[i]) {
                i += 1;
            }
        }
        let start = i;
        while i < n && !is_blank(b[i]) && b[i] != b'\n' {
            i += 1;
        }
        if i == start {
            return fail(line, field_count_message(b, line_start, rank), entries, max);
        }
        match V::parse(&b[start..i]) {
            Ok(v) => values[entries] = v,
            Err(message) => return fail(line, message, entries, max),
        }
        while i < n && is_blank(b[i]) {
            i += 1;
        }
        if i < n {
            match b[i] {
                b'\n' => i += 1,
                b'#' => i = skip_line(b, i),
                _ => return fail(line, field_count_message(b, line_start, rank), entries, max),
            }
        }
        entries += 1;
    }
    ChunkOut { entries, max, error: None }
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
mod tests {
    use super::*;

    fn run(text: &str, rank: usize) -> Result<Parsed<f64>, LineError> {
        parse::<f64>(text.as_bytes(), rank, None, &|_| {})
    }

    #[test]
    fn parses_comments_blanks_crlf_tabs_and_a_missing_final_newline() {
        let text = "# header\n\n1 1 2 1.0\r\n  1\t3 4  2.5 # note\n\t\n2 2 1 -3\n2 2 3 4e0";
        let p = run(text, 3).unwrap();
        assert_eq!(p.coords, [0, 0, 1, 0, 2, 3, 1, 1, 0, 1, 1, 2]);
        assert_eq!(p.values, [1.0, 2.5, -3.0, 4.0]);
        assert_eq!(p.max, [2, 3, 4]);
        assert_eq!(p.lines, 7);
        assert_eq!(first_data_line(text.as_bytes()), Some(FirstLine { line: 3, fields: 4 }));
        assert_eq!(line_of_entry(text.as_bytes(), 2), Some(6));
        assert_eq!(line_of_entry(text.as_bytes(), 4), None);
    }

    #[test]
    fn reports_the_first_bad_line_with_its_number() {
        let cases = [
            ("1 1 1 1\n1 1 1\n", 2, "found 3 fields, expected 4"),
            ("1 1 1 1\n1 1 1 1 1\n", 2, "found 5 fields"),
            ("\n1 0 1 1\n", 2, "coordinate 0 in dimension 2"),
            ("1 x 1 1\n", 1, "bad coordinate 'x' in dimension 2"),
            ("1 -1 1 1\n", 1, "bad coordinate '-1'"),
            ("1 1 1 abc\n", 1, "bad value 'abc'"),
            ("1 1 99999999999999999999 1\n", 1, "overflows u64"),
            ("1 1 1 1\n1 1 1", 2, "found 3 fields"),
        ];
        for (text, line, what) in cases {
            let err = run(text, 3).unwrap_err();
            assert_eq!(err.line, line, "{text:?}: {err:?}");
            assert!(err.message.contains(what), "{text:?}: {err:?}");
        }
        assert_eq!(run("1 1 18446744073709551615 1\n", 3).unwrap().max[2], u64::MAX);
        let err = parse::<f64>(b"1 1 5 1\n", 3, Some(&[1, 1, 4]), &|_| {}).unwrap_err();
        assert!(err.message.contains("outside --shape's extent 4"), "{err:?}");
    }

    #[test]
    fn swar_digits_agree_with_the_obvious_parse() {
        for text in
            ["1 ", "7\t", "12 ", "123456 ", "1234567 ", "0000001 ", "9999999\n", "42abcdefg", "2000\r\n"]
        {
            let padded = format!("{text}        ");
            let digits = text.bytes().take_while(u8::is_ascii_digit).count();
            let want = text[..digits].parse::<u64>().unwrap();
            assert_eq!(swar_digits(&padded.as_bytes()[..8]), Some((want, digits)), "{text:?}");
        }
        for text in ["12345678", "x1234567", " 1234567", "/1234567", ":1234567"] {
            assert_eq!(swar_digits(text.as_bytes()), None, "{text:?}");
        }
        // Bytes just outside '0'..='9' and high bytes stop the number.
        for stop in [b'/', b':', 0x80, 0xff, 0xb0, 0xb9, 0x00] {
            let mut bytes = *b"123     ";
            bytes[3] = stop;
            assert_eq!(swar_digits(&bytes), Some((123, 3)), "{stop:#x}");
        }
    }

    #[test]
    fn random_bytes_never_panic_and_errors_point_into_the_file() {
        // Bytes drawn mostly from the .tns alphabet, so that many lines get far into the parser.
        let alphabet = b"0123456789 \t\r\n#.-+eE1x";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            let len = (next() % 200) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next();
                    if r % 17 == 0 {
                        (r >> 8) as u8
                    } else {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    }
                })
                .collect();
            let lines = count_lines(&bytes);
            for rank in [1, 3, 4] {
                for target in [1, 7, 1 << 20] {
                    match parse_in_chunks::<f64>(&bytes, rank, None, &|_| {}, target) {
                        Ok(p) => assert!(p.len() as u64 <= lines && p.coords.len() == p.len() * rank),
                        Err(e) => assert!(e.line >= 1 && e.line <= lines, "{e:?}"),
                    }
                }
            }
            let _ = first_data_line(&bytes);
            let _ = line_of_entry(&bytes, 3);
        }
    }

    #[test]
    fn many_chunks_give_the_same_result_as_one() {
        let mut text = String::new();
        for i in 0..50_000u64 {
            if i % 7 == 0 {
                text.push_str("# comment\n\n");
            }
            text.push_str(&format!("{} {} {} {}.5\n", i % 13 + 1, i % 17 + 1, i + 1, i));
        }
        let b = text.as_bytes();
        let whole = parse_chunk::<f64>(b, 3, None, 0, &mut vec![0; 3 * 60_000], &mut vec![0.0; 60_000]);
        assert_eq!(whole.entries, 50_000);
        for target in [1, 100, 4096] {
            let parts = chunks(b, target);
            assert_eq!(parts.last().unwrap().end, b.len());
            assert!(parts.iter().all(|r| b[r.end - 1] == b'\n'));
        }
        let p = run(&text, 3).unwrap();
        for target in [1, 1000, 65_536] {
            let q = parse_in_chunks::<f64>(b, 3, None, &|_| {}, target).unwrap();
            assert!(q.chunks > 1);
            assert_eq!((&q.coords, &q.values, &q.max, q.lines), (&p.coords, &p.values, &p.max, p.lines));
            let bad = format!("{text}1 1 1 x\n1 1 y 1\n");
            let err = parse_in_chunks::<f64>(bad.as_bytes(), 3, None, &|_| {}, target).unwrap_err();
            assert_eq!(err.line, p.lines + 1);
        }
        assert_eq!(p.len(), 50_000);
        assert_eq!(p.values[49_999], 49_999.5);
        assert_eq!(&p.coords[3 * 49_999..], &[49_999 % 13, 49_999 % 17, 49_999]);
        // A bad line late in the file is found with its number.
        let bad = format!("{text}1 1 1 x\n");
        assert_eq!(run(&bad, 3).unwrap_err().line, p.lines + 1);
    }
}
