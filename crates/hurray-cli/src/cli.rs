//! The command line, as clap parses it. Malformed arguments (a shape that is
//! not a list of integers, a mode order that is not a permutation, an
//! unknown dtype) are rejected here, so they exit 2 like every usage error.

use csf_build::Quantize;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use hurray_format::limits::RankError;
use hurray_format::ElementType;

/// Convert, inspect, validate, query and dump Hurray CSF sparse tensors.
#[derive(Debug, Parser)]
#[command(name = "hurray", version, about, max_term_width = 100)]
#[command(after_help = "Exit status: 0 success, 1 invalid or unreadable data, 2 usage error.")]
pub struct Cli {
    /// No progress bars and no notes on stderr (errors are still reported).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Worker threads (default: one per core; RAYON_NUM_THREADS also sets it).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Convert a FROSTT .tns file (gzip read transparently) or a Parquet file to a Hurray CSF file.
    Convert(ConvertArgs),
    /// Describe a file: element type, shape, mode order, nnz, levels, sizes.
    Inspect(InspectArgs),
    /// Check a file against every rule of the CSF spec; exit 1 when it breaks one.
    ///
    /// What validation does not detect: the format has no checksum, so damage
    /// that leaves a well-formed tensor passes. A flipped bit inside the
    /// values buffer (a different value of the same type), a shape extent
    /// changed to another that still holds every coordinate, or a changed
    /// device tag gives a file that is valid, only not the one written. Keep
    /// a hash beside the file (sha256sum, say) to detect corruption in storage
    /// or transit.
    Validate(ValidateArgs),
    /// Print the value at each 0-based logical index (0 for an implicit zero).
    Get(GetArgs),
    /// Print the non-zeros in iteration order, as .tns or JSON; --prefix: only those under a prefix.
    Dump(DumpArgs),
    /// CP decomposition by alternating least squares: prints the fit per
    /// iteration and writes the weights and factor matrices as .npy files.
    Cpd(CpdArgs),
    /// Join files holding consecutive key ranges of one tensor (a cluster
    /// build's parts) into one file, in one streaming pass.
    Concat(ConcatArgs),
}

/// `hurray concat`.
#[derive(Debug, Args)]
pub struct ConcatArgs {
    /// The parts, in storage order: each holds keys above the previous one's
    /// (a level-0 coordinate may continue into the next part). All share the
    /// first's shape, mode order and element type, unquantized.
    #[arg(value_name = "PART", required = true)]
    pub parts: Vec<PathBuf>,
    /// The Hurray file to write (atomically: a temporary file is renamed into place).
    #[arg(short, long, value_name = "OUT.hurray")]
    pub output: PathBuf,
    /// Quantize the joined values (the schemes of `convert --quantize`).
    #[arg(long, value_name = "SCHEME[:OPTION...]", value_parser = parse_quantize)]
    pub quantize: Option<Quantize>,
    /// Leave out the statistics section (nnz, sparsity, min, max).
    #[arg(long)]
    pub no_statistics: bool,
    /// Where the output's arrays are spilled while joining (default: the output's directory).
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
}

/// `hurray convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The input: a FROSTT .tns file (one non-zero a line, 1-based coordinates
    /// then the value), or a Parquet file (named *.parquet, *.parq or *.pq, or
    /// starting with PAR1): a row per non-zero, a column per coordinate
    /// (0-based) and a values column (see --coords and --values).
    #[arg(value_name = "IN.tns|IN.parquet")]
    pub input: PathBuf,
    /// The Hurray file to write (atomically: a temporary file is renamed into place).
    #[arg(short, long, value_name = "OUT.hurray")]
    pub output: PathBuf,
    /// The shape; by default the largest coordinate of each dimension.
    #[arg(long, value_name = "D0,D1,...", value_parser = parse_shape)]
    pub shape: Option<Shape>,
    /// Which logical dimension each tree level stores: identity (the default),
    /// auto (the smallest tree), or a permutation such as 2,0,1.
    #[arg(long, value_name = "identity|auto|P0,P1,...", default_value = "identity", value_parser = parse_mode_order)]
    pub mode_order: ModeOrderArg,
    /// Element type of the values. For .tns the default is f64, which keeps
    /// every decimal value of the file exactly as `dump` prints it back; for
    /// Parquet, the values column's own type (int8 -> i8, uint16 -> u16,
    /// float -> f32, double -> f64, boolean -> bool; float16 needs f32 or f64).
    #[arg(long, value_name = "TYPE", value_parser = parse_dtype)]
    pub dtype: Option<ElementType>,
    /// Parquet: the coordinate columns, in dimension order (the rank is their
    /// count). Default: every integer column but the values column, in file order.
    #[arg(long, value_name = "NAME,NAME,...", value_delimiter = ',')]
    pub coords: Option<Vec<String>>,
    /// Parquet: the values column. Default: the column named value, values, val
    /// or v, else the last column that is not a coordinate.
    #[arg(long, value_name = "NAME")]
    pub values: Option<String>,
    /// Parquet: the coordinates are 1-based (as in .tns), not 0-based.
    #[arg(long)]
    pub one_based: bool,
    /// What to do with two lines at the same index.
    #[arg(long, value_enum, default_value_t = DuplicatesArg::Error)]
    pub duplicates: DuplicatesArg,
    /// Drop lines whose value is zero (kept by default: they are stored values).
    #[arg(long)]
    pub drop_zeros: bool,
    /// Leave out the statistics section (nnz, sparsity, min, max).
    #[arg(long)]
    pub no_statistics: bool,
    /// Quantize the values: per-tensor, per-channel:axis=N, per-block[:block=N],
    /// nf4[:block=N] or mxfp, with options after colons: a stored type (i8, u8,
    /// i4, u4, i16, u16, i32, u32, f8e4m3, f8e5m2; MXFP also f6e2m3, f6e3m2,
    /// f4e2m1) and `zp` for asymmetric integers with zero points. Examples:
    /// `per-block:block=32:i4`, `per-channel:axis=1:u8:zp`, `mxfp:f4e2m1`.
    #[arg(long, value_name = "SCHEME[:OPTION...]", value_parser = parse_quantize)]
    pub quantize: Option<Quantize>,
    /// Print the time of each phase (read, parse, build, write) on stderr.
    #[arg(long)]
    pub timings: bool,
    /// Build within this much memory (e.g. 512MiB, 4GiB): the input is read as a
    /// stream and its entries spilled to key-range partitions on disk, each built
    /// alone; the file is the one an in-memory build writes. Without it, the
    /// external build is used when the input would not fit in available memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory: Option<u64>,
    /// Where the external build's spill files go (default: the output's directory).
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
}

