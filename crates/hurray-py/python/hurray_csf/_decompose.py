"""CP decomposition: ``cp_als`` (csf-kernels' CP-ALS) and its result, ``CPResult``."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import _native
from ._common import float_operand, integer, single_precision, threads_argument
from ._tensor import CsfTensor

Init = Union[str, Sequence[npt.ArrayLike], Tuple[Optional[npt.ArrayLike], Sequence[npt.ArrayLike]], Any]


class CPResult(Tuple[npt.NDArray[Any], List[npt.NDArray[Any]]]):
    """A CP decomposition, ``X ≈ sum_r weights[r] * factors[0][:, r] ∘ ... ∘ factors[N-1][:, r]``.

    A 2-tuple ``(weights, factors)``, as TensorLy's ``CPTensor`` and pyttb's
    ``ktensor`` hold one: ``weights, factors = hc.cp_als(t, 4)`` unpacks it
    and ``tensorly.cp_tensor.CPTensor(result)`` wraps it. ``weights`` has
    shape ``(R,)`` in decreasing order; ``factors[n]`` is ``(I_n, R)`` with
    columns of unit 2-norm. Besides:

    - ``fit_history``: the fit ``1 - ||X - P|| / ||X||`` after each iteration;
    - ``n_iter``: the iterations run;
    - ``converged``: whether the fit changed by less than ``tol`` (rather
      than the run stopping at ``n_iter_max``);
    - ``iteration_seconds``: each iteration's wall-clock time.
    """

    fit_history: List[float]
    converged: bool
    iteration_seconds: List[float]

    def __new__(
        cls,
        weights: npt.NDArray[Any],
        factors: List[npt.NDArray[Any]],
        fit_history: Sequence[float] = (),
        converged: bool = False,
        iteration_seconds: Sequence[float] = (),
    ) -> "CPResult":
        self = super().__new__(cls, (weights, factors))
        self.fit_history = [float(f) for f in fit_history]
        self.converged = bool(converged)
        self.iteration_seconds = [float(s) for s in iteration_seconds]
        return self

    @property
    def weights(self) -> npt.NDArray[Any]:
        """The ``(R,)`` weights, in decreasing order."""
        return self[0]

    @property
    def factors(self) -> List[npt.NDArray[Any]]:
        """The ``(I_n, R)`` factor matrices, columns of unit 2-norm."""
        return self[1]

    @property
    def n_iter(self) -> int:
        """The number of iterations run."""
        return len(self.fit_history)

    @property
    def fit(self) -> float:
        """The fit after the last iteration (0.0 when none ran)."""
        return self.fit_history[-1] if self.fit_history else 0.0

    def __repr__(self) -> str:
        shape = tuple(f.shape[0] for f in self.factors)
        return (
            f"CPResult(shape={shape}, rank={self.weights.shape[0]}, n_iter={self.n_iter}, "
            f"fit={self.fit:.6g}, converged={self.converged})"
        )

    def __getnewargs__(self) -> Tuple[Any, ...]:
        """Pickling: the fields, not the tuple."""
        return (self[0], self[1], self.fit_history, self.converged, self.iteration_seconds)


def cp_als(
    tensor: CsfTensor,
    rank: int,
    *,
    n_iter_max: int = 100,
    tol: float = 1e-8,
    init: Init = "random",
    random_state: Optional[int] = None,
    trees: int = 1,
    threads: Optional[int] = None,
    dtype: Optional[npt.DTypeLike] = None,
) -> CPResult:
    """The CP decomposition of ``tensor`` into ``rank`` rank-one components by
    alternating least squares (csf-kernels' CP-ALS, the Tensor Toolbox's
    ``cp_als`` algorithm, as pyttb's).

    Each iteration updates every factor in turn, ``U_n = MTTKRP(X, U, n) @
    pinv(V)`` with ``V`` the Hadamard product of the other factors' Gram
    matrices, normalises its columns into the weights (2-norm on the first
    iteration, ``max(1, max |column|)`` after), and measures the fit ``1 -
    ||X - P|| / ||X||`` of the model ``P``. It stops when the fit changes by
    less than ``tol`` (after the second iteration at the earliest) or after
    ``n_iter_max`` iterations. At the end the columns are scaled to unit
    2-norm, the weights sorted in decreasing order and the signs fixed, as
    the Tensor Toolbox's ``arrange`` and ``fixsigns`` do.

    ``init`` is

    - ``"random"``: factors uniform in ``[0, 1)`` from a SplitMix64 stream
      seeded with ``random_state`` (an integer in ``0..2**64``; ``None``
      means 0), mode 0's first, row by row: the same factors on every
      platform, and unrelated to numpy's generators;
    - a sequence of ``(I_n, R)`` factor matrices, one per dimension;
    - a ``(weights, factors)`` pair, such as a TensorLy ``CPTensor`` or a
      ``CPResult`` (a pyttb ``ktensor`` is read the same way). The weights
      are ignored, as the Tensor Toolbox ignores them.

    As in the Tensor Toolbox, the first factor is not read (the first update
    computes it from the others), but it must have its shape. The given
    factors must have ``rank`` columns.

    ``dtype`` is the type the work is done in, ``float32`` or ``float64``;
    by default ``float32`` when every given factor is ``float32``, else
    ``float64`` (and ``float64`` for a random start). ``trees=2`` adds a
    second CSF tree rooted at the mode stored at the leaves, so that this
    mode's MTTKRP is a root-level one too (SPLATT's two-tree layout: faster,
    at the cost of a copy of the tensor's index and values). ``threads``
    caps the worker threads (``from_coo``'s argument). The GIL is released
    throughout.

    >>> import numpy as np, hurray_csf as hc
    >>> rng = np.random.default_rng(0)
    >>> a, b, c = (rng.random((n, 2)) for n in (6, 7, 8))
    >>> t = hc.from_dense(np.einsum("ir,jr,kr->ijk", a, b, c))     # exactly of rank 2
    >>> result = hc.cp_als(t, 2, n_iter_max=500, tol=1e-12, random_state=1)
    >>> weights, factors = result                                   # a (weights, factors) pair
    >>> bool(result.fit_history[-1] > 0.999), [f.shape for f in factors]
    (True, [(6, 2), (7, 2), (8, 2)])
    """
    if not isinstance(tensor, CsfTensor):
        raise TypeError(f"tensor must be a CsfTensor, not {type(tensor).__name__}")
    r = integer(rank, "rank")
    if r < 1:
        raise ValueError(f"rank must be at least 1, not {r}")
    iterations = integer(n_iter_max, "n_iter_max")
    if iterations < 0:
        raise ValueError(f"n_iter_max must be non-negative, not {iterations}")
    stop = float(tol)
    if not stop >= 0:
        raise ValueError(f"tol must be a non-negative number, not {tol!r}")
    count = integer(trees, "trees")
    if count not in (1, 2):
        raise ValueError(f"trees must be 1 or 2, not {count}")
    seed = 0 if random_state is None else integer(random_state, "random_state")
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"random_state must be between 0 and 2^64 - 1, not {seed}")
    factors = _initial_factors(init, tensor, r)
    if dtype is None:
        single = factors is not None and single_precision(*factors)
    else:
        kind = np.dtype(dtype)
        if kind not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise TypeError(f"dtype must be float32 or float64, not {kind}")
        single = kind == np.float32
    given = None if factors is None else [float_operand(f, f"init's factors[{n}]", 2, single) for n, f in enumerate(factors)]
    weights, flat, fits, seconds, converged = _native.cp_als(
        tensor._validated()._bytes(), r, iterations, stop, seed, given, single, count, threads_argument(threads)
    )
    shaped = [f.reshape(extent, r) for f, extent in zip(flat, tensor.shape)]
    return CPResult(weights, shaped, fits, converged, seconds)


def _initial_factors(init: Any, tensor: CsfTensor, rank: int) -> Optional[List[npt.NDArray[Any]]]:
    """The initial factor matrices ``init`` names, or ``None`` for random ones."""
    if isinstance(init, str):
        if init != "random":
            raise ValueError(f"init must be 'random', a sequence of factor matrices or a (weights, factors) pair, not {init!r}")
        return None
    if hasattr(init, "factor_matrices"):  # a pyttb ktensor
        init = (getattr(init, "weights", None), init.factor_matrices)
    try:
        items = list(init)
    except TypeError:
        raise TypeError(f"init must be 'random', a sequence of factor matrices or a (weights, factors) pair, not {type(init).__name__}") from None
    # A tensor has rank 3 or more, so two items are a (weights, factors) pair.
    if len(items) == 2:
        items = list(items[1])
    if len(items) != tensor.rank:
        raise ValueError(f"init has {len(items)} factor matrices for a tensor of rank {tensor.rank}")
    factors = [np.asarray(f) for f in items]
    for n, (f, extent) in enumerate(zip(factors, tensor.shape)):
        if f.ndim != 2 or f.shape != (extent, rank):
            raise ValueError(f"init's factor {n} has shape {f.shape}; ({extent}, {rank}) expected (I_{n} x rank)")
    return factors
