"""Chapter 2: the sparse, accumulating backward pass. Hidden checks for its exercise."""

from __future__ import annotations

import numpy as np

from .compare import close, differing_rows, expected, fmt, shown
from .data import distinct as _distinct
from .data import grads as _grads
from .data import ids as _ids
from .data import zipf as _zipf
from .framework import Case, Mistake, array_judge, checks_for, common_problems, shape_judge

A = "02_sparse_backward"
check = checks_for(A)
BWD = "embedding_backward"
ROWS = "embedding_backward_rows"
BWD_NAMES = ["ids", "grad_out", "V"]


def bwd(label, ids, grad_out, V, padding_idx=None):
    kwargs = {} if padding_idx is None else {"padding_idx": padding_idx}
    return Case(label, (ids, grad_out, V), kwargs, meta={"arg_names": BWD_NAMES})


def _parts(case):
    """(flat ids, flat grads (N, d), V, padding_idx) of a backward case."""
    ids, g, V = case.args
    ids = np.asarray(ids).reshape(-1).astype(np.int64)
    g = np.asarray(g)
    return ids, g.reshape(ids.size, g.shape[-1]), V, case.kwargs.get("padding_idx")


# ------------------------------------------------------------------------------------------
# Classic wrong answers, each modelled from the case (what the mistake computes)
# ------------------------------------------------------------------------------------------
def _sum_rows(ids, g, V, dtype):
    out = np.zeros((V, g.shape[1]), dtype=np.float64)
    np.add.at(out, ids, g.astype(np.float64))
    return out.astype(dtype)


def _pad(out, padding_idx):
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


def _overwrite(order):
    """G[ids] += g (or G[ids] = g): one write per repeated id survives, the last or the first."""

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
    ids, g, V, p = _parts(case)
    if ids.size == np.unique(ids).size:
        return None
    counts = np.bincount(ids, minlength=V)[:, None]
    out = _sum_rows(ids, g, V, np.float64) / np.maximum(counts, 1)
    return _pad(out.astype(want.dtype), p)


def _transposed(case, want):
    return want.T if want.ndim == 2 else None


def _per_position(case, want):
    """The upstream gradient handed back unchanged: one row per position, not per table row."""
    return np.asarray(case.args[1])


def _touched_rows_only(case, want):
    ids, g, V, p = _parts(case)
    rows = np.unique(ids)
    return want[rows] if rows.size != V else None


def _pad_ignored_when(test):
    def model(case, want):
        ids, g, V, p = _parts(case)
        if p is None or not test(p):
            return None
        return _sum_rows(ids, g, V, want.dtype)

    return model


def _first_axis_loop(case, want):
    """for n in range(len(ids)): G[ids[n]] += g[n]: fine for 1-D ids, not for (B, T)."""
    ids, g, V = np.asarray(case.args[0]), np.asarray(case.args[1]), case.args[2]
    p = case.kwargs.get("padding_idx")
    if ids.ndim < 2 or ids.size == 0:
        return None
    out = np.zeros((V, g.shape[-1]), dtype=want.dtype)
    for n in range(len(ids)):
        out[ids[n]] += g[n]
    return _pad(out, p)


TRAP = (
    "repeated ids overwrote each other instead of accumulating: an id that occurs k times must "
    "receive the sum of its k gradients, but G[ids] += g (or G[ids] = g) keeps only one of them, "
    "because numpy reads all rows first and writes each repeated row once. Accumulate with a loop "
    "over positions, np.add.at, or np.bincount"
)
ONLY_1D = (
    "it works only for 1-D ids: ids can have any shape ((B, T), more axes, or 0-d). Flatten ids "
    "to (N,) and grad_out to (N, d) first (reshape), then sum per row"
)