/// `hurray inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The Hurray file.
    pub file: PathBuf,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Describe the file even if it breaks storage invariants.
    #[arg(long)]
    pub permissive: bool,
}

/// `hurray cpd`.
#[derive(Debug, Args)]
pub struct CpdArgs {
    /// The Hurray file.
    pub file: PathBuf,
    /// The number of rank-one components.
    #[arg(short, long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub rank: u32,
    /// The most iterations.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub iters: usize,
    /// Stop when the fit changes by less than this in an iteration.
    #[arg(long, value_name = "T", default_value_t = 1e-4)]
    pub tol: f64,
    /// The seed of the random initial factors (uniform in [0, 1)).
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// CSF trees to hold: 1 (the file's own), or 2 (a second with the leaf
    /// mode at its root: faster, the file's index arrays once more in memory).
    #[arg(long, value_name = "1|2", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub trees: u8,
    /// The factors' element type: f64 (the default) or f32.
    #[arg(long, value_name = "f64|f32", default_value = "f64", value_parser = ["f64", "f32"])]
    pub precision: String,
    /// Print each iteration's seconds and each mode's MTTKRP seconds on stderr.
    #[arg(long)]
    pub timings: bool,
    /// Write weights.npy and factor_0.npy .. factor_{N-1}.npy (I_n x R, C
    /// order) into this directory, created if missing; each file is written
    /// atomically, all of them only once the decomposition is complete.
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Read the file even if it breaks storage invariants (the kernels stay
    /// safe; the factors then mean nothing).
    #[arg(long)]
    pub permissive: bool,
}

/// `hurray validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The Hurray file.
    pub file: PathBuf,
    /// Check only what safe reading needs (csf-layout's permissive mode).
    #[arg(long)]
    pub permissive: bool,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Stop after this many violations.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_errors: u32,
}

/// `hurray get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The Hurray file.
    pub file: PathBuf,
    /// 0-based logical indices, one argument each: I0,I1,...
    #[arg(value_name = "I0,I1,...", required = true, value_parser = parse_index)]
    pub indices: Vec<Index>,
    /// Read without the strict checks.
    #[arg(long)]
    pub permissive: bool,
}

/// `hurray dump`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The Hurray file.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DumpFormat::Tns)]
    pub format: DumpFormat,
    /// Write here (atomically) instead of stdout.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Read without the strict checks.
    #[arg(long)]
    pub permissive: bool,
    /// Print only the entries under this prefix: their first k coordinates (k below the rank)
    /// in STORAGE order, that is of dimensions mode_order[0..k] (`inspect` shows the mode
    /// order; with the default identity order, the first k logical dimensions), 0-based like
    /// `get`'s indices. The entries are found by binary search and printed whole, 1-based like
    /// every dump line. A prefix no entry has prints none. --format tns only.
    #[arg(long, value_name = "I0,I1,...", value_parser = parse_prefix)]
    pub prefix: Option<Prefix>,
}

/// `dump --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DumpFormat {
    /// 1-based coordinates then the value, one non-zero a line (FROSTT).
    Tns,
    /// One JSON object: shape, mode order, levels (pos, crd), values.
    Json,
}

/// `convert --duplicates`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DuplicatesArg {
    /// Fail, naming both lines.
    Error,
    /// Add the values (integers wrap; bool is OR).
    Sum,
    /// Keep the value of the last line.
    Last,
    /// Keep the value of the first line.
    First,
}

