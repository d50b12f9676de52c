//! `hurray convert` of Parquet files: the same bytes as `convert` of the
//! same entries as `.tns`, in memory and within a budget, and clean refusals
//! of files it cannot use. The files are written here with the parquet
//! crate's writer, in several row groups and with every codec the reader has.

mod common;
use common::{hurray, s, stderr};

/// Runs and requires exit `code` with `message` in the error.
#[track_caller]
fn refused<S: AsRef<std::ffi::OsStr>>(args: &[S], code: i32, message: &str) {
    let out = hurray(args);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "stderr: {text}");
    assert!(text.contains(message), "{message:?} not in {text:?}");
    assert_eq!(text.lines().count(), 1, "one line: {text}");
}

#[cfg(not(feature = "parquet"))]
#[test]
fn without_the_feature_a_parquet_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.parquet");
    std::fs::write(&file, b"PAR1").unwrap();
    let out = dir.path().join("t.hurray");
    refused(&["convert", s(&file), "-o", s(&out)], 2, "built without Parquet support");
}

#[cfg(feature = "parquet")]
mod with_parquet {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use parquet::basic::{BrotliLevel, Compression, GzipLevel, ZstdLevel};
    use parquet::data_type::{
        BoolType, ByteArray, ByteArrayType, DoubleType, FixedLenByteArray, FixedLenByteArrayType, FloatType,
        Int32Type, Int64Type,
    };
    use parquet::file::properties::{WriterProperties, WriterVersion};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    use super::{hurray, refused, s, stderr};

    /// Runs and requires exit 0.
    #[track_caller]
    fn ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> std::process::Output {
        let out = hurray(args);
        assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
        out
    }

    /// A column's data: a value for every row (null rows' are not written).
    #[derive(Clone, Debug)]
    enum Data {
        I32(Vec<i32>),
        I64(Vec<i64>),
        F32(Vec<f32>),
        F64(Vec<f64>),
        Bool(Vec<bool>),
        Str(Vec<String>),
        /// FLOAT16 bits.
        F16(Vec<u16>),
    }

    impl Data {
        fn len(&self) -> usize {
            match self {
                Data::I32(v) => v.len(),
                Data::I64(v) => v.len(),
                Data::F32(v) => v.len(),
                Data::F64(v) => v.len(),
                Data::Bool(v) => v.len(),
                Data::Str(v) => v.len(),
                Data::F16(v) => v.len(),
            }
        }

        /// Row `r` as `.tns` text.
        fn text(&self, r: usize) -> String {
            match self {
                Data::I32(v) => v[r].to_string(),
                Data::I64(v) => v[r].to_string(),
                Data::F32(v) => v[r].to_string(),
                Data::F64(v) => format!("{:?}", v[r]),
                Data::Bool(v) => u8::from(v[r]).to_string(),
                Data::Str(v) => v[r].clone(),
                Data::F16(v) => f16_to_f32(v[r]).to_string(),
            }
        }
    }

    /// An f16's value (normal numbers only: what the tests write).
    fn f16_to_f32(bits: u16) -> f32 {
        let sign = if bits >> 15 == 1 { -1.0 } else { 1.0 };
        let exponent = i32::from((bits >> 10) & 0x1f);
        let mantissa = f32::from(bits & 0x3ff);
        sign * (1.0 + mantissa / 1024.0) * 2f32.powi(exponent - 15)
    }

    /// A column: its name, its type as the schema parser reads it (`{}`
    /// stands for the name), its data, and its null rows.
    #[derive(Clone, Debug)]
    struct Col {
        name: &'static str,
        ty: &'static str,
        data: Data,
        nulls: BTreeSet<usize>,
    }

    fn col(name: &'static str, ty: &'static str, data: Data) -> Col {
        Col { name, ty, data, nulls: BTreeSet::new() }
    }

    /// How a file is written.
    #[derive(Clone, Copy, Debug)]
    struct Layout {
        group_rows: usize,
        compression: Compression,
        dictionary: bool,
        v2: bool,
    }

    const PLAIN: Layout =
        Layout { group_rows: 1000, compression: Compression::UNCOMPRESSED, dictionary: false, v2: false };

