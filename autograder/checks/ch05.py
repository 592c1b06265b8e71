"""Chapter 5: weight tying, one table on two paths. Hidden checks for its exercise.

The judges and mistake models are public (:mod:`.public.ch05`, pasted into the released notebook):
:func:`~.public.ch05.tuple_judge` compares a (loss, table, ...) tuple element by element and
models each classic mistake from the expected value. The input-path mistakes also need the
expected input-path rows of the case (row n: what position n adds into dE[x_n]); a visible test
states them literally, and here every hidden case carries them, computed from the reference
itself (never a second copy of it): the input-path contribution of a single position is the
reference evaluated on that position alone, divided by N.
"""

from __future__ import annotations

import functools

import numpy as np

from . import reference
from .data import distinct as _distinct
from .data import ids as _ids
from .data import table as _table
from .framework import Case, checks_for
from .public.ch05 import (
    TIED,
    UNTIED,
    tied_judge,
    tied_large_judge,
    tied_repeated_judge,
    tied_types_judge,
    untied_companion,
    untied_judges,
)

A = "05_weight_tying"
check = checks_for(A)
UNTIED_ARGS = ["E_in", "W_out", "x", "y"]
TIED_ARGS = ["E", "x", "y"]


def _untied_ref(E_in, W_out, x, y):
    return reference.function(A, "untied_bigram_loss_grad")(E_in, W_out, x, y)


