"""Debugging aids for any backward pass in the course (in the spirit of CS231n's rel_error and
makemore's cmp): a relative error, and a finite-difference gradient of a scalar function.
"""

import numpy as np


def rel_error(a, b, eps=1e-12):
    """max |a - b| / max(|a| + |b|, eps), elementwise: about 1e-7 or less means "equal" in float64."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(a) + np.abs(b), eps)))


def numerical_grad(f, x, h=1e-5):
    """Central differences of a scalar function f at array x (float64): df/dx, x's shape.

    Each entry costs two calls of f, so keep x small (a table of a few dozen entries).
    """
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + h
        up = f(x)
        x[i] = old - h
        down = f(x)
        x[i] = old
        grad[i] = (up - down) / (2 * h)
    return grad


def cmp(name, mine, reference):
    """One line: exact / close / wrong, with the largest absolute difference."""
    mine = np.asarray(mine, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    exact = bool(np.array_equal(mine, reference))
    approx = bool(np.allclose(mine, reference, rtol=1e-6, atol=1e-8))
    diff = float(np.max(np.abs(mine - reference), initial=0.0))
    print(f"{name:<20s} | exact: {exact!s:5s} | approximate: {approx!s:5s} | max diff: {diff:.2e}")
    return approx