    fn write_parquet(path: &Path, cols: &[Col], layout: Layout) {
        let fields: String = cols
            .iter()
            .map(|c| {
                let repetition = if c.nulls.is_empty() { "required" } else { "optional" };
                format!("{repetition} {};\n", c.ty.replacen("{}", c.name, 1))
            })
            .collect();
        let schema = Arc::new(parse_message_type(&format!("message t {{\n{fields}}}")).unwrap());
        let version = if layout.v2 { WriterVersion::PARQUET_2_0 } else { WriterVersion::PARQUET_1_0 };
        let props = WriterProperties::builder()
            .set_compression(layout.compression)
            .set_dictionary_enabled(layout.dictionary)
            .set_writer_version(version)
            .set_write_batch_size(128)
            .set_data_page_row_count_limit(300)
            .build();
        let file = std::fs::File::create(path).unwrap();
        let mut writer = SerializedFileWriter::new(file, schema, Arc::new(props)).unwrap();
        let rows = cols.first().map_or(0, |c| c.data.len());
        for start in (0..rows).step_by(layout.group_rows) {
            let end = (start + layout.group_rows).min(rows);
            let mut group = writer.next_row_group().unwrap();
            for c in cols {
                let mut column = group.next_column().unwrap().unwrap();
                let present: Vec<usize> = (start..end).filter(|r| !c.nulls.contains(r)).collect();
                let defs: Vec<i16> = (start..end).map(|r| i16::from(!c.nulls.contains(&r))).collect();
                let defs = (!c.nulls.is_empty()).then_some(defs.as_slice());
                fn pick<T: Clone>(v: &[T], rows: &[usize]) -> Vec<T> {
                    rows.iter().map(|&r| v[r].clone()).collect()
                }
                let written = match &c.data {
                    Data::I32(v) => column.typed::<Int32Type>().write_batch(&pick(v, &present), defs, None),
                    Data::I64(v) => column.typed::<Int64Type>().write_batch(&pick(v, &present), defs, None),
                    Data::F32(v) => column.typed::<FloatType>().write_batch(&pick(v, &present), defs, None),
                    Data::F64(v) => column.typed::<DoubleType>().write_batch(&pick(v, &present), defs, None),
                    Data::Bool(v) => column.typed::<BoolType>().write_batch(&pick(v, &present), defs, None),
                    Data::Str(v) => {
                        let v: Vec<ByteArray> =
                            pick(v, &present).into_iter().map(|t| t.into_bytes().into()).collect();
                        column.typed::<ByteArrayType>().write_batch(&v, defs, None)
                    }
                    Data::F16(v) => {
                        let v: Vec<FixedLenByteArray> =
                            pick(v, &present).into_iter().map(|b| b.to_le_bytes().to_vec().into()).collect();
                        column.typed::<FixedLenByteArrayType>().write_batch(&v, defs, None)
                    }
                };
                written.unwrap();
                column.close().unwrap();
            }
            group.close().unwrap();
        }
        writer.close().unwrap();
    }

    /// The same rows as `.tns`: coordinates plus one, then the value.
    fn write_tns(path: &Path, coords: &[Col], values: &Col) {
        let rows = values.data.len();
        let mut text = String::new();
        for r in 0..rows {
            for c in coords {
                let v: u64 = c.data.text(r).parse().unwrap();
                text.push_str(&format!("{} ", v + 1));
            }
            text.push_str(&values.data.text(r));
            text.push('\n');
        }
        std::fs::write(path, text).unwrap();
    }

    /// `rows` distinct random indices under `shape` (row-major within each
    /// index), in random order.
    fn indices(shape: &[u64], rows: usize, seed: u64) -> Vec<Vec<u64>> {
        assert!(rows as u64 <= shape.iter().product::<u64>() / 2, "too many rows for the shape");
        let mut rng = csf_testdata::Rng::new(seed);
        let mut seen = BTreeSet::new();
        let mut out = Vec::with_capacity(rows);
        while out.len() < rows {
            let index: Vec<u64> = shape.iter().map(|&d| rng.below(d)).collect();
            if seen.insert(index.clone()) {
                out.push(index);
            }
        }
        out
    }

    /// A coordinate column of dimension `d` of `index`, of the given type.
    fn coordinate(name: &'static str, ty: &'static str, index: &[Vec<u64>], d: usize) -> Col {
        let v = index.iter().map(|i| i[d]);
        let data = match ty {
            "int64 {}" | "int64 {} (INTEGER(64,false))" => Data::I64(v.map(|c| c as i64).collect()),
            _ => Data::I32(v.map(|c| c as i32).collect()),
        };
        col(name, ty, data)
    }

