//! Sums over dimensions (`sum_axes`).
