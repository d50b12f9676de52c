//! The `.tns` parser's tests.

use super::*;

fn run(text: &str, rank: usize) -> Result<Parsed<f64>, LineError> {
    parse::<f64>(text.as_bytes(), rank, None, &|_| {})
}

/// The values buffer read back as `f64`s.
fn floats(p: &Parsed<f64>) -> Vec<f64> {
    p.values.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect()
}

#[test]
fn parses_comments_blanks_crlf_tabs_and_a_missing_final_newline() {
    let text = "# header\n\n1 1 2 1.0\r\n  1\t3 4  2.5 # note\n\t\n2 2 1 -3\n2 2 3 4e0";
    let p = run(text, 3).unwrap();
    assert_eq!(p.columns, [[0, 0, 1, 1], [0, 2, 1, 1], [1, 3, 0, 2]]);
    assert_eq!(floats(&p), [1.0, 2.5, -3.0, 4.0]);
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
fn values_are_each_types_little_endian_bytes_whatever_the_chunks() {
    fn check<V: TnsValue>(tokens: &[&str], want: Vec<u8>) {
        // Whole bytes per value: two values take twice one value's bytes.
        assert_eq!(V::TYPE.values_len(2), Some(2 * V::SIZE as u64), "{}", V::TYPE);
        let mut text = String::new();
        for (i, token) in tokens.iter().enumerate() {
            if i % 2 == 0 {
                text.push_str("# gap\n\n");
            }
            text.push_str(&format!("{} 1 {token}\n", i + 1));
        }
        for target in [1, 9, 1 << 20] {
            let p = parse_in_chunks::<V>(text.as_bytes(), 2, None, &|_| {}, target).unwrap();
            assert_eq!(p.values, want, "{} {target}", V::TYPE);
            assert_eq!(p.len(), tokens.len());
            assert_eq!(p.columns, [(0..tokens.len() as u64).collect(), vec![0; tokens.len()]]);
        }
    }
    macro_rules! each_type {
        ($tokens:expr; $($t:ty),*) => {$(
            let want = $tokens.iter().flat_map(|t| t.parse::<$t>().unwrap().to_le_bytes()).collect();
            check::<$t>(&$tokens, want);
        )*};
    }
    each_type!(["0", "1", "7", "100", "127", "42"]; f64, f32, i64, i32, i16, i8, u64, u32, u16, u8);
    each_type!(["-2.5", "0.1", "1e-7", "-0", "3"]; f64, f32);
    check::<Bool>(&["1", "0", "1", "1", "0"], vec![1, 0, 1, 1, 0]);
}

#[test]
fn swar_digits_agree_with_the_obvious_parse() {
    for text in ["1 ", "7\t", "12 ", "123456 ", "1234567 ", "0000001 ", "9999999\n", "42abcdefg", "2000\r\n"]
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
                    Ok(p) => {
                        assert!(p.len() as u64 <= lines && p.values.len() == p.len() * 8);
                        assert!(p.columns.len() == rank && p.columns.iter().all(|c| c.len() == p.len()));
                    }
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
    let mut columns = [vec![0; 60_000], vec![0; 60_000], vec![0; 60_000]];
    let mut column_slices: Vec<&mut [u64]> = columns.iter_mut().map(Vec::as_mut_slice).collect();
    let whole = parse_chunk::<f64>(b, None, 0, &mut column_slices, &mut vec![0; 8 * 60_000]);
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
        assert_eq!((&q.columns, &q.values, &q.max, q.lines), (&p.columns, &p.values, &p.max, p.lines));
        let bad = format!("{text}1 1 1 x\n1 1 y 1\n");
        let err = parse_in_chunks::<f64>(bad.as_bytes(), 3, None, &|_| {}, target).unwrap_err();
        assert_eq!(err.line, p.lines + 1);
    }
    assert_eq!(p.len(), 50_000);
    assert_eq!(floats(&p)[49_999], 49_999.5);
    let last: Vec<u64> = p.columns.iter().map(|c| c[49_999]).collect();
    assert_eq!(last, [49_999 % 13, 49_999 % 17, 49_999]);
    // A bad line late in the file is found with its number.
    let bad = format!("{text}1 1 1 x\n");
    assert_eq!(run(&bad, 3).unwrap_err().line, p.lines + 1);
}
