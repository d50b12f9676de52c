//! Building entries that carry their input positions: a piece of a larger
//! input, gathered from anywhere (a spill partition, a cluster's shuffle),
//! built as if its entries stood in input order.

use std::borrow::Cow;

use crate::build::{build, entry_count};
use crate::values::{pack, Slots};
use crate::{BuildError, Built, Coo, Indices, Options, Source};

/// Builds `coo` as [`build`] would build its entries taken in the order of
/// their input positions, `positions[i]` being entry `i`'s: what the
/// duplicate policies and floating-point sums see is that order, and errors
/// name positions, not entries of `coo`.
///
/// This is how a piece of a larger input builds exactly: give each entry its
/// position in the whole input, send every entry of one storage-order key
/// range ([`KeyRanges`](crate::KeyRanges)) to one place in any order, build
/// each range with `build_at`, and [`Joiner`](crate::Joiner) joins the pieces
/// into the tensor that `build` makes of the whole input.
///
/// # Errors
/// As [`build`], with entry numbers replaced by positions, and
/// [`BuildError::LengthMismatch`] when `positions` is not one per entry.
/// Positions are expected distinct; a repeated one is not an error, only
/// the order between the two entries is then the order given.
///
/// # Example
/// ```
/// use csf_build::{build, build_at, Coo, Indices, Options, Duplicates};
///
/// // Two values at one index, handed over in reverse input order.
/// let options = Options { duplicates: Duplicates::Last, ..Options::default() };
/// let reversed = Coo::new(&[2, 2, 2], Indices::RowMajor(&[1, 1, 1, 1, 1, 1]), &[2.0f64, 1.0]);
/// let built = build_at(&reversed, &[7, 3], &options)?;
/// assert_eq!(built.tensor.view().get_f64(&[1, 1, 1]), Ok(2.0)); // position 7 is last
///
/// let strict = Options::default();
/// let error = build_at(&reversed, &[7, 3], &strict).unwrap_err().to_string();
/// assert_eq!(error, "entries 3 and 7 share the index [1, 1, 1]");
/// # Ok::<(), csf_build::BuildError>(())
/// ```
pub fn build_at(coo: &Coo<'_>, positions: &[u64], options: &Options) -> Result<Built, BuildError> {
    let rank = coo.shape.len();
    let len = entry_count(coo.indices, rank)?;
    if positions.len() != len {
        let (found, expected) = (positions.len() as u64, len as u64);
        return Err(BuildError::LengthMismatch { what: "positions", found, expected });
    }
    if positions.windows(2).all(|w| w[0] <= w[1]) {
        return build(coo, options).map_err(|e| in_input(e, positions));
    }
    let expected = coo.element_type.values_len(len as u64).unwrap_or(u64::MAX);
    if coo.values.len() as u64 != expected {
        let found = coo.values.len() as u64;
        return Err(BuildError::LengthMismatch { what: "values (bytes)", found, expected });
    }
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by_key(|&i| positions.get(i).copied().unwrap_or(u64::MAX));
    let source = &Source { shape: coo.shape, indices: coo.indices, len, packed: None };
    let coords: Vec<u64> = order.iter().flat_map(|&i| (0..rank).map(move |d| source.coord(i, d))).collect();
    let slots = Slots::new(coo.element_type, &coo.values, len);
    let sorted_slots: Vec<u8> = order.iter().flat_map(|&i| slots.slot(i).iter().copied()).collect();
    let sorted_positions: Vec<u64> = order.iter().filter_map(|&i| positions.get(i).copied()).collect();
    let sorted = Coo {
        shape: coo.shape,
        indices: Indices::RowMajor(&coords),
        element_type: coo.element_type,
        values: Cow::Owned(pack(coo.element_type, sorted_slots)),
    };
    build(&sorted, options).map_err(|e| in_input(e, &sorted_positions))
}

