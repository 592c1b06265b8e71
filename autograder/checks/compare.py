"""Comparing plain arrays, and what a message may show: one place for tolerances, the rows that
differ, short renderings, and the rule that hidden cases never show the reference's values."""

from __future__ import annotations

import numpy as np


def tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol scale) fit for a dtype: float32 sums in another order differ slightly."""
    dt = np.dtype(dtype)
    if dt == np.float16:
        return 1e-2, 1e-2
    if dt == np.float32:
        return 2e-5, 2e-5
    return 1e-9, 1e-11


def close(got: np.ndarray, want: np.ndarray, dtype=None, tol=None) -> bool:
    """Same shape and equal within a tolerance for ``dtype`` (default: want's dtype), or within
    ``tol`` = (rtol, atol scale) when a check gives its own."""
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return False
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    if not np.array_equal(np.isfinite(g), np.isfinite(w)):
        return False
    rtol, atol = tol or tolerance(dtype if dtype is not None else want.dtype)
    scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
    fin = np.isfinite(w)
    return bool(np.allclose(g[fin], w[fin], rtol=rtol, atol=atol * scale))


def differing_rows(got: np.ndarray, want: np.ndarray, dtype=None, limit: int = 6, tol=None) -> list:
    """Indices (over all axes but the last) where got and want differ; both the same shape."""
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    if g.ndim == 0:
        return []
    rtol, atol = tol or tolerance(dtype if dtype is not None else want.dtype)
    scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
    bad = ~np.isclose(g, w, rtol=rtol, atol=atol * scale, equal_nan=False)
    if g.ndim > 1:
        bad = bad.reshape(-1, g.shape[-1]).any(axis=1).reshape(g.shape[:-1])
    idx = np.argwhere(bad)
    rows = [tuple(int(v) for v in row) if len(row) > 1 else int(row[0]) for row in idx[:limit]]
    return rows


def fmt(x, precision: int = 4, limit: int = 8) -> str:
    """A short readable rendering of a small array for messages."""
    a = np.asarray(x)
    if a.size > limit:
        flat = np.array2string(a.ravel()[:limit], precision=precision, separator=", ")
        return flat[:-1] + ", ...]"
    return np.array2string(a, precision=precision, separator=", ").replace("\n", "")


def shown(case) -> bool:
    """May a message show the reference's values for this case? Only for the small examples the
    visible tests already show, which say so (meta shown=True: every visible test's case, and
    a hidden case that repeats a visible one exactly, ``tests/test_hidden_values.py`` checks
    which): for every other (hidden) case, a message names the case, the mistake and where the
    result differs, never what the reference computes (that would be the hidden test's answer
    key)."""
    return bool(case.meta.get("shown"))


def expected(case, text: str, sep: str = "; expected ") -> str:
    """``sep + text`` for a shown case, "" for a hidden one."""
    return f"{sep}{text}" if shown(case) else ""
