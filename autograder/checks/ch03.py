"""Chapter 3: the fancy-indexing trap. Hidden checks for its exercise, an in-place sparse SGD step.

The function returns None and changes its first argument, so every case grades argument 0 after
the call (``Case(output=("arg", 0))``); whether it returned None is checked in one test cell.
"""

from __future__ import annotations

import numpy as np

from .ch02 import _error_hint
from .data import distinct as _distinct
from .data import grads as _grads
from .data import ids as _ids
from .data import table as _table
from .data import zipf as _zipf
from .framework import Case, Mistake, array_judge, checks_for

A = "03_fancy_indexing_trap"
check = checks_for(A)
UPD = "sparse_sgd_update_"
NAMES = ["E", "ids", "grad_out", "lr"]


def upd(label, E, ids, grad_out, lr):
    return Case(label, (E, ids, grad_out, lr), output=("arg", 0), meta={"arg_names": NAMES})


def _parts(case):
    E, ids, g, lr = case.args
    flat = np.asarray(ids).reshape(-1).astype(np.int64)
    g = np.asarray(g)
    return np.asarray(E), flat, g.reshape(flat.size, g.shape[-1]), lr


def _row_sums(E, flat, g):
    sums = np.zeros(E.shape, dtype=np.float64)
    np.add.at(sums, flat, g.astype(np.float64))
    return sums


# ------------------------------------------------------------------------------------------
# Classic wrong answers, each modelled from the case (the table they leave behind)
# ------------------------------------------------------------------------------------------
def _trap(order):
    """E[ids] -= lr * g: one write per repeated id survives (the last, or the first)."""

    def model(case, want):
        E, flat, g, lr = _parts(case)
        if flat.size == np.unique(flat).size:
            return None
        out = E.copy()
        if order == "last":
            out[flat] = E[flat] - lr * g
        else:
            out[flat[::-1]] = E[flat[::-1]] - lr * g[::-1]
        return out

    return model


def _unchanged(case, want):
    """E = E - lr * G rebinds the local name: the caller's table never changes."""
    E, flat, g, lr = _parts(case)
    return None if flat.size == 0 or lr == 0 else E.copy()


def _uphill(case, want):
    E, flat, g, lr = _parts(case)
    return (E + lr * _row_sums(E, flat, g)).astype(E.dtype)


def _averaged(case, want):
    E, flat, g, lr = _parts(case)
    if flat.size == np.unique(flat).size:
        return None
    counts = np.bincount(flat, minlength=E.shape[0])[:, None]
    return (E - lr * _row_sums(E, flat, g) / np.maximum(counts, 1)).astype(E.dtype)


def _lr_ignored(case, want):
    E, flat, g, lr = _parts(case)
    if lr == 1.0:
        return None
    return (E - _row_sums(E, flat, g)).astype(E.dtype)


def _first_axis_loop(case, want):
    """for n in range(len(ids)): E[ids[n]] -= lr * g[n]: right for 1-D ids only."""
    E, ids, g, lr = case.args
    ids, g = np.asarray(ids), np.asarray(g)
    if ids.ndim < 2 or ids.size == 0:
        return None
    out = np.array(E, copy=True)
    for n in range(len(ids)):
        out[ids[n]] -= lr * g[n]
    return out


TRAP = (
    "repeated ids overwrote each other instead of accumulating: an id that occurs k times must "
    "move by lr times the sum of its k gradients, but E[ids] -= lr * g applies only one of them "
    "(numpy reads all the rows first, then writes each repeated row once: the fancy-indexing "
    "trap). Use np.subtract.at / np.add.at, or sum the gradients per row first"
)
ONLY_1D = (
    "it works only for 1-D ids: ids can have any shape ((B, T), more axes, or 0-d). Flatten ids "
    "to (N,) and grad_out to (N, d) first (reshape)"
)

