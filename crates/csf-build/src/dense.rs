//! Building a CSF tensor from a dense array (`from_dense`).
