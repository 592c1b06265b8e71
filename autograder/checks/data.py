"""Deterministic inputs for hidden checks, shared by every chapter (fixed seeds, no Hypothesis)."""

from __future__ import annotations

import numpy as np


def table(V, d, seed, dtype=np.float64, scale=1.0):
    """A (V, d) table of standard normal entries times ``scale``."""
    return (scale * np.random.default_rng(seed).standard_normal((V, d))).astype(dtype)


def ids(shape, V, seed, dtype=np.int64):
    """Uniform ids in [0, V) of any shape (repeats likely when the batch is large)."""
    return np.random.default_rng(seed).integers(0, V, size=shape).astype(dtype)


def distinct(shape, V, seed, dtype=np.int64):
    """Ids of the given shape with no id repeated (needs prod(shape) <= V)."""
    n = int(np.prod(shape, dtype=np.int64))
    return np.random.default_rng(seed).permutation(V)[:n].reshape(shape).astype(dtype)


def zipf(n, V, seed, s=1.1):
    """n ids drawn with probability proportional to 1 / rank^s: a few ids repeat very often."""
    p = 1.0 / np.arange(1, V + 1) ** s
    return np.random.default_rng(seed).choice(V, size=n, p=p / p.sum()).astype(np.int64)


def grads(ids, d, seed, dtype=np.float64):
    """Upstream gradients of shape ids.shape + (d,)."""
    return np.random.default_rng(seed).standard_normal(np.shape(ids) + (d,)).astype(dtype)