    /// Values of the given type, one a row, some of them zero.
    fn values(name: &'static str, ty: &'static str, rows: usize, seed: u64) -> Col {
        let mut rng = csf_testdata::Rng::new(seed);
        let mut draw = || if rng.below(10) == 0 { 0.0 } else { (rng.next_f64() - 0.3) * 1000.0 };
        let data = match ty {
            "double {}" => Data::F64((0..rows).map(|_| draw()).collect()),
            "float {}" => Data::F32((0..rows).map(|_| draw() as f32).collect()),
            "int32 {}" => Data::I32((0..rows).map(|_| draw() as i32).collect()),
            "int32 {} (INTEGER(16,false))" => {
                Data::I32((0..rows).map(|_| draw().abs() as i32 * 60).collect())
            }
            "int64 {}" => Data::I64((0..rows).map(|_| (draw() * 1e12) as i64).collect()),
            "boolean {}" => Data::Bool((0..rows).map(|_| draw() > 0.0).collect()),
            other => panic!("no values of {other}"),
        };
        col(name, ty, data)
    }

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    /// `convert` of `parquet` and of `tns` (with `--dtype`, and both with
    /// `extra`) give identical bytes, in memory and within a small budget.
    #[track_caller]
    fn same_bytes(dir: &Path, parquet: &Path, tns: &Path, dtype: &str, extra: &[&str]) {
        let want = dir.join("tns.hurray");
        let mut args = vec!["convert", s(tns), "-o", s(&want), "-q"];
        if !extra.contains(&"--dtype") {
            args.extend(["--dtype", dtype]);
        }
        // Less the options of Parquet input alone.
        let mut tns_extra: Vec<&str> = Vec::new();
        let mut rest = extra.iter().copied();
        while let Some(arg) = rest.next() {
            match arg {
                "--one-based" => {}
                "--coords" | "--values" => {
                    rest.next();
                }
                _ => tns_extra.push(arg),
            }
        }
        ok(&[&args[..], &tns_extra[..]].concat());
        let want = std::fs::read(&want).unwrap();
        for budget in [None, Some("64KiB")] {
            let got = dir.join("parquet.hurray");
            let mut args = vec!["convert", s(parquet), "-o", s(&got), "--timings"];
            args.extend(extra);
            if let Some(budget) = budget {
                args.extend(["--memory", budget]);
            }
            let out = ok(&args);
            if budget.is_some() {
                // (An empty file is built in memory, as an empty .tns is.)
                let text = stderr(&out);
                assert!(
                    text.contains("external build within 64.0 KiB") || text.contains("  0 rows"),
                    "{text}"
                );
            }
            assert!(
                std::fs::read(&got).unwrap() == want,
                "{parquet:?} {extra:?} budget {budget:?}: files differ"
            );
        }
    }

