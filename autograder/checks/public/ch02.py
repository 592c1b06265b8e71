"""Chapter 2's public judges and mistake models (pasted into the released notebook).

Every mistake is modelled from the case and the expected value, never from the reference.
"""

from __future__ import annotations

import numpy as np

from ..compare import close, differing_rows, expected, fmt
from ..judges import (
    ROWS_NOT_COALESCED,
    ROWS_UNSORTED,
    WRONG_DTYPE,
    Mistake,
    array_judge,
    common_problems,
    mistake_id,
    row_ids_problem,
)
from ..visible import make_expect

BWD = "embedding_backward"
ROWS = "embedding_backward_rows"


def _parts(case):
    """(flat ids, flat grads (N, d), V, padding_idx) of a backward case."""
    ids, g, V = case.args
    ids = np.asarray(ids).reshape(-1).astype(np.int64)
    g = np.asarray(g)
    return ids, g.reshape(ids.size, g.shape[-1]), V, case.kwargs.get("padding_idx")


# ------------------------------------------------------------------------------------------
# Classic wrong answers, each modelled from the case (what the mistake computes)
# ------------------------------------------------------------------------------------------
def _pad(out, padding_idx):
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


def _overwrite(order):
    """dE[ids] += g (or dE[ids] = g): one write per repeated id survives, the last or the first."""

    def model(case, want):
        ids, g, V, p = _parts(case)
        if ids.size == np.unique(ids).size:
            return None
        out = np.zeros((V, g.shape[1]), dtype=want.dtype)
        if order == "last":
            out[ids] = g
        else:
            out[ids[::-1]] = g[::-1]
        return _pad(out, p)

    return model


def _averaged(case, want):
    """Each row divided by how often its id occurs (the padding row is zero either way)."""
    ids, g, V, p = _parts(case)
    if ids.size == np.unique(ids).size:
        return None
    counts = np.bincount(ids, minlength=V)[:, None]
    return (want / np.maximum(counts, 1)).astype(want.dtype)


def _transposed(case, want):
    return want.T if want.ndim == 2 else None


def _per_position(case, want):
    """The upstream gradient handed back unchanged: one row per position, not per table row."""
    return np.asarray(case.args[1])


def _touched_rows_only(padded):
    """Only the rows of ids that occur, in sorted order; with ``padded=False`` the padding row
    among them kept its gradient as well."""

    def model(case, want):
        ids, g, V, p = _parts(case)
        rows = np.unique(ids)
        if rows.size == V:
            return None
        out = want.astype(np.float64)
        if not padded:
            if p is None:
                return None
            out[p % V] = g[ids == p % V].astype(np.float64).sum(axis=0)
        return out[rows].astype(want.dtype)

    return model


def _pad_ignored_when(test):
    """The expected gradient, except that the padding row holds its ids' gradients too."""

    def model(case, want):
        ids, g, V, p = _parts(case)
        if p is None or not test(p):
            return None
        out = want.astype(np.float64)
        out[p % V] = g[ids == p % V].astype(np.float64).sum(axis=0)
        return out.astype(want.dtype)

    return model


def _first_axis_loop(case, want):
    """for n in range(len(ids)): dE[ids[n]] += g[n] on (B, T) ids: the rows of ids accumulate,
    but within one row a repeated id keeps only its last position (the trap, row by row). Built
    from the expected gradient by taking out the earlier occurrences inside each row."""
    ids, g, V = np.asarray(case.args[0]), np.asarray(case.args[1]), case.args[2]
    p = case.kwargs.get("padding_idx")
    if ids.ndim < 2 or ids.size == 0:
        return None
    rows = ids.reshape(len(ids), -1).astype(np.int64)
    g = g.reshape(rows.shape + (g.shape[-1],)).astype(np.float64)
    out = want.astype(np.float64)
    for n, row in enumerate(rows):
        for k, i in enumerate(row):
            if i in row[k + 1 :] and (p is None or i != p % V):
                out[i] -= g[n, k]
    return out.astype(want.dtype)