BWD_MISTAKES = [
    Mistake("overwrite", TRAP, _overwrite("last")),
    Mistake("overwrite_first", TRAP, _overwrite("first")),
    Mistake(
        "averaged",
        "repeated ids were averaged instead of summed: the chain rule adds one contribution per "
        "position, so an id that occurs k times gets the sum of its k gradients, not their mean",
        _averaged,
    ),
    Mistake(
        "padding_zero_skipped",
        "padding_idx = 0 was ignored and row 0 got gradient. `if padding_idx:` is False when "
        "padding_idx is 0; test `if padding_idx is not None:` instead",
        _pad_ignored_when(lambda p: p == 0),
    ),
    Mistake(
        "padding_negative_ignored",
        "the padding row got gradient: a negative padding_idx counts from the end (-1 is row V-1, "
        "as in Python indexing), and that row must be all zeros. Comparing ids with a negative "
        "number never matches: turn it into a row number first (padding_idx % V)",
        _pad_ignored_when(lambda p: p < 0),
    ),
    Mistake(
        "padding_ignored",
        "the padding row got gradient: row padding_idx of the result must be all zeros, however "
        "often the padding id occurs",
        _pad_ignored_when(lambda p: True),
    ),
    Mistake(
        "transposed",
        "the result is transposed: the gradient of the table has the table's shape (V, d), one "
        "row per id (S^T G, not G^T S)",
        _transposed,
    ),
    Mistake(
        "touched_rows_only",
        "embedding_backward returned only the rows of ids that occur; the dense gradient has all "
        "V rows, shape (V, d), with zeros for ids that do not occur",
        _touched_rows_only,
    ),
    Mistake(
        "per_position",
        "embedding_backward returned the upstream gradient per position; the gradient of the "
        "table has one row per table row, shape (V, d): add each g_n into row x_n",
        _per_position,
    ),
    Mistake("first_axis_loop", ONLY_1D, _first_axis_loop),
]

_values_judge = array_judge(BWD, check_dtype=False, mistakes=BWD_MISTAKES)


def _error_hint(case, got, want, fname):
    """An exception on ids that are not 1-D usually means the code assumed 1-D ids."""
    ids = np.asarray(case.args[0])
    if got.error_type in (None, "NotImplementedError") or want.error_type is not None:
        return None
    if ids.size == 0 and "size 0" in (got.error or ""):
        return (
            f"{fname} raised {got.error_type} for {case.label}: {got.error}. With no ids, "
            "reshape(N, -1) cannot work out the -1 from 0 elements: give the width instead, "
            "grad_out.reshape(-1, d) with d = grad_out.shape[-1]"
        )
    if ids.ndim != 1 and ids.size:
        return (
            f"{fname} raised {got.error_type} for {case.label} (ids of shape {ids.shape}): "
            f"{ONLY_1D}. The error was: {got.error}"
        )
    return None


def _dtype_message(case, got_dtype, want_dtype, fname):
    if want_dtype == np.float32 and got_dtype == np.float64:
        return (
            f"{fname} returned a float64 result for float32 gradients ({case.label}). "
            "np.zeros((V, d)) is float64 by default: pass dtype=grad_out.dtype"
        )
    return (
        f"{fname} returned {got_dtype} for {case.label}; expected {want_dtype} (grad_out's dtype)."
    )


def backward_judge(case, got, want):
    hint = _error_hint(case, got, want, BWD)
    if hint:
        return hint
    msg = _values_judge(case, got, want)
    if msg:
        return msg
    if got.value.dtype != want.value.dtype:
        return _dtype_message(case, got.value.dtype, want.value.dtype, BWD)
    return None


_bwd_shape = shape_judge(BWD, BWD_MISTAKES, match_values=True, expected="(V, d) = ")


def _shape_judge(case, got, want):
    return _error_hint(case, got, want, BWD) or _bwd_shape(case, got, want)


# ------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------
WORKED_G = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [2.0, 1.0, 0.0]])


@check("test_backward_shape", BWD, _shape_judge)
def backward_shape():
    """embedding_backward: the gradient has the table's shape (V, d)"""
    cases = []
    for i, (shape, V, d) in enumerate(
        [((5,), 9, 3), ((2, 3), 7, 3), ((2, 3, 4), 30, 5), ((4, 1), 6, 2)]
    ):
        ids = _distinct(shape, V, 100 + i)
        cases.append(
            bwd(f"ids of shape {shape}, V = {V}, d = {d}", ids, _grads(ids, d, 110 + i), V)
        )
    return cases


@check("test_backward_distinct", BWD, backward_judge)
def backward_distinct():
    """embedding_backward: distinct ids get their own gradient rows, the others zero"""
    ids1 = np.array([3, 1])
    return [
        bwd("ids [3, 1] with V = 5", ids1, np.array([[1.0, 2.0], [3.0, 4.0]]), 5),
        bwd("20 distinct ids, V = 50, d = 8", (i := _distinct(20, 50, 120)), _grads(i, 8, 121), 50),
        bwd("one id, the last row (V-1)", np.array([9]), _grads(np.array([9]), 4, 122), 10),
        bwd(
            "every id once, in reverse order",
            np.arange(6)[::-1].copy(),
            _grads(np.arange(6), 3, 123),
            6,
        ),
    ]