UPD_MISTAKES = [
    Mistake("trap", TRAP, _trap("last")),
    Mistake("trap_first", TRAP, _trap("first")),
    Mistake(
        "not_in_place",
        "E did not change: sparse_sgd_update_ must update the caller's table in place. "
        "`E = E - lr * G` makes a new array and only rebinds the local name E; write into the "
        "array instead (E[...] -= ..., np.subtract.at(E, ...))",
        _unchanged,
    ),
    Mistake(
        "uphill",
        "the rows moved uphill: a gradient-descent step subtracts lr times the gradient "
        "(E[i] -= lr * g), it does not add it",
        _uphill,
    ),
    Mistake(
        "averaged",
        "repeated ids were averaged instead of summed: an id that occurs k times moves by lr "
        "times the sum of its k gradients, not their mean",
        _averaged,
    ),
    Mistake(
        "lr_ignored",
        "the learning rate was not applied: each row moves by lr times its summed gradient",
        _lr_ignored,
    ),
    Mistake("first_axis_loop", ONLY_1D, _first_axis_loop),
]

_values_judge = array_judge(UPD, mistakes=UPD_MISTAKES)


def update_judge(case, got, want):
    hint = _error_hint(case_as_backward(case), got, want, UPD)
    if hint:
        return hint
    return _values_judge(case, got, want)


def case_as_backward(case):
    """_error_hint reads ids from args[0]; here ids are argument 1."""
    return Case(case.label, (case.args[1],), meta=case.meta)


def in_place_judge(case, got, want):
    msg = update_judge(case, got, want)
    if msg:
        return msg
    if not got.returned_none:
        return (
            f"{UPD} returned a {got.types[0] if got.types else 'value'} for {case.label}; it "
            "should return None. It updates E in place, so there is nothing to return (like "
            "list.sort() or PyTorch's index_add_-style methods, which change the tensor itself)."
        )
    return None


# ------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------
WORKED_G = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [2.0, 1.0, 0.0]])


@check("test_update_in_place", UPD, in_place_judge)
def update_in_place():
    """sparse_sgd_update_: E changes in place and the function returns None"""
    ids = _distinct(6, 15, 200)
    return [
        upd(
            "ids [3, 1] with lr = 0.5",
            np.zeros((4, 2)),
            np.array([3, 1]),
            np.array([[1.0, 2.0], [3.0, 4.0]]),
            0.5,
        ),
        upd(
            "6 distinct ids into a random (15, 4) table",
            _table(15, 4, 201),
            ids,
            _grads(ids, 4, 202),
            0.1,
        ),
    ]


@check("test_update_distinct", UPD, update_judge)
def update_distinct():
    """sparse_sgd_update_: distinct ids move their own rows, the others stay"""
    ids = _distinct(30, 80, 210)
    return [
        upd(
            "ids [4, 0] with lr = 0.1",
            np.arange(10.0).reshape(5, 2),
            np.array([4, 0]),
            np.ones((2, 2)),
            0.1,
        ),
        upd("30 distinct ids, V = 80, d = 8", _table(80, 8, 211), ids, _grads(ids, 8, 212), 0.05),
        upd(
            "the last row only (V-1)",
            _table(9, 3, 213),
            np.array([8]),
            _grads(np.array([8]), 3, 214),
            1.0,
        ),
    ]


