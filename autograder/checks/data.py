"""Deterministic inputs for hidden checks, shared by every chapter (fixed seeds, no Hypothesis),
and the cases of the functions more than one chapter grades."""

from __future__ import annotations

import numpy as np

from .judges import Case


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


# ------------------------------------------------------------------------------------------
# The calls of exercises 1 to 3, shared: their chapters and the capstone (which grades the same
# functions again) build their cases here, so no chapter's checks import another chapter's.
# ------------------------------------------------------------------------------------------
FORWARD_ARGS = ["E", "ids"]
BACKWARD_ARGS = ["ids", "grad_out", "V"]
ADAM_ARGS = ["E", "m", "v", "ids", "grad_out", "t", "lr", "betas", "eps"]


def forward_case(label, E, ids, **meta):
    """A case calling embedding_forward(E, ids)."""
    return Case(label, (E, ids), meta={"arg_names": FORWARD_ARGS, **meta})


def backward_case(label, ids, grad_out, V, padding_idx=None, **meta):
    """A case calling embedding_backward(ids, grad_out, V[, padding_idx=...])."""
    kwargs = {} if padding_idx is None else {"padding_idx": padding_idx}
    return Case(label, (ids, grad_out, V), kwargs, meta={"arg_names": BACKWARD_ARGS, **meta})


def adam_case(label, E, m, v, ids, grad_out, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, **meta):
    """A case calling sparse_adam_step_ with every argument given positionally; it grades the
    E, m and v the call leaves."""
    return Case(
        label,
        (E, m, v, ids, grad_out, t, lr, betas, eps),
        output=("args", (0, 1, 2)),
        meta={"arg_names": ADAM_ARGS, **meta},
    )


def zero_moments(V, d, dtype=np.float64):
    """E, m, v all zero: a (V, d) table before its first step."""
    return tuple(np.zeros((V, d), dtype=dtype) for _ in range(3))


def adam_state(V, d, seed, dtype=np.float64, fresh=()):
    """E, m, v as after some earlier steps: random moments (v > 0), zero for the ``fresh`` rows
    (never touched before)."""
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((V, d))
    m = 0.1 * rng.standard_normal((V, d))
    v = 0.01 * rng.random((V, d)) + 1e-4
    m[list(fresh)] = 0.0
    v[list(fresh)] = 0.0
    return tuple(a.astype(dtype) for a in (E, m, v))