@check("test_backward_repeated", BWD, backward_judge)
def backward_repeated():
    """embedding_backward: repeated ids accumulate (sum) their gradients"""
    zipf = _zipf(300, 100, 130)
    same = np.full(500, 7)
    return [
        bwd("the worked example (ids [2, 0, 2])", np.array([2, 0, 2]), WORKED_G.copy(), 4),
        bwd(
            "ids [3, 3, 3, 1, 3] with V = 5",
            np.array([3, 3, 3, 1, 3]),
            _grads(np.zeros(5), 2, 131),
            5,
        ),
        bwd("the same id 500 times", same, _grads(same, 4, 132), 10),
        bwd("300 Zipf-distributed ids, V = 100, d = 6", zipf, _grads(zipf, 6, 133), 100),
        bwd(
            "ids of shape (8, 16) drawn from V = 5",
            (i := _ids((8, 16), 5, 134)),
            _grads(i, 3, 135),
            5,
        ),
    ]


@check("test_backward_batch_shapes", BWD, backward_judge)
def backward_batch_shapes():
    """embedding_backward: ids of any shape (2-D, 3-D, 0-d)"""
    ids2 = _distinct((4, 6), 40, 140)
    ids3 = _distinct((2, 3, 4), 30, 141)
    return [
        bwd("ids of shape (4, 6)", ids2, _grads(ids2, 5, 142), 40),
        bwd("ids of shape (2, 3, 4)", ids3, _grads(ids3, 3, 143), 30),
        bwd("a 0-d id (np.array(2))", np.array(2), _grads(np.array(2), 4, 144), 6),
        bwd("ids of shape (1, 1)", np.array([[5]]), _grads(np.array([[5]]), 2, 145), 6),
    ]


@check("test_backward_edge_cases", BWD, backward_judge)
def backward_edge():
    """embedding_backward: empty ids, V = 1, boundary rows and narrow integer ids"""
    return [
        bwd("an empty ids array of shape (0,)", np.array([], dtype=np.int64), np.zeros((0, 3)), 4),
        bwd("empty ids of shape (2, 0)", np.zeros((2, 0), dtype=np.int64), np.zeros((2, 0, 5)), 3),
        bwd("a table with one row (V = 1)", np.array([0]), _grads(np.array([0]), 3, 150), 1),
        bwd("int32 ids", (i := _distinct(6, 9, 151, np.int32)), _grads(i, 2, 152), 9),
        bwd("uint8 ids", (i := _distinct(5, 200, 153, np.uint8)), _grads(i, 3, 154), 200),
        bwd(
            "ids 0 and V-1 (the first and last rows)",
            np.array([0, 7]),
            _grads(np.zeros(2), 2, 155),
            8,
        ),
    ]


@check("test_backward_padding", BWD, backward_judge)
def backward_padding():
    """embedding_backward: the padding row gets no gradient"""
    ids = np.array([1, 3, 3, 2, 3, 0])  # 3 plays the padding token (V = 4)
    g = _grads(ids, 3, 160)
    ids0 = np.array([0, 3, 0, 2, 0, 1])  # 0 plays the padding token
    g0 = _grads(ids0, 3, 164)
    batch = np.array([[5, 9, 2, 0, 0], [7, 1, 0, 0, 0]])  # (B, T) padded with 0
    gb = _grads(batch, 4, 161)
    return [
        bwd("padding_idx = 3 (V = 4)", ids, g, 4, padding_idx=3),
        bwd(
            "padding_idx = 2, ids without repeats",
            np.array([2, 0, 1]),
            _grads(np.zeros(3), 2, 162),
            5,
            padding_idx=2,
        ),
        bwd("padding_idx = -1 (row V-1 = 3)", ids, g, 4, padding_idx=-1),
        bwd("padding_idx = -4 with V = 4 (row 0)", ids0, g0, 4, padding_idx=-4),
        bwd("padding_idx = 0 on ids of shape (2, 5) padded with 0", batch, gb, 10, padding_idx=0),
        bwd("padding_idx = 0 (row 0)", ids0, g0, 4, padding_idx=0),
        bwd(
            "padding_idx = 8 that does not occur in ids",
            np.array([1, 2]),
            _grads(np.zeros(2), 2, 163),
            9,
            padding_idx=8,
        ),
    ]


@check("test_backward_dtype", BWD, backward_judge)
def backward_dtype():
    """embedding_backward: the result has grad_out's dtype"""
    ids = _distinct(12, 20, 170)
    return [
        bwd("float32 gradients", ids, _grads(ids, 6, 171, np.float32), 20),
        bwd("float64 gradients", ids, _grads(ids, 6, 172), 20),
        bwd(
            "float32 gradients, ids of shape (3, 2)",
            (i := _distinct((3, 2), 10, 173)),
            _grads(i, 4, 174, np.float32),
            10,
        ),
    ]