    #[test]
    fn parquet_and_tns_convert_to_the_same_bytes() {
        let dir = dir();
        let gzip = Compression::GZIP(GzipLevel::default());
        let zstd = Compression::ZSTD(ZstdLevel::default());
        let brotli = Compression::BROTLI(BrotliLevel::default());
        // The coordinates' types (the rank is their count), the values' type
        // and its dtype, the layout, extra arguments.
        type Case<'a> = (&'a [&'a str], &'a str, &'a str, Layout, &'a [&'a str]);
        let cases: [Case<'_>; 7] = [
            (&["int32 {}"; 3], "double {}", "f64", PLAIN, &[]),
            (
                &["int32 {}", "int32 {} (INTEGER(8,false))", "int64 {}"],
                "float {}",
                "f32",
                Layout { compression: Compression::SNAPPY, dictionary: true, ..PLAIN },
                &["--mode-order", "2,0,1"],
            ),
            (
                &["int64 {}", "int32 {} (INTEGER(8,false))", "int32 {}", "int64 {} (INTEGER(64,false))"],
                "int32 {}",
                "i32",
                Layout { compression: zstd, v2: true, group_rows: 700, ..PLAIN },
                &["--mode-order", "3,1,0,2", "--drop-zeros"],
            ),
            (
                &["int32 {} (INTEGER(8,false))"; 4],
                "int32 {} (INTEGER(16,false))",
                "u16",
                Layout { compression: gzip, dictionary: true, ..PLAIN },
                &["--no-statistics"],
            ),
            (&["int32 {}"; 3], "double {}", "f64", Layout { compression: Compression::LZ4, ..PLAIN }, &[]),
            (
                &["int64 {}"; 3],
                "int64 {}",
                "i64",
                Layout { compression: Compression::LZ4_RAW, v2: true, dictionary: true, ..PLAIN },
                &["--mode-order", "1,2,0"],
            ),
            (
                &["int32 {}"; 4],
                "float {}",
                "f32",
                Layout { compression: brotli, group_rows: 1500, ..PLAIN },
                &["--quantize", "per-block:block=32:i8"],
            ),
        ];
        const NAMES: [&str; 4] = ["i", "j", "k", "l"];
        for (n, (coordinate_types, value_type, dtype, layout, extra)) in cases.into_iter().enumerate() {
            let shape: Vec<u64> = [40, 200, 30, 7][..coordinate_types.len()].to_vec();
            let index = indices(&shape, 6000, n as u64);
            let mut cols: Vec<Col> = coordinate_types
                .iter()
                .enumerate()
                .map(|(d, ty)| coordinate(NAMES[d], ty, &index, d))
                .collect();
            let v = values("v", value_type, index.len(), 100 + n as u64);
            let (parquet, tns) = (dir.path().join("t.parquet"), dir.path().join("t.tns"));
            write_tns(&tns, &cols, &v);
            cols.push(v);
            write_parquet(&parquet, &cols, layout);
            same_bytes(dir.path(), &parquet, &tns, dtype, extra);
        }
    }

    #[test]
    fn duplicates_are_merged_as_for_tns_and_refused_by_row() {
        let dir = dir();
        let mut index = indices(&[20, 20, 20], 3000, 5);
        // Rows 2999 and 3999 repeat rows 10 and 1000, in another row group.
        let repeats: Vec<Vec<u64>> = (0..1000).map(|r| index[(r * 7) % 3000].clone()).collect();
        index.extend(repeats);
        let mut cols: Vec<Col> =
            (0..3).map(|d| coordinate(["a", "b", "c"][d], "int32 {}", &index, d)).collect();
        let v = values("val", "int32 {}", index.len(), 9);
        let (parquet, tns) = (dir.path().join("d.parquet"), dir.path().join("d.tns"));
        write_tns(&tns, &cols, &v);
        cols.push(v);
        write_parquet(&parquet, &cols, Layout { group_rows: 1200, ..PLAIN });
        for policy in ["sum", "last", "first"] {
            same_bytes(dir.path(), &parquet, &tns, "i32", &["--duplicates", policy]);
        }
        let out = dir.path().join("x.hurray");
        for extra in [&[][..], &["--memory", "64KiB"]] {
            let run = hurray([&["convert", s(&parquet), "-o", s(&out)][..], extra].concat());
            assert_eq!(run.status.code(), Some(1));
            // `hurray: d.parquet: rows A and B hold the same coordinates (X,Y,Z); ...`: so they do.
            let text = stderr(&run);
            let (_, rest) = text.split_once("rows ").expect(&text);
            let (a, rest) = rest.split_once(" and ").unwrap();
            let (b, rest) = rest.split_once(" hold the same coordinates (").unwrap();
            let (coords, _) = rest.split_once(')').unwrap();
            let coords: Vec<u64> = coords.split(',').map(|c| c.parse().unwrap()).collect();
            let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
            assert!(a < b && index[a] == coords && index[b] == coords, "{text}");
            assert!(text.contains("--duplicates sum|last|first merges duplicates"), "{text}");
        }
        assert!(!out.exists());
    }

    #[test]
    fn columns_are_chosen_by_name_or_by_the_defaults() {
        let dir = dir();
        let index = indices(&[9, 10, 12], 500, 11);
        let (i, j, k) = (
            coordinate("i", "int32 {}", &index, 0),
            coordinate("j", "int64 {}", &index, 1),
            coordinate("k", "int32 {} (INTEGER(16,true))", &index, 2),
        );
        let value = values("value", "double {}", index.len(), 3);
        let weight = values("weight", "float {}", index.len(), 4);
        let (parquet, tns) = (dir.path().join("c.parquet"), dir.path().join("c.tns"));
        // The values column is found by its name, wherever it is; a float
        // column is not a coordinate; a pandas index is neither.
        let pandas_index = col("__index_level_0__", "int64 {}", Data::I64((0..500).collect()));
        let cols = [i.clone(), value.clone(), j.clone(), weight.clone(), k.clone(), pandas_index];
        write_parquet(&parquet, &cols, PLAIN);
        write_tns(&tns, &[i.clone(), j.clone(), k.clone()], &value);
        same_bytes(dir.path(), &parquet, &tns, "f64", &[]);
        // --coords picks and orders them; --values another column.
        write_tns(&tns, &[k.clone(), i.clone(), j.clone()], &weight);
        same_bytes(dir.path(), &parquet, &tns, "f32", &["--coords", "k,i,j", "--values", "weight"]);
        // Without a column of those names, the values are the last column;
        // --one-based reads coordinates as .tns holds them.
        let one_based = |c: &Col| {
            let data = match &c.data {
                Data::I32(v) => Data::I32(v.iter().map(|x| x + 1).collect()),
                Data::I64(v) => Data::I64(v.iter().map(|x| x + 1).collect()),
                other => panic!("{other:?}"),
            };
            Col { data, ..c.clone() }
        };
        let count = values("count", "int32 {} (INTEGER(16,false))", index.len(), 5);
        write_parquet(&parquet, &[one_based(&i), one_based(&j), one_based(&k), count.clone()], PLAIN);
        write_tns(&tns, &[i.clone(), j.clone(), k.clone()], &count);
        same_bytes(dir.path(), &parquet, &tns, "u16", &["--one-based"]);
        let out = dir.path().join("x.hurray");
        write_parquet(&parquet, &[i.clone(), j.clone(), k.clone(), count.clone()], PLAIN);
        refused(&["convert", s(&parquet), "-o", s(&out), "--one-based"], 1, "coordinate 0 with --one-based");
        // --dtype converts, by the .tns rules.
        same_bytes(dir.path(), &parquet, &tns, "f32", &["--dtype", "f32"]);
        let Data::I32(counts) = &count.data else { panic!() };
        let row = counts.iter().position(|&c| c > 127).unwrap();
        let message = format!("row {row}, column 'count': value {} is outside the range of i8", counts[row]);
        refused(&["convert", s(&parquet), "-o", s(&out), "--dtype", "i8"], 1, &message);
    }

    #[test]
    fn float16_and_boolean_values() {
        let dir = dir();
        let index = indices(&[5, 5, 5], 60, 2);
        let coords: Vec<Col> =
            (0..3).map(|d| coordinate(["x", "y", "z"][d], "int32 {}", &index, d)).collect();
        let bits: Vec<u16> = (0..60).map(|r| 0x3c00 + r * 37).collect();
        let half = col("v", "fixed_len_byte_array(2) {} (FLOAT16)", Data::F16(bits));
        let (parquet, tns) = (dir.path().join("h.parquet"), dir.path().join("h.tns"));
        write_parquet(&parquet, &[coords.clone(), vec![half.clone()]].concat(), PLAIN);
        write_tns(&tns, &coords, &half);
        same_bytes(dir.path(), &parquet, &tns, "f32", &["--dtype", "f32"]);
        let out = dir.path().join("x.hurray");
        refused(
            &["convert", s(&parquet), "-o", s(&out)],
            2,
            "is FIXED_LEN_BYTE_ARRAY (FLOAT16), and convert does not write f16",
        );
        let flags = values("v", "boolean {}", 60, 8);
        write_parquet(&parquet, &[coords.clone(), vec![flags.clone()]].concat(), PLAIN);
        write_tns(&tns, &coords, &flags);
        same_bytes(dir.path(), &parquet, &tns, "bool", &["--duplicates", "error"]);
    }

    /// A valid rank-3 file of 3000 rows in 3 row groups, snappy.
    fn valid(dir: &Path) -> (PathBuf, Vec<u8>) {
        let index = indices(&[10, 10, 100], 3000, 1);
        let mut cols: Vec<Col> =
            (0..3).map(|d| coordinate(["i", "j", "k"][d], "int32 {}", &index, d)).collect();
        cols.push(values("v", "double {}", 3000, 1));
        let path = dir.join("valid.parquet");
        write_parquet(&path, &cols, Layout { compression: Compression::SNAPPY, ..PLAIN });
        let bytes = std::fs::read(&path).unwrap();
        (path, bytes)
    }

    #[test]
    fn malformed_files_are_refused_cleanly() {
        let dir = dir();
        let (_, bytes) = valid(dir.path());
        let bad = dir.path().join("bad.parquet");
        let out = dir.path().join("x.hurray");
        let convert = ["convert", s(&bad), "-o", s(&out)];
        let footer_len = bytes.len() - 8;
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (bytes[..bytes.len() / 2].to_vec(), "not a readable Parquet file"),
            (bytes[..bytes.len() - 3].to_vec(), "not a readable Parquet file"),
            (bytes[..3].to_vec(), "not a readable Parquet file"),
            (Vec::new(), "not a readable Parquet file"),
            ([&bytes[..bytes.len() - 4], b"PAR2"].concat(), "not a readable Parquet file"),
            (
                [&bytes[..footer_len], &u32::MAX.to_le_bytes()[..], b"PAR1"].concat(),
                "not a readable Parquet file",
            ),
            (
                [&bytes[..footer_len], &((footer_len as u32) - 100).to_le_bytes()[..], b"PAR1"].concat(),
                "not a readable Parquet file",
            ),
        ];
        for (file, message) in cases {
            std::fs::write(&bad, &file).unwrap();
            refused(&convert, 1, message);
            refused(&[&convert[..], &["--memory", "64KiB"]].concat(), 1, message);
        }
        // Damage inside the pages is found when they are read, naming the
        // row group and the column, and never panics: bytes of the first
        // row group's pages, overwritten in turn.
        for at in (4..bytes.len() / 3).step_by(bytes.len() / 3 / 120) {
            let mut file = bytes.clone();
            file[at] ^= 0x5a;
            std::fs::write(&bad, &file).unwrap();
            let run = hurray(convert);
            assert!(matches!(run.status.code(), Some(0 | 1)), "byte {at}: {}", stderr(&run));
            assert!(stderr(&run).lines().count() <= 1, "byte {at}: {}", stderr(&run));
        }
    }

    #[test]
    fn nulls_negatives_and_shapes_are_refused_naming_the_row() {
        let dir = dir();
        let index = indices(&[10, 10, 100], 3000, 1);
        let mut cols: Vec<Col> =
            (0..3).map(|d| coordinate(["i", "j", "k"][d], "int32 {}", &index, d)).collect();
        cols.push(values("v", "double {}", 3000, 1));
        let file = dir.path().join("n.parquet");
        let out = dir.path().join("x.hurray");
        let convert = ["convert", s(&file), "-o", s(&out)];
        let budget = [&convert[..], &["--memory", "64KiB"]].concat();
        // A null in a coordinate, in the third row group: its row counts from the file's start.
        let mut with_null = cols.clone();
        with_null[1].nulls.insert(2345);
        write_parquet(&file, &with_null, PLAIN);
        refused(&convert, 1, "row 2345, column 'j': null");
        refused(&budget, 1, "row 2345, column 'j': null");
        // And in the values.
        let mut with_null = cols.clone();
        with_null[3].nulls.extend([17, 18]);
        write_parquet(&file, &with_null, PLAIN);
        refused(&convert, 1, "row 17, column 'v': null");
        // An optional column without nulls is read.
        let mut optional = cols.clone();
        optional[0].nulls.insert(usize::MAX);
        write_parquet(&file, &optional, PLAIN);
        ok(&convert);
        std::fs::remove_file(&out).unwrap();
        // A negative coordinate.
        let mut negative = cols.clone();
        let Data::I32(k) = &mut negative[2].data else { panic!() };
        k[1500] = -4;
        write_parquet(&file, &negative, PLAIN);
        refused(&convert, 1, "row 1500, column 'k': coordinate -4 is negative");
        refused(&budget, 1, "row 1500, column 'k': coordinate -4 is negative");
        // A coordinate outside --shape.
        write_parquet(&file, &cols, PLAIN);
        let Data::I32(k) = &cols[2].data else { panic!() };
        let row = k.iter().position(|&c| c >= 50).unwrap();
        let shape = [&convert[..], &["--shape", "10,10,50"]].concat();
        refused(
            &shape,
            1,
            &format!("row {row}, column 'k': coordinate {} is outside --shape's extent 50", k[row]),
        );
        refused(&[&shape[..], &["--memory", "64KiB"]].concat(), 1, &format!("row {row}, column 'k'"));
        assert!(!out.exists());
    }

    #[test]
    fn unusable_columns_are_usage_errors_listing_the_columns() {
        let dir = dir();
        let index = indices(&[3, 3, 3], 10, 1);
        let mut cols: Vec<Col> =
            (0..3).map(|d| coordinate(["i", "j", "k"][d], "int32 {}", &index, d)).collect();
        cols.push(col("name", "binary {} (STRING)", Data::Str((0..10).map(|r| format!("n{r}")).collect())));
        cols.push(values("v", "double {}", 10, 1));
        let file = dir.path().join("u.parquet");
        write_parquet(&file, &cols, PLAIN);
        let out = dir.path().join("x.hurray");
        let convert = ["convert", s(&file), "-o", s(&out)];
        // The string column is no default coordinate.
        ok(&convert);
        refused(
            &[&convert[..], &["--coords", "i,name,k"]].concat(),
            2,
            "--coords: column 'name' is BYTE_ARRAY (STRING): coordinates must be integer columns",
        );
        refused(
            &[&convert[..], &["--coords", "i,x,k"]].concat(),
            2,
            "--coords: no column 'x'; the file's columns: i: INT32, j: INT32, k: INT32, name: BYTE_ARRAY (STRING), v: DOUBLE",
        );
        refused(&[&convert[..], &["--values", "w"]].concat(), 2, "--values: no column 'w'");
        refused(
            &[&convert[..], &["--values", "name"]].concat(),
            2,
            "the values column 'name' is BYTE_ARRAY (STRING)",
        );
        refused(&[&convert[..], &["--coords", "i,j"]].concat(), 2, "2 coordinate columns [i, j]");
        refused(&[&convert[..], &["--coords", "i,j,i"]].concat(), 2, "'i' is named twice");
        refused(
            &[&convert[..], &["--coords", "i,j,v", "--values", "v"]].concat(),
            2,
            "'v' is the values column",
        );
        refused(
            &[&convert[..], &["--shape", "3,3,3,3"]].concat(),
            2,
            "--shape has 4 dimensions, but there are 3",
        );
        refused(&[&convert[..], &["--mode-order", "0,1,2,3"]].concat(), 1, "--mode-order has 4 entries");
        // Two integer columns are too few by default, and the message says why.
        write_parquet(&file, &[cols[0].clone(), cols[1].clone(), cols[4].clone()], PLAIN);
        refused(&convert, 2, "name them with --coords");
        // Parquet's options on a .tns input.
        let tns = dir.path().join("t.tns");
        std::fs::write(&tns, "1 1 1 1\n").unwrap();
        refused(&["convert", s(&tns), "-o", s(&out), "--values", "v"], 2, "apply to Parquet input only");
    }

    #[test]
    fn an_empty_file_needs_a_shape_as_an_empty_tns_does() {
        let dir = dir();
        let cols: Vec<Col> =
            ["i", "j", "k"].into_iter().map(|n| col(n, "int32 {}", Data::I32(Vec::new()))).collect();
        let cols = [cols, vec![col("v", "float {}", Data::F32(Vec::new()))]].concat();
        let file = dir.path().join("e.parquet");
        write_parquet(&file, &cols, PLAIN);
        let out = dir.path().join("x.hurray");
        for extra in [&[][..], &["--memory", "64KiB"]] {
            refused(
                &[&["convert", s(&file), "-o", s(&out)][..], extra].concat(),
                1,
                "no rows in the file: give --shape to write an empty tensor",
            );
        }
        let tns = dir.path().join("e.tns");
        std::fs::write(&tns, "").unwrap();
        same_bytes(dir.path(), &file, &tns, "f32", &["--shape", "3,4,5"]);
    }

    #[test]
    fn a_parquet_file_is_recognised_by_its_magic_whatever_its_name() {
        let dir = dir();
        let (path, _) = valid(dir.path());
        let renamed = dir.path().join("data.bin");
        std::fs::rename(&path, &renamed).unwrap();
        let out = dir.path().join("x.hurray");
        let run = ok(&["convert", s(&renamed), "-o", s(&out), "--timings"]);
        assert!(
            stderr(&run).contains("Parquet, 3 row groups, columns i, j, k -> v (DOUBLE)"),
            "{}",
            stderr(&run)
        );
    }
}