/// A build error with its entry numbers mapped to input positions
/// (`positions[i]` is entry `i`'s).
pub(crate) fn in_input(error: BuildError, positions: &[u64]) -> BuildError {
    let global = |i: usize| positions.get(i).map_or(i, |&e| usize::try_from(e).unwrap_or(usize::MAX));
    match error {
        BuildError::Duplicate { index, first, second } => {
            let (a, b) = (global(first), global(second));
            BuildError::Duplicate { index, first: a.min(b), second: a.max(b) }
        }
        BuildError::OutOfBounds { entry, dim, coord, extent } => {
            BuildError::OutOfBounds { entry: global(entry), dim, coord, extent }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Duplicates, StatisticsSection};
    use hurray_format::ElementType;

    /// `build_at` of a shuffled input equals `build` of it in input order,
    /// for every policy and for 4-bit values (packed two to a byte).
    #[test]
    fn a_shuffled_piece_builds_as_its_input_order() {
        let shape = [3u64, 3, 3];
        let entries: Vec<[u64; 3]> = (0..40u64).map(|n| [n % 3, (n / 3) % 2, (n * 7) % 3]).collect();
        let values: Vec<f64> = (0..40).map(|n| f64::from(n) * 0.1 + 1e-17).collect();
        // Positions 10, 13, 16, ...: the piece's entries in some shuffled order.
        let shuffle: Vec<usize> = (0..40).map(|i| (i * 17) % 40).collect();
        let flat_in_order: Vec<u64> = entries.iter().flatten().copied().collect();
        let flat_shuffled: Vec<u64> = shuffle.iter().flat_map(|&i| entries[i]).collect();
        let values_shuffled: Vec<f64> = shuffle.iter().map(|&i| values[i]).collect();
        let positions: Vec<u64> = shuffle.iter().map(|&i| 10 + 3 * i as u64).collect();
        for duplicates in [Duplicates::Sum, Duplicates::First, Duplicates::Last] {
            let options = Options { duplicates, ..Options::default() };
            let want =
                build(&Coo::new(&shape, Indices::RowMajor(&flat_in_order), &values), &options).unwrap();
            let got = build_at(
                &Coo::new(&shape, Indices::RowMajor(&flat_shuffled), &values_shuffled),
                &positions,
                &options,
            )
            .unwrap();
            assert_eq!(
                got.to_bytes(StatisticsSection::Include).unwrap(),
                want.to_bytes(StatisticsSection::Include).unwrap(),
                "{duplicates:?}"
            );
        }
        let error = build_at(
            &Coo::new(&shape, Indices::RowMajor(&flat_shuffled), &values_shuffled),
            &positions,
            &Options::default(),
        )
        .unwrap_err();
        // Entries 0 and 6 of the input share (0, 0, 0): positions 10 and 28.
        assert!(matches!(error, BuildError::Duplicate { first: 10, second: 28, .. }), "{error}");

        let codes = [0x21u8, 0x43];
        let coo = Coo {
            shape: &shape,
            indices: Indices::RowMajor(&[2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]),
            element_type: ElementType::I4,
            values: Cow::Borrowed(&codes),
        };
        let built = build_at(&coo, &[3, 0, 2, 1], &Options::default()).unwrap();
        let view = built.tensor.view();
        assert_eq!((view.get_f64(&[2, 0, 0]), view.get_f64(&[0, 0, 1])), (Ok(1.0), Ok(4.0)));
    }

    #[test]
    fn lengths_are_checked() {
        let coo = Coo::new(&[2, 2, 2], Indices::RowMajor(&[1, 1, 1]), &[1.0f32]);
        assert!(matches!(
            build_at(&coo, &[1, 2], &Options::default()),
            Err(BuildError::LengthMismatch { what: "positions", .. })
        ));
        let short = Coo {
            values: Cow::Borrowed(&[0u8; 3]),
            ..Coo::new(&[2, 2, 2], Indices::RowMajor(&[1, 1, 1, 0, 0, 0]), &[1.0f32, 2.0])
        };
        assert!(matches!(
            build_at(&short, &[5, 1], &Options::default()),
            Err(BuildError::LengthMismatch { what: "values (bytes)", .. })
        ));
    }
}