def input_rows(E_in, W_out, x, y) -> np.ndarray:
    """The (N, d) input-path rows: row n is what position n adds into dE_in[x_n] (the row
    (Delta W_out)_n; for the tied model, E_in = W_out = E, the row (Delta E)_n). Each is the
    reference's dE_in on position n alone, row x_n, divided by N."""
    x, y = np.asarray(x), np.asarray(y)
    rows = [
        _untied_ref(E_in, W_out, x[n : n + 1], y[n : n + 1])[1][x[n]].astype(np.float64)
        for n in range(len(x))
    ]
    return np.array(rows).reshape(len(x), E_in.shape[1]) / len(x)


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------
WORKED = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]])
WORKED_OUT = np.array([[0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])


def untied_case(label, E_in, W_out, x, y, **meta):
    x, y = np.asarray(x), np.asarray(y)
    return Case(
        label,
        (E_in, W_out, x, y),
        meta={"arg_names": UNTIED_ARGS, "input_rows": input_rows(E_in, W_out, x, y), **meta},
    )


def tied_case(label, E, x, y, **meta):
    x, y = np.asarray(x), np.asarray(y)
    case = Case(
        label,
        (E, x, y),
        meta={"arg_names": TIED_ARGS, "input_rows": input_rows(E, E, x, y), **meta},
    )
    case.meta["companion"] = untied_companion(case)  # the student's own untied return
    return case


def _scaled_to(E, x, max_logit):
    """E scaled so that the largest self-logit ||E[x_n]||^2 equals max_logit."""
    return E * np.sqrt(max_logit / np.max(np.sum(E[x].astype(np.float64) ** 2, axis=1)))


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------
def _random_untied(V, d, N, seed):
    """Random (V, d) tables and N random positions, from seeds seed .. seed + 3."""
    E_in, W_out = _table(V, d, seed), _table(V, d, seed + 1)
    return untied_case(
        f"random ({V}, {d}) tables, N = {N}",
        E_in,
        W_out,
        _ids(N, V, seed + 2),
        _ids(N, V, seed + 3),
    )


def _random_tied(kind, V, d, N, seed, inputs, dtype=np.float64):
    """A random (V, d) table, N inputs drawn by ``inputs`` and N random targets."""
    E = _table(V, d, seed, dtype)
    return tied_case(
        f"{kind} ({V}, {d}) table, N = {N}", E, inputs(N, V, seed + 1), _ids(N, V, seed + 2)
    )


@functools.cache
def _untied_cases(which):
    """Part A's value cases (built once per process: each computes its input-path rows): the
    same calls for its three value cells, each of which grades one element of the return."""
    shown = [
        untied_case("the visible example (x = [0, 2, 0])", WORKED, WORKED_OUT, [0, 2, 0], [1, 0, 2])
    ]
    E32 = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    W32 = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    shown.append(untied_case("the visible float32 example", E32, W32, [5, 1, 1], [0, 2, 5]))
    return shown + [
        _random_untied(20, 5, 30, 1),
        _random_untied(100, 8, 64, 5),
        untied_case("a single position (N = 1)", _table(7, 3, 9), _table(7, 3, 10), [4], [6]),
        untied_case(
            "the same input id 40 times",
            _table(9, 4, 11),
            _table(9, 4, 12),
            np.full(40, 3),
            _ids(40, 9, 13),
        ),
        untied_case(
            "float32 (50, 8) tables, N = 20",
            _table(50, 8, 14, np.float32),
            _table(50, 8, 15, np.float32),
            _ids(20, 50, 16),
            _ids(20, 50, 17),
        ),
        untied_case(
            "tables with one row (V = 1)", _table(1, 3, 64), _table(1, 3, 71), [0, 0], [0, 0]
        ),
        untied_case(
            "int32 ids",
            _table(20, 3, 65),
            _table(20, 3, 72),
            _ids(12, 20, 66, np.int32),
            _ids(12, 20, 67, np.int32),
        ),
        untied_case(
            "uint8 ids",
            _table(20, 3, 68),
            _table(20, 3, 73),
            _ids(12, 20, 69, np.uint8),
            _ids(12, 20, 70, np.uint8),
        ),
    ]


@check("test_untied_loss", UNTIED, untied_judges["loss"])
def untied_loss():
    """untied_bigram_loss_grad: the loss, a Python float"""
    return list(_untied_cases("loss"))


@check("test_untied_dE_in", UNTIED, untied_judges["dE_in"])
def untied_dE_in():
    """untied_bigram_loss_grad: dE_in, S^T (Delta W_out) in E_in's dtype (repeated ids add up)"""
    return list(_untied_cases("tables"))


@check("test_untied_dW_out", UNTIED, untied_judges["dW_out"])
def untied_dW_out():
    """untied_bigram_loss_grad: dW_out, Delta^T H in W_out's dtype (every row gets gradient)"""
    return list(_untied_cases("tables"))


@check("test_untied_large_logits", UNTIED, untied_judges["large"])
def untied_large_logits():
    """untied_bigram_loss_grad: logits too large for a naive softmax (loss and both gradients)"""
    x_big = _distinct(10, 20, 81)
    return [
        untied_case(
            "the visible example times 40 (logits up to 1600)",
            40.0 * WORKED,
            40.0 * WORKED_OUT,
            [0, 2, 0],
            [1, 0, 2],
            large=True,
        ),
        untied_case(
            "(20, 8) tables of scale 30 (logits near 10^4)",
            _table(20, 8, 80, scale=30.0),
            _table(20, 8, 82, scale=30.0),
            x_big,
            _ids(10, 20, 83),
            large=True,
        ),
        untied_case(
            "float32 tables with logits in the hundreds (exp overflows float32 above 88)",
            _table(30, 6, 84, np.float32, scale=6.0),
            _table(30, 6, 85, np.float32, scale=6.0),
            _ids(12, 30, 86),
            _ids(12, 30, 87),
            large=True,
        ),
    ]


@check("test_tied_values", TIED, tied_judge)
def tied_values():
    """tied_bigram_loss_grad: the loss, and dE as the output path plus the input path"""
    return [
        tied_case("the visible example (x = [0, 2], y = [1, 0])", WORKED, [0, 2], [1, 0]),
        _random_tied("a random", 10, 4, 6, 20, _distinct),
        _random_tied("a random", 300, 16, 100, 23, _distinct),
        _random_tied("a float32", 50, 8, 20, 26, _distinct, np.float32),
        tied_case(
            "targets equal to the inputs (y = x)",
            _table(12, 3, 29),
            _distinct(8, 12, 30),
            _distinct(8, 12, 30),
        ),
        tied_case("a single position (N = 1)", _table(9, 4, 63), [7], [2]),
        tied_case(
            "int32 ids",
            _table(20, 3, 65),
            _distinct(12, 20, 66).astype(np.int32),
            _ids(12, 20, 67, np.int32),
        ),
        tied_case(
            "uint8 ids",
            _table(20, 3, 68),
            _distinct(12, 20, 69).astype(np.uint8),
            _ids(12, 20, 70, np.uint8),
        ),
    ]


@check("test_tied_repeated", TIED, tied_repeated_judge)
def tied_repeated():
    """tied_bigram_loss_grad: a repeated input id collects the input path once per occurrence"""
    return [
        tied_case("the visible example (x = [2, 2, 0])", WORKED, [2, 2, 0], [0, 1, 2]),
        _random_tied("a random", 30, 6, 200, 40, _ids),
        tied_case("the same input id 50 times", _table(8, 4, 43), np.full(50, 4), _ids(50, 8, 44)),
        _random_tied("a float32", 40, 5, 120, 45, _ids, np.float32),
        tied_case(
            "inputs alternating 1, 3, 1, 3, ...",
            _table(6, 3, 48),
            np.tile([1, 3], 10),
            _ids(20, 6, 49),
        ),
        tied_case("a table with one row (V = 1)", _table(1, 3, 64), [0, 0, 0], [0, 0, 0]),
    ]


@check("test_tied_large_logits", TIED, tied_large_judge)
def tied_large_logits():
    """tied_bigram_loss_grad: logits too large for a naive softmax"""
    E1 = 40.0 * WORKED
    x2 = _distinct(10, 20, 51)
    x3 = _distinct(8, 15, 53)
    x4 = _distinct(12, 30, 55)
    return [
        tied_case(
            "the visible example times 40 (logits up to 3200)", E1, [0, 2], [1, 0], large=True
        ),
        tied_case(
            "a (20, 8) table of scale 30 (logits near 10^4)",
            _table(20, 8, 50, scale=30.0),
            x2,
            _ids(10, 20, 52),
            large=True,
        ),
        tied_case(
            "logits up to 800 (exp overflows float64 above 709)",
            _scaled_to(_table(15, 4, 54), x3, 800.0),
            x3,
            _ids(8, 15, 56),
            large=True,
        ),
        tied_case(
            "a float32 table with logits up to 200 (exp overflows float32 above 88)",
            _scaled_to(_table(30, 6, 57), x4, 200.0).astype(np.float32),
            x4,
            _ids(12, 30, 58),
            large=True,
        ),
    ]


@check("test_tied_types", TIED, tied_types_judge)
def tied_types():
    """tied_bigram_loss_grad: a Python float loss and dE of E's shape and dtype (the form alone)"""
    E32 = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    return [
        tied_case("the visible float32 example", E32, [5, 1, 1], [0, 2, 5]),
        tied_case(
            "a float32 (100, 16) table, N = 64",
            _table(100, 16, 60, np.float32),
            _ids(64, 100, 61),
            _ids(64, 100, 62),
        ),
        tied_case("a float64 (9, 4) table, N = 1", _table(9, 4, 63), [7], [2]),
        tied_case("a table with one row (V = 1)", _table(1, 3, 64), [0, 0, 0], [0, 0, 0]),
        tied_case(
            "int32 ids", _table(10, 3, 65), _ids(12, 10, 66, np.int32), _ids(12, 10, 67, np.int32)
        ),
        tied_case(
            "uint8 ids", _table(10, 3, 68), _ids(12, 10, 69, np.uint8), _ids(12, 10, 70, np.uint8)
        ),
    ]
