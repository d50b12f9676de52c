//! The vector instructions of the MTTKRP walks, chosen at run time: the
//! crate's one module with `unsafe`.
//!
//! Rust builds for a baseline of each architecture (SSE2 on x86-64: two
//! `f64` lanes). Where `std` can ask the CPU, a walk runs in a copy of the
//! code compiled with AVX2 enabled (four lanes) when the CPU has it. The
//! copies do the same IEEE operations in the same order (element-wise
//! multiplies and adds, no fused multiply-add), so they give the same bits;
//! only the width of the registers differs. The walk functions are
//! `#[inline(always)]`, so the copy holds the whole walk of a rank-3 tree;
//! the deeper levels of higher ranks recurse into the baseline copy.

#![allow(unsafe_code)]

use crate::mttkrp::{Descend, Level, Output, Walk};
use crate::scalar::Scalar;

/// An instruction set the walks are compiled for. The walks recurse
/// through these methods, so that each level below runs in the same copy.
pub(crate) trait Isa: Copy {
    /// [`Walk::gather`] in this instruction set.
    fn gather<T: Scalar, const R: usize>(
        self,
        walk: &Walk<'_, T>,
        levels: &[Level<'_, T>],
        range: (usize, usize),
        acc: &mut [T],
        scratch: &mut [T],
    );

    /// [`Walk::descend`] in this instruction set.
    #[allow(clippy::too_many_arguments)]
    fn descend<T: Scalar, const R: usize>(
        self,
        walk: &Walk<'_, T>,
        levels: &[Level<'_, T>],
        depth: usize,
        range: (usize, usize),
        prefix: Option<&[T]>,
        out: &mut Output<'_, T>,
        scratch: &mut [T],
    );
}

/// The target's baseline (what the crate is compiled for).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Baseline;

impl Isa for Baseline {
    fn gather<T: Scalar, const R: usize>(
        self,
        walk: &Walk<'_, T>,
        levels: &[Level<'_, T>],
        range: (usize, usize),
        acc: &mut [T],
        scratch: &mut [T],
    ) {
        walk.gather::<Self, R>(self, levels, range, acc, scratch);
    }

    fn descend<T: Scalar, const R: usize>(
        self,
        walk: &Walk<'_, T>,
        levels: &[Level<'_, T>],
        depth: usize,
        range: (usize, usize),
        prefix: Option<&[T]>,
        out: &mut Output<'_, T>,
        scratch: &mut [T],
    ) {
        walk.descend::<Self, R>(self, levels, depth, range, prefix, out, scratch);
    }
}

/// AVX2 on x86-64: a value exists only once the CPU was found to have it.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx2(());

#[cfg(all(feature = "std", target_arch = "x86_64"))]
impl Avx2 {
    fn detect() -> Option<Self> {
        (wide_allowed() && std::is_x86_feature_detected!("avx2")).then_some(Avx2(()))
    }
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
impl Isa for Avx2 {
    #[inline(always)]
    fn gather<T: Scalar, const R: usize>(
        self,
        walk: &Walk<'_, T>,
        levels: &[Level<'_, T>],
        range: (usize, usize),
        acc: &mut [T],
        scratch: &mut [T],
    ) {
        // SAFETY: `gather_avx2` is compiled with AVX2 enabled; calling it
        // needs a CPU that executes AVX2, which `self` proves: an `Avx2` is
        // made only by `Avx2::detect`, after `is_x86_feature_detected!`.
        unsafe { gather_avx2::<T, R>(self, walk, levels, range, acc, scratch) }
    }

    #[inline(always)]
    fn descend<T: Scalar, const R: usize>(
        self,
        walk: &Walk<'_, T>,
        levels: &[Level<'_, T>],
        depth: usize,
        range: (usize, usize),
        prefix: Option<&[T]>,
        out: &mut Output<'_, T>,
        scratch: &mut [T],
    ) {
        // SAFETY: as in `gather` above: `self` exists only on a CPU with AVX2.
        unsafe { descend_avx2::<T, R>(self, walk, levels, depth, range, prefix, out, scratch) }
    }
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
unsafe fn gather_avx2<T: Scalar, const R: usize>(
    isa: Avx2,
    walk: &Walk<'_, T>,
    levels: &[Level<'_, T>],
    range: (usize, usize),
    acc: &mut [T],
    scratch: &mut [T],
) {
    walk.gather::<Avx2, R>(isa, levels, range, acc, scratch);
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2")]
unsafe fn descend_avx2<T: Scalar, const R: usize>(
    isa: Avx2,
    walk: &Walk<'_, T>,
    levels: &[Level<'_, T>],
    depth: usize,
    range: (usize, usize),
    prefix: Option<&[T]>,
    out: &mut Output<'_, T>,
    scratch: &mut [T],
) {
    walk.descend::<Avx2, R>(isa, levels, depth, range, prefix, out, scratch);
}

/// Asks the CPU to fetch the cache lines of `slice[start..start + len]`
/// (each 64-byte line once) for a read or write soon, where it has such
/// an instruction; indices past the end ask for nothing. A hint: it reads
/// and writes nothing.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], start: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let step = (64 / core::mem::size_of::<T>().max(1)).max(1);
        let mut at = start;
        while at < start.saturating_add(len) {
            let Some(element) = slice.get(at) else { return };
            // SAFETY: `_mm_prefetch` is a hint that never faults and touches
            // no memory the program can observe; its pointer comes from a
            // live reference into `slice`. SSE, which it needs, is part of
            // the x86-64 baseline.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    (element as *const T).cast::<i8>(),
                );
            }
            at += step;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, start, len);
}

/// Set by tests to run the baseline copy on any CPU.
#[cfg(all(test, feature = "std"))]
pub(crate) static BASELINE_ONLY: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Runs `call` with the widest vector instructions the CPU has.
#[inline]
pub(crate) fn descend<T: Scalar, const R: usize>(call: Descend<'_, '_, '_, T>) {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if let Some(avx2) = Avx2::detect() {
        call.run::<Avx2, R>(avx2);
        return;
    }
    call.run::<Baseline, R>(Baseline);
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[inline(always)]
fn wide_allowed() -> bool {
    #[cfg(test)]
    return !BASELINE_ONLY.load(core::sync::atomic::Ordering::Relaxed);
    #[cfg(not(test))]
    true
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use crate::{Matrix, Tensor};
    use core::sync::atomic::Ordering;

    /// The AVX2 copy (where the CPU has it) and the baseline copy give the
    /// same bits, for the specialised ranks and the run-time one, at every
    /// level of a rank-3 and a rank-4 tree.
    #[test]
    fn wide_and_baseline_walks_agree_bit_for_bit() {
        let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        // A rank-4 tree, shape [3, 4, 5, 6]: every root has two children, and
        // so on down, coordinates spread over each extent.
        let (mut levels, mut parents) = (Vec::new(), 1usize);
        for (level, extent) in [3u64, 4, 5, 6].into_iter().enumerate() {
            let pos: Vec<u64> = (0..=parents as u64).map(|p| p * 2).collect();
            let crd: Vec<u64> = (0..parents as u64 * 2).map(|i| (i * 7 + level as u64) % extent).collect();
            let crd = {
                // Strictly increasing siblings.
                let mut c = crd;
                for pair in c.chunks_mut(2) {
                    pair.sort_unstable();
                    if pair[0] == pair[1] {
                        pair[1] = (pair[0] + 1) % extent;
                        pair.sort_unstable();
                    }
                }
                c
            };
            levels.push((pos, crd));
            parents *= 2;
        }
        let values: Vec<f64> = (0..parents).map(|i| 0.1 + i as f64 * 0.37).collect();
        let mut buffers = vec![values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()];
        for (pos, crd) in &levels {
            buffers.push(le(pos));
            buffers.push(le(crd));
        }
        let slices: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
        let header = hurray_format::Descriptor::csf(
            hurray_format::ElementType::F64,
            &[3, 4, 5, 6],
            &[0, 1, 2, 3],
            parents as u64,
        )
        .unwrap();
        let bytes = hurray_format::encode_to_vec(&header, &slices).unwrap();
        let container = hurray_format::Container::decode(&bytes).unwrap();
        let view = csf_core::CsfView::from_container(&container).unwrap();
        let tensor = Tensor::<f64>::new(&view).unwrap().with_parallel(false);
        for r in [3usize, 8, 16, 32] {
            let factors: Vec<Matrix<f64>> = [3usize, 4, 5, 6]
                .iter()
                .map(|&e| {
                    Matrix::from_rows(e, r, (0..e * r).map(|i| 1.0 / (1.0 + i as f64)).collect()).unwrap()
                })
                .collect();
            let refs: Vec<_> = factors.iter().map(Matrix::as_ref).collect();
            for mode in 0..4 {
                BASELINE_ONLY.store(false, Ordering::Relaxed);
                let wide = tensor.mttkrp(&refs, mode).unwrap();
                BASELINE_ONLY.store(true, Ordering::Relaxed);
                let baseline = tensor.mttkrp(&refs, mode).unwrap();
                BASELINE_ONLY.store(false, Ordering::Relaxed);
                let bits = |m: &Matrix<f64>| m.as_slice().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&wide), bits(&baseline), "rank {r}, mode {mode}");
                assert!(wide.as_slice().iter().any(|&x| x != 0.0));
            }
        }
    }
}
