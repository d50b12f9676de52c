//! Test and benchmark data for hurray-csf (not published).
//!
//! - [`Rng`]: a small seeded generator (SplitMix64), so every synthetic tensor
//!   is reproducible from its seed on any machine.
//! - [`synthetic`]: uniform and power-law [`TestTensor`]s (coordinate lists) of any rank.
//! - [`reference_csf`]: the obvious CSF builder (sort tuples, then build the
//!   levels), used as the oracle in tests and the baseline in benchmarks.
//! - [`read_tns`] / [`shared_data`]: the real FROSTT tensors in `../shared/data`,
//!   when that folder exists (tests must pass without it).
//! - [`corpus`]: the malformed-file corpus, each file with its expected verdict.
//! - [`tree`]: the owned CSF [`Tree`] the decoder crates' tests edit, view and
//!   encode, the byte helpers they share, and the `per_tensor` quantization
//!   fixture.

pub mod corpus;
pub mod tree;

pub use tree::Tree;

pub mod alloc_count;

/// The CPU time of the whole process (all threads), which a loaded machine
/// does not inflate the way it does wall-clock time; zero where the clock is
/// unavailable. The benchmarks and profiling examples share it.
pub fn process_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable `timespec`; `clock_gettime` only writes it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return std::time::Duration::ZERO;
    }
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// SplitMix64: tiny, fast, and good enough for test data.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform float in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform integer in `[0, n)` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// How coordinates are drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    /// Every coordinate uniform over its extent.
    Uniform,
    /// Coordinate `floor(extent * u^skew)` for uniform `u`: a few huge slices
    /// near 0 and a long tail of tiny ones, like real data (skew 2..4).
    PowerLaw {
        /// The exponent; 1 is uniform.
        skew: f64,
    },
}

/// A test tensor as a coordinate list (COO, not `csf_build::Coo`, which
/// borrows its arrays): `indices` holds `rank` coordinates per entry,
/// row-major, and each entry has an `f64` value.
#[derive(Clone, Debug, PartialEq)]
pub struct TestTensor {
    /// The extent of each dimension; its length is the rank.
    pub shape: Vec<u64>,
    /// `rank` coordinates per entry, entry after entry.
    pub indices: Vec<u64>,
    /// One value per entry, in entry order.
    pub values: Vec<f64>,
}

impl TestTensor {
    /// The rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The number of entries (duplicates included).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Entry `i`'s coordinates.
    #[allow(clippy::should_implement_trait)]
    pub fn index(&self, i: usize) -> &[u64] {
        &self.indices[i * self.rank()..(i + 1) * self.rank()]
    }
}

/// `nnz` random entries (duplicates possible) over `shape`, from `seed`.
/// Values are small non-zero integers, exact in every float type.
pub fn synthetic(shape: &[u64], nnz: usize, distribution: Distribution, seed: u64) -> TestTensor {
    let mut rng = Rng::new(seed);
    let mut indices = Vec::with_capacity(nnz * shape.len());
    let mut values = Vec::with_capacity(nnz);
    for _ in 0..nnz {
        for &extent in shape {
            let c = match distribution {
                Distribution::Uniform => rng.below(extent),
                Distribution::PowerLaw { skew } => {
                    ((extent as f64 * rng.next_f64().powf(skew)) as u64).min(extent - 1)
                }
            };
            indices.push(c);
        }
        values.push((rng.below(255) + 1) as f64);
    }
    TestTensor { shape: shape.to_vec(), indices, values }
}

/// The arrays of a CSF tensor: `levels[L] = (pos_L, crd_L)`, values in leaf order.
#[derive(Clone, Debug, PartialEq)]
pub struct CsfArrays {
    /// The shape.
    pub shape: Vec<u64>,
    /// The mode order.
    pub mode_order: Vec<u32>,
    /// `(pos_L, crd_L)` per level.
    pub levels: Vec<(Vec<u64>, Vec<u64>)>,
    /// One value per leaf.
    pub values: Vec<f64>,
}

impl CsfArrays {
    /// The number of stored values.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// The values as little-endian `f32` bytes.
    pub fn values_f32_le(&self) -> Vec<u8> {
        self.values.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect()
    }

    /// The values as little-endian `f64` bytes.
    pub fn values_f64_le(&self) -> Vec<u8> {
        self.values.iter().flat_map(|&v| v.to_le_bytes()).collect()
    }
}