TRAP = (
    "repeated ids overwrote each other instead of accumulating: an id that occurs k times must "
    "receive the sum of its k gradients, but dE[ids] += g (or dE[ids] = g) keeps only one of them, "
    "because numpy reads all rows first and writes each repeated row once (buffered). Accumulate "
    "unbuffered: np.add.at(dE, flat_ids, flat_grads) adds every occurrence (as PyTorch's "
    "index_add_ does); a loop over positions or np.bincount per column works too"
)
ONLY_1D = (
    "it works only for 1-D ids: ids can have any shape ((B, T), more axes, or 0-d). Flatten ids "
    "to (N,) and grad_out to (N, d) first (reshape), then sum per row"
)

OVERWRITE = Mistake("trap-overwrite", TRAP, (_overwrite("last"), _overwrite("first")))
AVERAGED = Mistake(
    "averaged",
    "repeated ids were averaged instead of summed: the chain rule adds one contribution per "
    "position, so an id that occurs k times gets the sum of its k gradients, not their mean",
    _averaged,
)
ONLY_1D_IDS = Mistake("only-1d-ids", ONLY_1D, _first_axis_loop)
PADDING_ZERO_SKIPPED = Mistake(
    "padding-zero-skipped",
    "padding_idx = 0 was ignored and row 0 got gradient. `if padding_idx:` is False when "
    "padding_idx is 0; test `if padding_idx is not None:` instead",
    _pad_ignored_when(lambda p: p == 0),
)
PADDING_NEGATIVE_IGNORED = Mistake(
    "padding-negative-ignored",
    "the padding row got gradient: a negative padding_idx counts from the end (-1 is row V-1, "
    "as in Python indexing), and that row must be all zeros. Comparing ids with a negative "
    "number never matches: turn it into a row number first (padding_idx % V)",
    _pad_ignored_when(lambda p: p < 0),
)
PADDING_IGNORED = Mistake(
    "padding-ignored",
    "the padding row got gradient: row padding_idx of the result must be all zeros, however "
    "often the padding id occurs. Zero it after the accumulation, or leave the padding ids "
    "out of the sum: zeroing it before np.add.at lets the add put their gradients back",
    _pad_ignored_when(lambda p: True),
)
BWD_MISTAKES = [
    OVERWRITE,
    AVERAGED,
    PADDING_ZERO_SKIPPED,
    PADDING_NEGATIVE_IGNORED,
    PADDING_IGNORED,
    Mistake(
        "transposed-gradient",
        "the result is transposed: the gradient of the table has the table's shape (V, d), one "
        "row per id (S^T G, not G^T S)",
        _transposed,
    ),
    Mistake(
        "touched-rows-only",
        "embedding_backward returned only the rows of ids that occur; the dense gradient has all "
        "V rows, shape (V, d), with zeros for ids that do not occur",
        (_touched_rows_only(padded=True), _touched_rows_only(padded=False)),
    ),
    Mistake(
        "per-position",
        "embedding_backward returned the upstream gradient per position; the gradient of the "
        "table has one row per table row, shape (V, d): add each g_n into row x_n",
        _per_position,
    ),
    ONLY_1D_IDS,
]
# embedding_backward's hints for an exception with one usual cause, and its dtype mistake
RESHAPE_EMPTY = Mistake(
    "reshape-empty",
    "reshape(N, -1) on empty ids: the -1 cannot be worked out from 0 elements; give the width",
)
WIDTH_FROM_AXIS_1 = Mistake(
    "width-from-axis-1",
    "the width d was taken from grad_out.shape[1]: grad_out has shape ids.shape + (d,), so for ids "
    "of shape (B, T) its axis 1 is T; the width is grad_out.shape[-1]",
)
FLOAT64_ZEROS = Mistake(
    "float64-zeros",
    "a float64 result for float32 gradients: np.zeros((V, d)) is float64 by default",
)
# embedding_backward_rows
ROWS_OVERWRITE = Mistake("rows-trap-overwrite", TRAP)
ROWS_AVERAGED = Mistake("rows-averaged", "repeated ids were averaged instead of summed in values")
ROWS_MISTAKES = [ROWS_NOT_COALESCED, ROWS_UNSORTED, ROWS_OVERWRITE, ROWS_AVERAGED]
# Every mistake this chapter recognises (judges.COMMON besides): ids unique within the chapter.
MISTAKES = [*BWD_MISTAKES, RESHAPE_EMPTY, WIDTH_FROM_AXIS_1, FLOAT64_ZEROS, *ROWS_MISTAKES]

