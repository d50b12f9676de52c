//! A stable radix sort of packed keys on their coordinate bits.
//!
//! One MSD pass on the top (up to) 11 coordinate bits splits the keys into
//! up to 2048 buckets; each bucket is then small enough to sort in cache,
//! with LSD passes on the remaining coordinate bits (or, for tiny buckets, a
//! comparison sort of the whole key: the position bits make keys unique, so
//! that equals a stable sort on coordinates). Buckets are independent, so
//! with `parallel` they are sorted on rayon's pool; the result does not
//! depend on the thread count.

use crate::key::Key;

const DIGIT_BITS: u32 = 11;
const SMALL: usize = 96;

/// Sorts `keys` stably by bits `lo..hi` (the coordinate field).
pub(crate) fn sort_keys<K: Key>(keys: &mut [K], lo: u32, hi: u32, parallel: bool) {
    let n = keys.len();
    if n < 2 || hi <= lo {
        return;
    }
    if n <= SMALL {
        keys.sort_unstable();
        return;
    }
    let top_bits = (hi - lo).min(DIGIT_BITS);
    let top_shift = hi - top_bits;
    let radix = 1usize << top_bits;
    let digit = |k: K| (k.field(top_shift) as usize) & (radix - 1);

    let mut counts = vec![0usize; radix + 1];
    if parallel {
        counts = histogram_parallel(keys, radix, digit);
    } else {
        for &k in keys.iter() {
            counts[digit(k) + 1] += 1;
        }
    }
    for i in 1..=radix {
        counts[i] += counts[i - 1];
    }
    // Stable scatter into `scratch` by the top digit.
    let mut scratch = vec![K::default(); n];
    let mut next = counts.clone();
    for &k in keys.iter() {
        let d = digit(k);
        scratch[next[d]] = k;
        next[d] += 1;
    }
    // Pair up each bucket in `scratch` with the same range of `keys`.
    let mut pairs = Vec::with_capacity(radix);
    let (mut src, mut dst) = (&mut scratch[..], &mut keys[..]);
    for d in 0..radix {
        let len = counts[d + 1] - counts[d];
        let (s, s_rest) = src.split_at_mut(len);
        let (t, t_rest) = dst.split_at_mut(len);
        if len > 0 {
            pairs.push((s, t));
        }
        src = s_rest;
        dst = t_rest;
    }
    let sort_bucket = |(bucket, out): (&mut [K], &mut [K])| sort_bucket(bucket, out, lo, top_shift);
    if parallel {
        use rayon::prelude::*;
        pairs.into_par_iter().for_each(sort_bucket);
    } else {
        pairs.into_iter().for_each(sort_bucket);
    }
}

fn histogram_parallel<K: Key>(keys: &[K], radix: usize, digit: impl Fn(K) -> usize + Sync) -> Vec<usize> {
    use rayon::prelude::*;
    keys.par_chunks(1 << 16)
        .map(|chunk| {
            let mut counts = vec![0usize; radix + 1];
            for &k in chunk {
                counts[digit(k) + 1] += 1;
            }
            counts
        })
        .reduce(
            || vec![0usize; radix + 1],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// Sorts `bucket` by bits `lo..hi`, leaving the result in `out` (same length).
fn sort_bucket<K: Key>(bucket: &mut [K], out: &mut [K], lo: u32, hi: u32) {
    if bucket.len() <= SMALL || hi <= lo {
        bucket.sort_unstable();
        out.copy_from_slice(bucket);
        return;
    }
    let bits = hi - lo;
    let passes = bits.div_ceil(DIGIT_BITS);
    let width = bits.div_ceil(passes);
    let mut counts = vec![0usize; (1 << width) + 1];
    // Data moves `bucket -> out -> bucket ...`; `in_out` says where it is now.
    let mut in_out = false;
    let mut shift = lo;
    while shift < hi {
        let w = width.min(hi - shift);
        let mask = (1usize << w) - 1;
        let (src, dst): (&[K], &mut [K]) = if in_out { (&*out, &mut *bucket) } else { (&*bucket, &mut *out) };
        counts.iter_mut().for_each(|c| *c = 0);
        for &k in src {
            counts[(k.field(shift) as usize & mask) + 1] += 1;
        }
        // A digit every key shares orders nothing: skip the pass.
        if counts.contains(&src.len()) {
            shift += w;
            continue;
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        for &k in src {
            let d = k.field(shift) as usize & mask;
            dst[counts[d]] = k;
            counts[d] += 1;
        }
        in_out = !in_out;
        shift += w;
    }
    if !in_out {
        out.copy_from_slice(bucket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_stable_sort_on_the_coordinate_bits() {
        let mut state = 0x1234_5678_u64;
        let mut rand = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for &(n, coord_bits) in &[(0usize, 5u32), (1, 5), (50, 3), (5000, 9), (20000, 30), (70000, 40)] {
            let position_bits = 64 - (n as u64).leading_zeros();
            let keys: Vec<u64> =
                (0..n as u64).map(|i| ((rand() & ((1 << coord_bits) - 1)) << position_bits) | i).collect();
            let mut expected = keys.clone();
            expected.sort_by_key(|k| k >> position_bits); // stable
            for parallel in [false, true] {
                let mut got = keys.clone();
                sort_keys(&mut got, position_bits, position_bits + coord_bits, parallel);
                assert_eq!(got, expected, "n={n} bits={coord_bits} parallel={parallel}");
            }
        }
    }
}
