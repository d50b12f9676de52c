//! Selections: numpy-style indexing of a tensor (`select`).