_values_judge = array_judge(BWD, check_dtype=False, mistakes=BWD_MISTAKES)


def _error_hint(case, got, want, fname):
    """An exception on ids that are not 1-D usually means the code assumed 1-D ids."""
    ids = np.asarray(case.args[0])
    if got.error_type in (None, "NotImplementedError") or want.error_type is not None:
        return None
    if ids.size == 0 and "size 0" in (got.error or ""):
        return RESHAPE_EMPTY.said(
            f"{fname} raised {got.error_type} for {case.label}: {got.error}. With no ids, "
            "reshape(N, -1) cannot work out the -1 from 0 elements: give the width instead, "
            "grad_out.reshape(-1, d) with d = grad_out.shape[-1]"
        )
    if ids.ndim != 1 and ids.size:
        shape = np.shape(case.args[1])
        if len(shape) >= 3 and shape[1] != shape[-1]:  # d taken from the wrong axis
            return WIDTH_FROM_AXIS_1.said(
                f"{fname} raised {got.error_type} for {case.label} (ids of shape {ids.shape}, "
                f"grad_out of shape {shape}). This usually means the width d was taken from "
                f"grad_out.shape[1] = {shape[1]}, the second axis of ids. grad_out has shape "
                f"ids.shape + (d,), so the width is grad_out.shape[-1] = {shape[-1]}; flatten with "
                f"grad_out.reshape(-1, grad_out.shape[-1]). The error was: {got.error}"
            )
        return ONLY_1D_IDS.said(
            f"{fname} raised {got.error_type} for {case.label} (ids of shape {ids.shape}): "
            f"{ONLY_1D}. The error was: {got.error}"
        )
    return None


def _dtype_message(case, got_dtype, want_dtype, fname):
    if want_dtype == np.float32 and got_dtype == np.float64:
        return FLOAT64_ZEROS.said(
            f"{fname} returned a float64 result for float32 gradients ({case.label}). "
            "np.zeros((V, d)) is float64 by default: pass dtype=grad_out.dtype"
        )
    return WRONG_DTYPE.said(
        f"{fname} returned {got_dtype} for {case.label}; expected {want_dtype} (grad_out's dtype)."
    )


def padding_companion(case):
    """The call of the student's own embedding_backward a case with padding_idx 0 or negative
    asks for (the whole return, :func:`_ignores_positive_padding`): the same ids and gradients
    with a positive padding row q that occurs in ids (the largest other than padding_idx's row),
    padding_idx passed by position. None for any other case."""
    p = case.kwargs.get("padding_idx")
    if p is None or p > 0:
        return None
    ids, _, V, _ = _parts(case)
    others = [int(i) for i in np.unique(ids) if 0 < i != p % V]
    return (BWD, [(case.args[0], case.args[1], V, others[-1])], "whole") if others else None


def _ignores_positive_padding(case, got):
    """True when the student's own embedding_backward (got.companion, :func:`padding_companion`)
    gave the positive padding row q gradient too: then a wrong padding row for padding_idx 0 or
    negative is padding ignored altogether, not the 0 or the negative value's own mistake."""
    own = (got.companion or [None])[0]
    p = case.kwargs.get("padding_idx")
    if not own or len(own) != 1 or p is None:
        return False
    ids, g, V, _ = _parts(case)
    q = max(int(i) for i in np.unique(ids) if 0 < i != p % V)
    _, _, shape, flat = own[0]
    if list(shape) != [V, g.shape[1]]:
        return False
    row = np.asarray(flat, dtype=np.float64).reshape(V, g.shape[1])[q]
    return bool(np.any(row != 0)) and np.allclose(row, g[ids == q].astype(np.float64).sum(axis=0))


