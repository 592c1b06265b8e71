"""Chapter 1: one-hot times a matrix is a row lookup. Hidden checks for its exercise."""

from __future__ import annotations

import numpy as np

from .data import forward_case as fwd
from .data import ids as _ids
from .data import table as _table
from .framework import Case, checks_for
from .public.ch01 import forward_judge, one_hot_judge, shape_only_judge

A = "01_one_hot_lookup"
check = checks_for(A)


@check("test_forward_shape", "embedding_forward", shape_only_judge)
def forward_shape():
    """embedding_forward: the shape is ids.shape + (d,)"""
    E = _table(7, 3, 10)
    return [
        fwd(f"ids of shape {s}", E, _ids(s, 7, 11 + i))
        for i, s in enumerate([(5,), (2, 3), (4, 1), (2, 3, 4), (1, 1, 1, 2)])
    ]


@check("test_forward_values", "embedding_forward", forward_judge)
def forward_values():
    """embedding_forward: each id is replaced by its row"""
    worked = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0], [-1.0, 1.0]])
    return [
        fwd("the worked example (ids [2, 0, 2])", worked, np.array([2, 0, 2]), shown=True),
        fwd("a random (50, 8) table, ids of shape (4, 6)", _table(50, 8, 20), _ids((4, 6), 50, 21)),
        fwd(
            "a random (1000, 16) table, ids of shape (64,)",
            _table(1000, 16, 22),
            _ids(64, 1000, 23),
        ),
        fwd("ids of shape (3, 5, 2)", _table(30, 4, 24), _ids((3, 5, 2), 30, 25)),
    ]


@check("test_forward_repeated", "embedding_forward", forward_judge)
def forward_repeated():
    """embedding_forward: repeated ids give repeated rows"""
    E = _table(10, 5, 30)
    return [
        fwd("ids [3, 3, 3, 1, 3]", E, np.array([3, 3, 3, 1, 3])),
        fwd("the same id 200 times", E, np.full(200, 7)),
        fwd("ids of shape (4, 4), all 0", E, np.zeros((4, 4), dtype=np.int64)),
    ]


@check("test_forward_edge_cases", "embedding_forward", forward_judge)
def forward_edge():
    """embedding_forward: 0-d, empty, boundary and narrow-integer ids"""
    E = _table(6, 4, 40)
    return [
        fwd("a 0-d id (np.array(2))", E, np.array(2)),
        fwd("an empty ids array of shape (0,)", E, np.array([], dtype=np.int64)),
        fwd("empty ids of shape (2, 0)", E, np.zeros((2, 0), dtype=np.int64)),
        fwd("ids 0 and V-1 (the first and last rows)", E, np.array([0, 5, 0, 5])),
        fwd("a table with one row (V = 1)", _table(1, 3, 41), np.zeros((2, 2), dtype=np.int64)),
        fwd("int32 ids", E, _ids((3, 2), 6, 42, np.int32)),
        fwd("uint8 ids", E, _ids(5, 6, 43, np.uint8)),
    ]


@check("test_forward_dtype", "embedding_forward", forward_judge)
def forward_dtype():
    """embedding_forward: the result keeps the table's dtype"""
    return [
        fwd("a float32 table", _table(20, 6, 50, np.float32), _ids((3, 4), 20, 51)),
        fwd("a float64 table", _table(20, 6, 52), _ids(7, 20, 53)),
        fwd("a float16 table", _table(9, 2, 54, np.float16), _ids(4, 9, 55)),
    ]


@check("test_one_hot", "one_hot", one_hot_judge)
def one_hot_values():
    """one_hot: shape ids.shape + (V,), a single 1.0 per position, float64"""

    def oh(label, ids, V):
        return Case(label, (ids, V), meta={"arg_names": ["ids", "V"]})

    return [
        oh("ids [2, 0, 2] with V = 4", np.array([2, 0, 2]), 4),
        oh("ids of shape (3, 4) with V = 9", _ids((3, 4), 9, 60), 9),
        oh("a 0-d id with V = 5", np.array(4), 5),
        oh("empty ids with V = 3", np.array([], dtype=np.int64), 3),
        oh("the same id 50 times with V = 2", np.ones(50, dtype=np.int64), 2),
    ]