@check("test_update_repeated", UPD, update_judge)
def update_repeated():
    """sparse_sgd_update_: a repeated id moves by the sum of its gradients"""
    same = np.full(500, 3)
    zipf = _zipf(2000, 300, 220)
    ids2 = _ids((16, 32), 6, 221)
    return [
        upd(
            "the worked example (ids [2, 0, 2], lr = 1)",
            np.zeros((4, 3)),
            np.array([2, 0, 2]),
            WORKED_G.copy(),
            1.0,
        ),
        upd(
            "ids [1, 1, 1, 4, 1] with lr = 0.3",
            _table(5, 2, 222),
            np.array([1, 1, 1, 4, 1]),
            _grads(np.zeros(5), 2, 223),
            0.3,
        ),
        upd("the same id 500 times", _table(10, 4, 224), same, _grads(same, 4, 225) + 0.5, 0.01),
        upd(
            "2,000 Zipf-distributed ids (the top id hundreds of times)",
            _table(300, 8, 226),
            zipf,
            _grads(zipf, 8, 227),
            0.05,
        ),
        upd(
            "ids of shape (16, 32) drawn from V = 6",
            _table(6, 3, 228),
            ids2,
            _grads(ids2, 3, 229),
            0.02,
        ),
        upd(
            "a float32 table, 400 Zipf-distributed ids",
            _table(25, 4, 269, np.float32),
            (z32 := _zipf(400, 25, 261)),
            _grads(z32, 4, 270, np.float32),
            0.01,
        ),
    ]


@check("test_update_batch_shapes", UPD, update_judge)
def update_batch_shapes():
    """sparse_sgd_update_: ids of any shape (2-D, 3-D, 0-d)"""
    ids2 = _distinct((4, 5), 40, 230)
    ids3 = _distinct((2, 3, 4), 30, 231)
    return [
        upd("ids of shape (4, 5)", _table(40, 3, 232), ids2, _grads(ids2, 3, 233), 0.1),
        upd("ids of shape (2, 3, 4)", _table(30, 2, 234), ids3, _grads(ids3, 2, 235), 0.2),
        upd("a 0-d id (np.array(4))", _table(6, 2, 236), np.array(4), np.array([1.0, 1.0]), 2.0),
        upd(
            "ids of shape (1, 1)",
            _table(6, 3, 237),
            np.array([[2]]),
            _grads(np.array([[2]]), 3, 238),
            0.5,
        ),
    ]


@check("test_update_edge_cases", UPD, update_judge)
def update_edge():
    """sparse_sgd_update_: empty ids, lr = 0, V = 1 and narrow integer ids"""
    return [
        upd(
            "an empty ids array of shape (0,)",
            _table(3, 2, 240),
            np.array([], dtype=np.int64),
            np.zeros((0, 2)),
            0.1,
        ),
        upd(
            "empty ids of shape (2, 0)",
            _table(4, 3, 241),
            np.zeros((2, 0), dtype=np.int64),
            np.zeros((2, 0, 3)),
            0.1,
        ),
        upd(
            "lr = 0 (nothing moves)",
            _table(5, 2, 242),
            np.array([1, 3]),
            _grads(np.zeros(2), 2, 243),
            0.0,
        ),
        upd(
            "a table with one row (V = 1)",
            _table(1, 3, 244),
            np.array([0]),
            _grads(np.array([0]), 3, 245),
            0.5,
        ),
        upd(
            "int32 ids",
            _table(9, 2, 246),
            (i := _distinct(5, 9, 247, np.int32)),
            _grads(i, 2, 248),
            0.1,
        ),
        upd(
            "uint8 ids",
            _table(200, 2, 249),
            (i := _distinct(6, 200, 250, np.uint8)),
            _grads(i, 2, 251),
            0.1,
        ),
    ]


@check("test_update_float32_and_inputs", UPD, update_judge)
def update_float32_inputs():
    """sparse_sgd_update_: float32 tables, and ids and grad_out unchanged"""
    ids = _distinct(10, 25, 260)
    return [
        upd(
            "a float32 table",
            _table(25, 6, 262, np.float32),
            ids,
            _grads(ids, 6, 263, np.float32),
            0.1,
        ),
        upd("a float64 table", _table(25, 6, 264), ids, _grads(ids, 6, 265), 0.1),
        upd(
            "a float32 table, ids of shape (3, 4)",
            _table(12, 3, 266, np.float32),
            (i := _distinct((3, 4), 12, 267)),
            _grads(i, 3, 268, np.float32),
            0.25,
        ),
    ]