# ------------------------------------------------------------------------------------------
# Part B: the row-sparse form (rows, values)
# ------------------------------------------------------------------------------------------
def rows_case(label, ids, grad_out):
    return Case(label, (ids, grad_out), meta={"arg_names": ["ids", "grad_out"]})


def _rows_models(case):
    """(rows, values) the classic mistakes return: uncoalesced, unsorted, averaged, overwritten."""
    ids, g = np.asarray(case.args[0]).reshape(-1).astype(np.int64), np.asarray(case.args[1])
    g = g.reshape(ids.size, g.shape[-1])
    rows, slot = np.unique(ids, return_inverse=True)
    slot = slot.reshape(-1)
    counts = np.bincount(slot, minlength=rows.size)[:, None] if rows.size else np.zeros((0, 1))
    sums = np.zeros((rows.size, g.shape[1]))
    np.add.at(sums, slot, g.astype(np.float64))
    last = np.zeros_like(sums)
    last[slot] = g
    return {"averaged": sums / np.maximum(counts, 1), "overwrite": last}


def rows_judge(case, got, want):
    problem = _error_hint(case, got, want, ROWS) or common_problems(case, got, want, ROWS)
    if problem:
        return problem
    if not got.is_tuple or len(got.values) != 2:
        return (
            f"{ROWS} should return a tuple (rows, values) for {case.label}, "
            f"got {', '.join(got.types) or 'nothing'}."
        )
    rows, vals = got.values
    w_rows, w_vals = want.values
    if rows.ndim != 1:
        return f"rows should be a 1-D array for {case.label}; it has shape {rows.shape}."
    if rows.size and rows.dtype.kind not in "iu":
        return f"rows should hold integer ids for {case.label}; got dtype {rows.dtype}."
    if not np.array_equal(rows, w_rows):
        if rows.size > w_rows.size and np.array_equal(np.unique(rows), w_rows):
            return (
                f"rows lists an id more than once for {case.label}: each id that occurs must "
                "appear once in rows, with the sum of all its gradients in values (the "
                f"gradient has to be coalesced). Got rows {fmt(rows)}{expected(case, fmt(w_rows), ', expected ')}."
            )
        if rows.size == w_rows.size and np.array_equal(np.sort(rows), w_rows):
            return (
                f"rows must be sorted ascending for {case.label}: got {fmt(rows)}"
                f"{expected(case, fmt(w_rows), ', expected ')} (np.unique returns sorted ids)."
            )
        return (
            f"rows should be the distinct ids that occur, sorted, for {case.label}"
            f"{expected(case, fmt(w_rows), ' (')}{')' if shown(case) else ''}; got {fmt(rows)}."
        )
    if vals.shape != w_vals.shape:
        return (
            f"values should have shape (len(rows), d) = {w_vals.shape} for {case.label}; "
            f"got {vals.shape}."
        )
    if not close(vals, w_vals, w_vals.dtype):
        models = _rows_models(case)
        if close(vals, models["overwrite"], w_vals.dtype):
            return f"{TRAP} (for {case.label})"
        if close(vals, models["averaged"], w_vals.dtype):
            return (
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


@check("test_backward_rows", ROWS, rows_judge)
def backward_rows():
    """embedding_backward_rows: sorted distinct rows with their summed gradients"""
    zipf = _zipf(200, 50, 180)
    same = np.full(300, 4)
    ids2 = _ids((3, 5), 8, 181)
    return [
        rows_case("the worked example (ids [2, 0, 2])", np.array([2, 0, 2]), WORKED_G.copy()),
        rows_case(
            "ids [5, 1, 5, 3, 1, 5] (first occurrences unsorted)",
            np.array([5, 1, 5, 3, 1, 5]),
            _grads(np.zeros(6), 2, 182),
        ),
        rows_case("the same id 300 times", same, _grads(same, 3, 183)),
        rows_case("200 Zipf-distributed ids", zipf, _grads(zipf, 4, 184)),
        rows_case("ids of shape (3, 5)", ids2, _grads(ids2, 3, 185)),
        rows_case("a 0-d id", np.array(6), _grads(np.array(6), 3, 186)),
        rows_case(
            "an empty ids array of shape (0,)", np.array([], dtype=np.int64), np.zeros((0, 2))
        ),
        rows_case("float32 gradients", (i := _ids(40, 15, 187)), _grads(i, 5, 188, np.float32)),
    ]
