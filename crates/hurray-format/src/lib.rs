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
#[cfg(feature = "std")]
extern crate std;

mod container;
mod descriptor;
mod element;
mod error;
mod fixed;
mod layout;
pub mod le;
pub mod limits;
mod lists;
mod wire;

#[cfg(feature = "alloc")]
pub use container::encode_to_vec;
pub use container::{align_up, encode_to_slice, encoded_len, Container, FORMAT_VERSION, HEADER_LEN, MAGIC};
#[cfg(feature = "std")]
pub use container::{encode_streamed, encode_to_writer};
pub use descriptor::{
    csf, BufferEntry, BufferTable, CsfHeaderError, Descriptor, DeviceTag, Flags, ModeOrder, QuantScheme,
    Quantization, Shape, ShardDescriptor, Statistics,
};
pub use element::{ElementType, Packing};
pub use error::{DecodeError, EncodeError};
pub use fixed::{CapacityError, FixedVec};
pub use layout::LayoutTag;
pub use lists::{BufferEntries, Buffers, Varints};
