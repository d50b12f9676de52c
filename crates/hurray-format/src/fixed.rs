//! A fixed-capacity list, so that a decoded descriptor needs no allocator.

use core::fmt;
use core::ops::Deref;

/// Up to `N` values of `T`, stored inline.
///
/// Decoding fills these from the descriptor after checking the declared length
/// against `N`, so they never grow past their cap.
#[derive(Clone, Copy)]
pub struct FixedVec<T: Copy + Default, const N: usize> {
    len: usize,
    items: [T; N],
}

/// The value did not fit: the list already holds its capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapacityError;

impl<T: Copy + Default, const N: usize> FixedVec<T, N> {
    /// The most entries the list can hold, `N`.
    pub const CAPACITY: usize = N;

    /// An empty list.
    pub fn new() -> Self {
        Self { len: 0, items: [T::default(); N] }
    }

    /// A list holding a copy of `values`, or an error when it has more than `N`.
    pub fn from_slice(values: &[T]) -> Result<Self, CapacityError> {
        let mut list = Self::new();
        for &value in values {
            list.push(value)?;
        }
        Ok(list)
    }

    /// Appends `value`, or returns an error when the list is full.
    pub fn push(&mut self, value: T) -> Result<(), CapacityError> {
        let slot = self.items.get_mut(self.len).ok_or(CapacityError)?;
        *slot = value;
        self.len += 1;
        Ok(())
    }

    /// The values as a slice.
    pub fn as_slice(&self) -> &[T] {
        self.items.get(..self.len).unwrap_or(&[])
    }

    /// The values as a mutable slice.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.items.get_mut(..self.len).unwrap_or(&mut [])
    }
}

impl<T: Copy + Default, const N: usize> Default for FixedVec<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default, const N: usize> Deref for FixedVec<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy + Default + PartialEq, const N: usize> PartialEq for FixedVec<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Default + Eq, const N: usize> Eq for FixedVec<T, N> {}

impl<T: Copy + Default + fmt::Debug, const N: usize> fmt::Debug for FixedVec<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<T: Copy + Default + serde::Serialize, const N: usize> serde::Serialize for FixedVec<T, N> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_exactly_its_capacity() {
        let mut list = FixedVec::<u8, 2>::new();
        assert_eq!(list.push(1), Ok(()));
        assert_eq!(list.push(2), Ok(()));
        assert_eq!(list.push(3), Err(CapacityError));
        assert_eq!(&*list, &[1, 2]);
        assert_eq!(FixedVec::<u8, 2>::from_slice(&[1, 2, 3]), Err(CapacityError));
    }
}