/// `convert --mode-order`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModeOrderArg {
    /// `[0, 1, ..., rank-1]`.
    Identity,
    /// The order whose tree stores the fewest bytes.
    Auto,
    /// This permutation.
    Explicit(Vec<u32>),
}

/// A `--shape`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape(pub Vec<u64>);

/// A logical index given to `get`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index(pub Vec<u64>);

/// A prefix of storage-order coordinates given to `dump --prefix`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefix(pub Vec<u64>);

fn parse_list<T: std::str::FromStr>(text: &str, what: &str) -> Result<Vec<T>, String> {
    text.split(',')
        .map(|part| {
            let part = part.trim();
            part.parse::<T>().map_err(|_| format!("'{part}' is not a non-negative integer ({what})"))
        })
        .collect()
}

fn parse_shape(text: &str) -> Result<Shape, String> {
    let shape: Vec<u64> = parse_list(text, "expected D0,D1,...")?;
    RankError::check(shape.len()).map_err(|e| format!("{} dimensions: {e}", shape.len()))?;
    Ok(Shape(shape))
}

/// A byte count: an integer with an optional unit (B, KiB, MiB, GiB, TiB; KB,
/// MB, GB, TB are decimal).
fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| format!("expected a size such as 512MiB, got `{text}`"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!("unknown size unit `{other}` (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"))
        }
    };
    let bytes = number.checked_mul(scale).ok_or_else(|| format!("`{text}` is too large"))?;
    if bytes < 1 << 16 {
        return Err(format!("--memory {text} is below the minimum of 64KiB"));
    }
    Ok(bytes)
}

fn parse_index(text: &str) -> Result<Index, String> {
    parse_list(text, "expected I0,I1,...").map(Index)
}

fn parse_prefix(text: &str) -> Result<Prefix, String> {
    parse_list(text, "expected I0,I1,...: 0-based coordinates in storage order").map(Prefix)
}

fn parse_mode_order(text: &str) -> Result<ModeOrderArg, String> {
    match text {
        "identity" => return Ok(ModeOrderArg::Identity),
        "auto" => return Ok(ModeOrderArg::Auto),
        _ => {}
    }
    let order: Vec<u32> = parse_list(text, "expected identity, auto or a permutation P0,P1,...")?;
    if hurray_format::limits::permutation_faults(&order).next().is_some() {
        return Err(format!("{text} is not a permutation of 0..{}", order.len()));
    }
    Ok(ModeOrderArg::Explicit(order))
}

/// The scheme syntax is csf-build's (`Quantize`'s `FromStr`), shared with the Python package.
fn parse_quantize(text: &str) -> Result<Quantize, String> {
    text.parse().map_err(|e: csf_build::ParseQuantizeError| e.to_string())
}

/// The element types `convert` writes.
pub const CONVERT_TYPES: &[ElementType] = &[
    ElementType::F64,
    ElementType::F32,
    ElementType::I64,
    ElementType::I32,
    ElementType::I16,
    ElementType::I8,
    ElementType::U64,
    ElementType::U32,
    ElementType::U16,
    ElementType::U8,
    ElementType::Bool,
];

fn parse_dtype(text: &str) -> Result<ElementType, String> {
    let names = || CONVERT_TYPES.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ");
    match ElementType::from_name(text) {
        Some(t) if CONVERT_TYPES.contains(&t) => Ok(t),
        Some(t) => Err(format!("unsupported --dtype for convert: {t} (supported: {})", names())),
        None => Err(format!("unknown element type '{text}' (supported: {})", names())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn argument_values_are_checked() {
        assert_eq!(parse_shape("2,3,4"), Ok(Shape(vec![2, 3, 4])));
        assert!(parse_shape("2,3").unwrap_err().contains("rank >= 3"));
        assert!(parse_shape("2,x,4").is_err());
        assert_eq!(parse_mode_order("auto"), Ok(ModeOrderArg::Auto));
        assert_eq!(parse_mode_order("2,0,1"), Ok(ModeOrderArg::Explicit(vec![2, 0, 1])));
        assert!(parse_mode_order("0,0,1").unwrap_err().contains("not a permutation"));
        assert!(parse_mode_order("0,1,3").is_err());
        assert_eq!(parse_dtype("f32"), Ok(ElementType::F32));
        assert!(parse_dtype("f16").unwrap_err().contains("unsupported --dtype for convert"));
        assert!(parse_dtype("float").unwrap_err().contains("unknown element type"));
        assert_eq!(parse_index("0, 1,2"), Ok(Index(vec![0, 1, 2])));
        assert_eq!(parse_prefix("1"), Ok(Prefix(vec![1])));
        assert!(parse_prefix("").unwrap_err().contains("storage order"));
        assert!(parse_prefix("1,-2").is_err());
        assert!(parse_index("a,b").is_err());
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("2 gb"), Ok(2_000_000_000));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert!(parse_size("1KiB").unwrap_err().contains("minimum"));
        assert!(parse_size("1PiB").unwrap_err().contains("unknown size unit"));
        assert!(parse_size("99999999999TiB").unwrap_err().contains("too large"));
        assert!(parse_size("GiB").is_err());
    }
}
