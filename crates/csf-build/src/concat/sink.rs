//! Where a [`Joiner`](crate::Joiner) writes the joined tensor: one append-only
//! stream per array, so that an implementation may keep each array in memory
//! ([`VecSink`]) or write it to a file of its own as it grows.

use std::convert::Infallible;

use csf_core::OwnedLevel;

/// The arrays of the joined tensor, appended to in order.
///
/// The joiner appends each array front to back and never goes back: `pos_L`
/// for `L >= 1` grows by one entry per node opened at level `L - 1` and gets
/// its terminal entry at [`Joiner::finish`](crate::Joiner::finish); `pos_0`,
/// `[0, n_0]`, comes whole at `finish`; `crd_L` grows by one entry per node
/// of level `L`; the values buffer grows by whole bytes (for 4-bit types the
/// last, half-filled byte comes at `finish`). Calls for different arrays
/// interleave.
pub trait ArraySink {
    /// Why an append failed (an I/O error, say).
    type Error;

    /// Appends `words` to `pos_level`.
    ///
    /// # Errors
    /// When the words cannot be stored; the joiner then stops.
    fn pos(&mut self, level: usize, words: &[u64]) -> Result<(), Self::Error>;

    /// Appends `words` to `crd_level`.
    ///
    /// # Errors
    /// When the words cannot be stored; the joiner then stops.
    fn crd(&mut self, level: usize, words: &[u64]) -> Result<(), Self::Error>;

    /// Appends packed bytes to the values buffer.
    ///
    /// # Errors
    /// When the bytes cannot be stored; the joiner then stops.
    fn values(&mut self, bytes: &[u8]) -> Result<(), Self::Error>;
}

/// The in-memory sink: each array a `Vec`, as [`OwnedCsf::builder`](csf_core::OwnedCsf::builder) takes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VecSink {
    /// `pos_L` and `crd_L` per level, outermost first.
    pub levels: Vec<OwnedLevel>,
    /// The values buffer, packed as the element type prescribes.
    pub values: Vec<u8>,
}

impl VecSink {
    /// The level's arrays, made on first use (so that `default()` suits any rank).
    fn level(&mut self, level: usize) -> &mut OwnedLevel {
        if self.levels.len() <= level {
            self.levels.resize_with(level + 1, Default::default);
        }
        &mut self.levels[level]
    }
}

impl ArraySink for VecSink {
    type Error = Infallible;

    fn pos(&mut self, level: usize, words: &[u64]) -> Result<(), Infallible> {
        self.level(level).pos.extend_from_slice(words);
        Ok(())
    }

    fn crd(&mut self, level: usize, words: &[u64]) -> Result<(), Infallible> {
        self.level(level).crd.extend_from_slice(words);
        Ok(())
    }

    fn values(&mut self, bytes: &[u8]) -> Result<(), Infallible> {
        self.values.extend_from_slice(bytes);
        Ok(())
    }
}

impl<S: ArraySink + ?Sized> ArraySink for &mut S {
    type Error = S::Error;

    fn pos(&mut self, level: usize, words: &[u64]) -> Result<(), S::Error> {
        (**self).pos(level, words)
    }

    fn crd(&mut self, level: usize, words: &[u64]) -> Result<(), S::Error> {
        (**self).crd(level, words)
    }

    fn values(&mut self, bytes: &[u8]) -> Result<(), S::Error> {
        (**self).values(bytes)
    }
}
