#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)
)]

#[cfg(feature = "alloc")]
extern crate alloc;

mod iter;
mod leaf;
mod lookup;
#[cfg(feature = "alloc")]
mod owned;
mod parts;
mod quant;
pub mod scalar;
mod subtree;
mod values;
mod view;
pub mod words;

pub use hurray_format;
pub use iter::{Cursor, Entries};
pub use leaf::TypedValuesError;
pub use lookup::LookupError;
#[cfg(feature = "alloc")]
pub use owned::{CooArrays, CooOrder, DenseError, OwnedCsf, OwnedCsfBuilder, OwnedLevel, OwnedQuantization};
pub use parts::{PartsError, ViewBuilder};
pub use quant::Quantized;
pub use subtree::Subtree;
pub use values::{Element, Typed, Value, Values};
pub use view::{CsfView, Fiber, Level, ViewError};
