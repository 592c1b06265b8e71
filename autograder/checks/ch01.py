"""Chapter 1: one-hot times a matrix is a row lookup. Hidden checks for its exercise."""

from __future__ import annotations

import numpy as np

from . import reference
from .data import forward_case as fwd
from .data import ids as _ids
from .data import table as _table
from .framework import Case, checks_for
from .public.ch01 import batch_companion, costs_judge, forward_judge, one_hot_judge, ratio_judge

A = "01_one_hot_lookup"
check = checks_for(A)


# One cell grades the whole lookup (it is the chapter's starting point, not its idea): the
# worked example, ids of several shapes, repeated ids, 0-d, empty and narrow-integer ids, and the
# table's dtype kept. The judge names each classic mistake on the cases that show it.
@check("test_forward_values", "embedding_forward", forward_judge)
def forward_values():
    """embedding_forward: each id is replaced by its row, in shape ids.shape + (d,) and E's dtype"""
    worked = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0], [-1.0, 1.0]])
    E, E_edge, E_rep = _table(7, 3, 10), _table(6, 4, 40), _table(10, 5, 30)
    return [
        fwd("the worked example (ids [2, 0, 2])", worked, np.array([2, 0, 2]), shown=True),
        fwd("a random (50, 8) table, ids of shape (4, 6)", _table(50, 8, 20), _ids((4, 6), 50, 21)),
        fwd(
            "a random (1000, 16) table, ids of shape (64,)",
            _table(1000, 16, 22),
            _ids(64, 1000, 23),
        ),
        *(
            fwd(f"ids of shape {s}", E, _ids(s, 7, 11 + i))
            for i, s in enumerate([(2, 3), (4, 1), (2, 3, 4), (1, 1, 1, 2)])
        ),
        fwd("ids [3, 3, 3, 1, 3] (repeated)", E_rep, np.array([3, 3, 3, 1, 3])),
        fwd("the same id 200 times", E_rep, np.full(200, 7)),
        fwd("ids of shape (4, 4), all 0", E_rep, np.zeros((4, 4), dtype=np.int64)),
        fwd("a 0-d id (np.array(2))", E_edge, np.array(2)),
        fwd("an empty ids array of shape (0,)", E_edge, np.array([], dtype=np.int64)),
        fwd("empty ids of shape (2, 0)", E_edge, np.zeros((2, 0), dtype=np.int64)),
        fwd("ids 0 and V-1 (the first and last rows)", E_edge, np.array([0, 5, 0, 5])),
        fwd("a table with one row (V = 1)", _table(1, 3, 41), np.zeros((2, 2), dtype=np.int64)),
        fwd("int32 ids", E_edge, _ids((3, 2), 6, 42, np.int32)),
        fwd("uint8 ids", E_edge, _ids(5, 6, 43, np.uint8)),
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


# --------------------------------------------------------------------------------------------
# lookup_costs: exact counts, one cell per part (the judges grade only their part's counts)
# --------------------------------------------------------------------------------------------
COST_NAMES = ["ids_shape", "V", "d"]


def cost_case(shape, V, d, name=None, batch=False, **meta):
    label = f"lookup_costs({shape}, {V}, {d})" + (f" ({name})" if name else "")
    case = Case(label, (shape, V, d), meta={"arg_names": COST_NAMES, **meta})
    if batch:  # the student's own counts for the same ids as one flat batch
        case.meta["companion"] = batch_companion(case)
    return case


TIMING = cost_case((512,), 1000, 64, shown=True)  # the visible tests' call: values shown
ONE_D = [
    cost_case((4,), 10, 3),
    cost_case((512,), 65536, 64, "the timing's largest table"),
    cost_case((1000,), 50000, 16),
    cost_case((7,), 3, 1),
    cost_case((1,), 1, 1, "one id, a one-row table"),
]


@check("test_costs_gather", "lookup_costs", costs_judge("gather"))
def costs_gather():
    """lookup_costs: the gather moves its rows (read and written) and its int64 ids, no flops"""
    return [TIMING, *ONE_D]


@check("test_costs_product", "lookup_costs", costs_judge("product"))
def costs_product():
    """lookup_costs: the one-hot product reads both operands, writes its result, 2NVd flops"""
    tiny = cost_case((4,), 10, 3, shown=True)
    return [TIMING, tiny, *ONE_D[1:], cost_case((64,), 30522, 768, "BERT-base's table")]


@check("test_costs_batch", "lookup_costs", costs_judge("batch"))
def costs_batch():
    """lookup_costs: ids of any shape (N is the product of the shape), exact at real sizes"""
    return [
        cost_case((2, 3), 5, 2, shown=True, batch=True),
        cost_case((), 5, 2, shown=True, batch=True),
        cost_case((32, 512), 128256, 4096, "Llama 3's table", shown=True, batch=True),
        cost_case((2, 3, 4), 100, 8, batch=True),
        cost_case((16, 1024), 50257, 768, "GPT-2's table", batch=True),
        cost_case((8, 2048), 128256, 4096, "Llama 3's table", batch=True),
        cost_case((1, 5), 9, 4, batch=True),
        cost_case((), 30522, 768, "one id into BERT-base's table", batch=True),
    ]


# --------------------------------------------------------------------------------------------
# predicted_ratio: the roofline from the costs (the reference's lookup_costs gives them)
# --------------------------------------------------------------------------------------------
MACHINES = {  # name: (bandwidth B/s, rate flop/s, overhead s)
    "a 20 GB/s, 200 GFLOP/s CPU": (20e9, 200e9, 5e-6),
    "a 2 TB/s, 50 TFLOP/s GPU": (2e12, 50e12, 1e-5),
    "a machine with no call overhead": (50e9, 1e12, 0.0),
    "a machine whose arithmetic outruns its memory": (10e9, 1e15, 2e-6),
}


def ratio_case(label, costs, machine, shown=False):
    return Case(
        label,
        (tuple(costs), *MACHINES.get(machine, machine)),
        meta={"arg_names": ["costs", "bandwidth", "rate", "overhead"], "shown": shown},
    )


@check("test_predicted_ratio", "predicted_ratio", ratio_judge)
def ratio_values():
    """predicted_ratio: max(bytes / bandwidth, flops / rate) + overhead, product over gather"""
    costs = reference.function(A, "lookup_costs")
    cases = [
        ratio_case(
            "round numbers (bandwidth = rate = 1000, overhead 1)",
            (1000, 0, 50000, 800000),
            (1000.0, 1000.0, 1.0),
            shown=True,
        ),
        ratio_case(
            "512 ids, V = 1000, d = 64 on a 20 GB/s, 200 GFLOP/s CPU",
            (266240, 0, 2435072, 65536000),
            (20e9, 200e9, 5e-6),
            shown=True,
        ),
        ratio_case(
            "round numbers, the arithmetic 1000 times faster (rate = 1,000,000)",
            (1000, 0, 50000, 800000),
            (1000.0, 1e6, 1.0),
            shown=True,
        ),
    ]
    for shape, V, d in [((512,), 65536, 64), ((512,), 4000, 64), ((32, 512), 128256, 4096)]:
        for machine in MACHINES:
            label = f"{'x'.join(map(str, shape))} ids, V = {V}, d = {d} on {machine}"
            cases.append(ratio_case(label, costs(shape, V, d), machine))
    return cases
