"""Chapter 2: the sparse, accumulating backward pass. Hidden checks for its exercise."""

from __future__ import annotations

import numpy as np

from .data import backward_case as bwd
from .data import distinct as _distinct
from .data import grads as _grads
from .data import ids as _ids
from .data import zipf as _zipf
from .framework import Case, checks_for
from .public.ch02 import (
    backward_judge,
    padding_companion,
    rows_empty_companion,
    rows_empty_judge,
    rows_judge,
)

A = "02_sparse_backward"
check = checks_for(A)
BWD, ROWS = "embedding_backward", "embedding_backward_rows"


# ------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------
WORKED_G = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [2.0, 1.0, 0.0]])


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
        bwd(
            "the worked example (ids [2, 0, 2])",
            np.array([2, 0, 2]),
            WORKED_G.copy(),
            4,
            shown=True,
        ),
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


@check("test_backward_shapes_and_edges", BWD, backward_judge)
def backward_shapes_and_edges():
    """embedding_backward: a (V, d) result for ids of any shape (2-D, 3-D, 0-d, empty) and integer dtype"""
    # Distinct ids throughout: a repeated id would make the trap fail this cell too, and it is
    # test_backward_repeated's property (that cell has ids of shape (8, 16) with repeats).
    cases = []
    for i, (shape, V, d) in enumerate(
        [((5,), 9, 3), ((2, 3), 7, 3), ((2, 3, 4), 30, 5), ((4, 1), 6, 2)]
    ):
        ids = _distinct(shape, V, 100 + i)
        cases.append(
            bwd(f"ids of shape {shape}, V = {V}, d = {d}", ids, _grads(ids, d, 110 + i), V)
        )
    ids2 = _distinct((4, 6), 40, 140)
    ids3 = _distinct((2, 3, 4), 30, 141)
    return cases + [
        bwd("ids of shape (4, 6)", ids2, _grads(ids2, 5, 142), 40),
        bwd("ids of shape (2, 3, 4), d = 3", ids3, _grads(ids3, 3, 143), 30),
        bwd("a 0-d id (np.array(2))", np.array(2), _grads(np.array(2), 4, 144), 6),
        bwd("ids of shape (1, 1)", np.array([[5]]), _grads(np.array([[5]]), 2, 145), 6),
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
    cases = [
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
    for case in cases:  # padding_idx 0 or negative: the student's own call with a positive one
        if padding_companion(case) is not None:
            case.meta["companion"] = padding_companion(case)
    return cases


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
def rows_case(label, ids, grad_out, **meta):
    return Case(label, (ids, grad_out), meta={"arg_names": ["ids", "grad_out"], **meta})


@check("test_backward_rows", ROWS, rows_judge)
def backward_rows():
    """embedding_backward_rows: sorted distinct rows with their summed gradients"""
    zipf = _zipf(200, 50, 180)
    same = np.full(300, 4)
    ids2 = _ids((3, 5), 8, 181)
    return [
        rows_case(
            "the worked example (ids [2, 0, 2])", np.array([2, 0, 2]), WORKED_G.copy(), shown=True
        ),
        rows_case(
            "ids [5, 1, 5, 3, 1, 5] (first occurrences unsorted)",
            np.array([5, 1, 5, 3, 1, 5]),
            _grads(np.zeros(6), 2, 182),
        ),
        rows_case("the same id 300 times", same, _grads(same, 3, 183)),
        rows_case("200 Zipf-distributed ids", zipf, _grads(zipf, 4, 184)),
        rows_case("ids of shape (3, 5)", ids2, _grads(ids2, 3, 185)),
        rows_case("a 0-d id", np.array(6), _grads(np.array(6), 3, 186)),
        rows_case("float32 gradients", (i := _ids(40, 15, 187)), _grads(i, 5, 188, np.float32)),
    ]


def empty_rows_case(label, ids, grad_out):
    """An empty-ids case, with the student's own rows for three ids of the same dtype (a values
    dtype wrong there too is test_backward_rows's to charge)."""
    case = rows_case(label, ids, grad_out)
    case.meta["companion"] = rows_empty_companion(case)
    return case


@check("test_backward_rows_empty", ROWS, rows_empty_judge)
def backward_rows_empty():
    """embedding_backward_rows: no ids give rows of shape (0,) and values of shape (0, d)"""
    return [
        empty_rows_case(
            "an empty ids array of shape (0,)", np.array([], dtype=np.int64), np.zeros((0, 2))
        ),
        empty_rows_case(
            "empty ids of shape (2, 0), d = 3",
            np.zeros((2, 0), dtype=np.int64),
            np.zeros((2, 0, 3)),
        ),
        empty_rows_case(
            "empty ids, float32 gradients (d = 4)",
            np.array([], dtype=np.int64),
            np.zeros((0, 4), dtype=np.float32),
        ),
    ]