def backward_judge(case, got, want):
    hint = _error_hint(case, got, want, BWD)
    if hint:
        return hint
    msg = _values_judge(case, got, want)
    specific = {PADDING_ZERO_SKIPPED.name, PADDING_NEGATIVE_IGNORED.name}
    if mistake_id(msg) in specific and _ignores_positive_padding(case, got):
        return PADDING_IGNORED.on(case)
    if msg:
        return msg
    if got.value.dtype != want.value.dtype:
        return _dtype_message(case, got.value.dtype, want.value.dtype, BWD)
    return None


def _rows_models(case, w_rows, w_vals):
    """values as the classic mistakes give them (averaged, overwritten), from the expected
    rows and values."""
    ids, g = np.asarray(case.args[0]).reshape(-1).astype(np.int64), np.asarray(case.args[1])
    g = g.reshape(ids.size, g.shape[-1])
    slot = np.searchsorted(w_rows, ids)
    counts = np.bincount(slot, minlength=w_rows.size)[:, None]
    last = np.zeros(w_vals.shape)
    last[slot] = g
    return {"averaged": w_vals / np.maximum(counts, 1), "overwrite": last}


def rows_judge(case, got, want):
    problem = _error_hint(case, got, want, ROWS) or common_problems(case, got, want, ROWS)
    if problem:
        return problem
    problem = row_ids_problem(case, got, want, ROWS)
    if problem:
        return problem
    (rows, vals), (w_rows, w_vals) = got.values, want.values
    if vals.shape != w_vals.shape:
        return (
            f"values should have shape (len(rows), d) = {w_vals.shape} for {case.label}; "
            f"got {vals.shape}."
        )
    if not close(vals, w_vals, w_vals.dtype):
        models = _rows_models(case, w_rows, w_vals)
        if close(vals, models["overwrite"], w_vals.dtype):
            return ROWS_OVERWRITE.on(case)
        if close(vals, models["averaged"], w_vals.dtype):
            return ROWS_AVERAGED.said(
                f"repeated ids were averaged instead of summed in values for {case.label}: an id "
                "that occurs k times gets the sum of its k gradients"
            )
        bad = differing_rows(vals, w_vals, w_vals.dtype)
        k = bad[0] if bad else 0
        return (
            f"values are wrong for {case.label} at rows {bad} of values: values[{k}] (id "
            f"{rows[k]}) is {fmt(vals[k])}{expected(case, fmt(w_vals[k]), ', expected ')}."
        )
    if vals.dtype != w_vals.dtype:
        return _dtype_message(case, vals.dtype, w_vals.dtype, ROWS)
    return None


def rows_empty_companion(case):
    """The call of the student's own embedding_backward_rows an empty-ids case asks for (the whole
    return): three ids, two of them repeated, with gradients of the case's width and dtype."""
    g = np.asarray(case.args[1])
    return (ROWS, [(np.array([1, 0, 1]), np.ones((3, g.shape[-1]), dtype=g.dtype))], "whole")


def rows_empty_judge(case, got, want):
    """The empty-ids cell grades the shapes (and dtype) of rows and values for no ids. A values
    dtype that the student's own function also gives for ids that occur (float64 values for
    float32 gradients) is the values cell's to charge (its float32 case), so it costs this cell
    nothing; a wrong dtype for empty ids only is this cell's own."""
    msg = rows_judge(case, got, want)
    if mistake_id(msg) not in {FLOAT64_ZEROS.name, WRONG_DTYPE.name}:
        return msg
    own = (got.companion or [None])[0]
    if own and len(own) == 2 and own[1][1] == str(got.values[1].dtype):
        return None
    return msg


JUDGES = {BWD: backward_judge, ROWS: rows_judge, f"{ROWS}:empty": rows_empty_judge}
expect = make_expect(
    JUDGES, MISTAKES, {BWD: padding_companion, f"{ROWS}:empty": rows_empty_companion}
)
