//! Comparing two tensors entry by entry (`equal`).