/// The obvious CSF builder: sort the entries by their storage-order tuple
/// (later duplicates win), then emit each level. Slow and simple on purpose.
pub fn reference_csf(coo: &TestTensor, mode_order: &[u32]) -> CsfArrays {
    let rank = coo.rank();
    // Each entry's storage-order tuple, made once: a tuple made per
    // comparison (two allocations each) made building a few hundred entries
    // take minutes under Miri.
    let width = mode_order.len();
    let keys: Vec<u64> =
        (0..coo.len()).flat_map(|i| mode_order.iter().map(move |&d| coo.index(i)[d as usize])).collect();
    let key = |i: usize| &keys[i * width..(i + 1) * width];
    let mut order: Vec<usize> = (0..coo.len()).collect();
    order.sort_by(|&a, &b| key(a).cmp(key(b))); // stable: equal keys keep input order
    let mut entries: Vec<(&[u64], f64)> = Vec::with_capacity(order.len());
    for i in order {
        let k = key(i);
        match entries.last_mut() {
            Some(last) if last.0 == k => last.1 = coo.values[i],
            _ => entries.push((k, coo.values[i])),
        }
    }
    // pos_L[p + 1] - pos_L[p] counts the children of node p of level L - 1;
    // a node is opened at every level at or below where an entry's path
    // leaves the previous entry's.
    let mut levels: Vec<(Vec<u64>, Vec<u64>)> = (0..rank).map(|_| (vec![0], Vec::new())).collect();
    let mut prev: Option<&[u64]> = None;
    for &(k, _) in &entries {
        let split = prev.map_or(0, |p| p.iter().zip(k).take_while(|(a, b)| a == b).count());
        for (level, &coord) in k.iter().enumerate().skip(split) {
            let (pos, crd) = &mut levels[level];
            crd.push(coord);
            if level > split || pos.len() == 1 {
                // First child of a node opened at level - 1 (or of the root).
                pos.push(0);
            }
            *pos.last_mut().expect("pos starts non-empty") += 1;
        }
        prev = Some(k);
    }
    for (level, (pos, _)) in levels.iter_mut().enumerate() {
        if level == 0 && pos.len() == 1 {
            pos.push(0); // the root's slice, empty
        }
        for i in 1..pos.len() {
            pos[i] += pos[i - 1];
        }
    }
    CsfArrays {
        shape: coo.shape.clone(),
        mode_order: mode_order.to_vec(),
        levels,
        values: entries.into_iter().map(|(_, v)| v).collect(),
    }
}

/// Reads a FROSTT `.tns` file (gzip when the name ends in `.gz`): 1-based
/// coordinates then a value per line, `#` comments and blank lines skipped.
/// The shape is the maximum coordinate per mode.
pub fn read_tns(path: &Path) -> std::io::Result<TestTensor> {
    let file = std::fs::File::open(path)?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let bad = |line: usize, what: &str| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}:{line}: {what}", path.display()))
    };
    let mut coo = TestTensor { shape: Vec::new(), indices: Vec::new(), values: Vec::new() };
    for (n, line) in BufReader::new(reader).lines().enumerate() {
        let line = line?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let rank = fields.len() - 1;
        if coo.shape.is_empty() {
            coo.shape = vec![0; rank];
        } else if rank != coo.shape.len() {
            return Err(bad(n + 1, "wrong number of fields"));
        }
        for (d, f) in fields[..rank].iter().enumerate() {
            let c: u64 = f.parse().map_err(|_| bad(n + 1, "bad coordinate"))?;
            let c = c.checked_sub(1).ok_or_else(|| bad(n + 1, "coordinate 0 in a 1-based file"))?;
            coo.shape[d] = coo.shape[d].max(c + 1);
            coo.indices.push(c);
        }
        coo.values.push(fields[rank].parse().map_err(|_| bad(n + 1, "bad value"))?);
    }
    Ok(coo)
}

/// The folder of real tensors (`../shared/data` from the workspace), if present.
pub fn shared_data() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    dir.is_dir().then(|| dir.canonicalize().unwrap_or(dir))
}

/// Every permutation of `0..rank`, in lexicographic order (the orders a
/// brute-force check of `ModeOrderPolicy::Auto` builds).
pub fn permutations(rank: u32) -> Vec<Vec<u32>> {
    if rank == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for first in 0..rank {
        for rest in permutations(rank - 1) {
            let mut order = vec![first];
            order.extend(rest.into_iter().map(|d| if d >= first { d + 1 } else { d }));
            out.push(order);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_builds_the_spec_example() {
        let coo = TestTensor {
            shape: vec![2, 3, 4],
            indices: vec![1, 1, 2, 0, 0, 1, 1, 1, 0, 0, 2, 3],
            values: vec![4.0, 1.0, 3.0, 2.0],
        };
        let csf = reference_csf(&coo, &[0, 1, 2]);
        assert_eq!(csf.levels[0], (vec![0, 2], vec![0, 1]));
        assert_eq!(csf.levels[1], (vec![0, 2, 3], vec![0, 2, 1]));
        assert_eq!(csf.levels[2], (vec![0, 1, 2, 4], vec![1, 3, 0, 2]));
        assert_eq!(csf.values, vec![1.0, 2.0, 3.0, 4.0]);
        let empty =
            reference_csf(&TestTensor { shape: vec![2, 3, 4], indices: vec![], values: vec![] }, &[0, 1, 2]);
        assert_eq!(empty.levels, vec![(vec![0, 0], vec![]), (vec![0], vec![]), (vec![0], vec![])]);
    }

    #[test]
    fn synthetic_is_reproducible_and_in_bounds() {
        let a = synthetic(&[5, 7, 9], 100, Distribution::PowerLaw { skew: 3.0 }, 42);
        assert_eq!(a, synthetic(&[5, 7, 9], 100, Distribution::PowerLaw { skew: 3.0 }, 42));
        assert!((0..a.len()).all(|i| a.index(i).iter().zip(&a.shape).all(|(c, e)| c < e)));
    }
}
