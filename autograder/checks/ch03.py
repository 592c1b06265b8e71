"""Chapter 3: the fancy-indexing trap. Hidden checks for its exercise, a lazy sparse Adam step.

``sparse_adam_step_(E, m, v, ids, grad_out, t, lr, betas, eps)`` returns None and changes three
of its arguments, so every case grades E, m and v after the call (``output=("args", (0, 1, 2))``);
a change to ids or grad_out is reported as a modified input. Whether it returned None is checked
in one test cell.

The judges and mistake models are public (:mod:`.public.ch03`, pasted into the released notebook
for the visible tests): each classic mistake is modelled from the case and the expected arrays, and
a wrong answer is named when every array it left behind equals either the expected one or the
mistake's. Messages name the arrays and rows that differ; they print expected values only for
cases :func:`~.compare.shown` allows (the small worked examples the visible tests also show).
"""

from __future__ import annotations

import numpy as np

from .data import adam_case as step
from .data import adam_state as state
from .data import distinct as _distinct
from .data import grads as _grads
from .data import ids as _ids
from .data import table as _table
from .data import zero_moments as zeros3
from .data import zipf as _zipf
from .framework import Case, checks_for
from .public.ch03 import (
    NAMES,
    STEP,
    adam_judge,
    bias_judge,
    first_judge,
    in_place_judge,
    returned_companion,
    shapes_judge,
)

A = "03_fancy_indexing_trap"
check = checks_for(A)


# ------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------
WORKED_G = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [2.0, 1.0, 0.0]])


def worked():
    """The chapter's worked batch, as the visible test shows it: ids [2, 0, 2] into a zero (4, 3)
    table, t = 1, lr = 0.1."""
    return step(
        "the worked example (ids [2, 0, 2], t = 1, lr = 0.1)",
        *zeros3(4, 3),
        np.array([2, 0, 2]),
        WORKED_G.copy(),
        1,
        0.1,
        shown=True,
    )


def untouched_fresh(cases_fn):
    """The cases of a cell that does not grade untouched rows: each state's moments are zero in
    the rows its ids do not touch (rows no batch has reached yet), so a dense Adam, which decays
    every row, leaves them as the lazy rule does. Only test_adam_lazy grades untouched rows with
    moments from earlier steps, so that mistake costs that cell alone."""

    def cases():
        out = []
        for case in cases_fn():
            E, m, v, ids, *rest = case.args
            if isinstance(m, np.ndarray) and m.ndim == 2 and np.size(ids):
                rows = np.setdiff1d(np.arange(m.shape[0]), np.ravel(ids))
                m, v = m.copy(), v.copy()
                m[rows] = 0
                v[rows] = 0
                case = Case(case.label, (E, m, v, ids, *rest), case.kwargs, case.output, case.meta)
            out.append(case)
        return out

    cases.__doc__ = cases_fn.__doc__
    return cases


def returning(cases_fn):
    """Every case also asks for what the function returns on the same arguments (a second call,
    public.ch03.returned_companion): a cell other than test_adam_in_place grades the arrays an
    answer that is not in place returns."""

    def cases():
        out = cases_fn()
        for case in out:
            case.meta["companion"] = returned_companion(case)
        return out

    cases.__doc__ = cases_fn.__doc__
    return cases


# ------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------
@check("test_adam_in_place", STEP, in_place_judge)
@returning
@untouched_fresh
def adam_in_place():
    """sparse_adam_step_: E, m and v change in place and the function returns None"""
    ids = _distinct(6, 15, 300)
    return [
        step(
            "ids [3, 1] from zero moments (t = 1, lr = 0.5)",
            *zeros3(4, 2),
            np.array([3, 1]),
            np.array([[1.0, -2.0], [3.0, 4.0]]),
            1,
            0.5,
            shown=True,
        ),
        step("6 distinct ids, t = 4", *state(15, 4, 301), ids, _grads(ids, 4, 302), 4, 0.01),
    ]


@check("test_adam_first_step", STEP, first_judge)
@returning
@untouched_fresh
def adam_first_step():
    """sparse_adam_step_: distinct ids, the first step from zero moments (and the defaults)"""
    ids = _distinct(30, 80, 310)
    few = _distinct(5, 9, 313)
    return [
        step(
            "ids [4, 0], t = 1, lr = 0.1",
            *zeros3(5, 2),
            np.array([4, 0]),
            np.array([[1.0, -1.0], [0.5, 2.0]]),
            1,
            0.1,
            shown=True,
        ),
        step("30 distinct ids, V = 80, d = 8", *zeros3(80, 8), ids, _grads(ids, 8, 311), 1, 0.05),
        Case(
            "5 distinct ids with the default lr, betas and eps",
            (_table(9, 3, 312), *zeros3(9, 3)[1:], few, _grads(few, 3, 314), 1),
            output=("args", (0, 1, 2)),
            meta={"arg_names": NAMES},
        ),
    ]


def _repeated_in_other_settings():
    """Repeated ids in the settings of the other cells (a state from earlier steps, (B, T) and
    3-D ids, V = 1, uint8 ids): those cells use distinct ids, so the repeats are tested here."""
    rep, rep2, rep3 = _ids(60, 12, 333), _ids((4, 5), 40, 350), _ids((2, 3, 4), 30, 351)
    u8, rep4 = _ids(9, 200, 353).astype(np.uint8), _ids(20, 25, 370)
    return [
        step(
            "60 ids from V = 12 into a state from earlier steps, t = 20",
            *state(12, 3, 336, fresh=(1,)),
            rep,
            _grads(rep, 3, 337),
            20,
            0.05,
        ),
        step(
            "ids of shape (4, 5) drawn from V = 40",
            *state(40, 3, 354),
            rep2,
            _grads(rep2, 3, 355),
            3,
            0.1,
        ),
        step(
            "ids of shape (2, 3, 4) drawn from V = 30",
            *state(30, 2, 356),
            rep3,
            _grads(rep3, 2, 357),
            2,
            0.2,
        ),
        step(
            "a table with one row (V = 1), id 0 twice",
            *state(1, 3, 362),
            np.array([0, 0]),
            _grads(np.zeros(2), 3, 363),
            2,
            0.5,
        ),
        step(
            "9 uint8 ids drawn from V = 200 (one of them twice)",
            *state(200, 2, 366),
            u8,
            _grads(u8, 2, 367),
            3,
            0.1,
        ),
        step(
            "20 ids drawn from V = 25 into a state from earlier steps, t = 3",
            *state(25, 6, 374),
            rep4,
            _grads(rep4, 6, 375),
            3,
            0.01,
        ),
    ]


@check("test_adam_repeated", STEP, adam_judge)
@returning
@untouched_fresh
def adam_repeated():
    """sparse_adam_step_: a repeated id gets one update with the sum of its gradients"""
    same = np.full(500, 3)
    zipf = _zipf(2000, 300, 320)
    ids2 = _ids((16, 32), 6, 321)
    cancel = np.array([1, 4, 1])
    return [
        worked(),
        step(
            "ids [2, 0, 2] into zero moments at t = 3",
            *zeros3(4, 3),
            np.array([2, 0, 2]),
            WORKED_G.copy(),
            3,
            0.01,
        ),
        step(
            "ids [1, 1, 1, 4, 1], t = 2",
            *zeros3(5, 2),
            np.array([1, 1, 1, 4, 1]),
            _grads(np.zeros(5), 2, 322),
            2,
            0.3,
        ),
        step("the same id 500 times", *zeros3(10, 4), same, _grads(same, 4, 323) + 0.5, 1, 0.01),
        step(
            "2,000 Zipf-distributed ids (the top id hundreds of times)",
            *state(300, 8, 324),
            zipf,
            _grads(zipf, 8, 325),
            9,
            0.05,
        ),
        step(
            "ids of shape (16, 32) drawn from V = 6", *zeros3(6, 3), ids2, _grads(ids2, 3, 326), 1
        ),
        *_repeated_in_other_settings(),
        step(
            "id 1 twice with gradients that cancel (its moments still decay)",
            *state(6, 2, 327),
            cancel,
            np.array([[1.0, -2.0], [0.5, 0.5], [-1.0, 2.0]]),
            5,
            0.1,
        ),
    ]


@check("test_adam_lazy", STEP, adam_judge)
@returning
def adam_lazy():
    """sparse_adam_step_: untouched rows of E, m and v stay exactly as they were (lazy Adam)"""
    ids = _distinct(8, 40, 330)
    new = np.array([0, 2, 5])
    some = _distinct(8, 12, 333)  # distinct: repeated ids are test_adam_repeated's property
    return [
        step(
            "8 distinct ids into a (40, 4) state, t = 6",
            *state(40, 4, 331),
            ids,
            _grads(ids, 4, 332),
            6,
            0.01,
        ),
        step(
            "rows 0, 2 and 5 touched for the first time at t = 5",
            *state(8, 3, 334, fresh=(0, 2, 5, 7)),
            new,
            _grads(new, 3, 335),
            5,
            0.1,
        ),
        step(
            "8 distinct ids from V = 12, t = 20",
            *state(12, 3, 336, fresh=(1,)),
            some,
            _grads(some, 3, 337),
            20,
            0.05,
        ),
    ]


@check("test_adam_bias_and_eps", STEP, bias_judge)
@returning
@untouched_fresh
def adam_bias_and_eps():
    """sparse_adam_step_: the bias corrections use the table's t, eps is added to sqrt(v)"""
    ids = _distinct(10, 30, 340)
    return [
        step(
            "eps = 0.1 at t = 1 (eps is not bias-corrected)",
            *zeros3(30, 4),
            ids,
            _grads(ids, 4, 341),
            1,
            0.01,
            (0.9, 0.999),
            0.1,
        ),
        step(
            "t = 2, betas (0.5, 0.9)",
            *state(30, 4, 342),
            ids,
            _grads(ids, 4, 343),
            2,
            0.1,
            (0.5, 0.9),
        ),
        step("t = 1000", *state(30, 4, 344), ids, _grads(ids, 4, 345), 1000, 0.01),
        step(
            "eps = 1e-2 with small gradients, t = 3",
            *state(30, 4, 346),
            ids,
            0.01 * _grads(ids, 4, 347),
            3,
            0.01,
            (0.9, 0.999),
            0.01,
        ),
        step(
            "zero moments at t = 3 (the table's counter, not the row's)",
            *zeros3(30, 4),
            ids,
            _grads(ids, 4, 348),
            3,
            0.01,
        ),
    ]


@check("test_adam_shapes_and_edges", STEP, shapes_judge)
@returning
@untouched_fresh
def adam_shapes_and_edges():
    """sparse_adam_step_: ids of any shape (2-D, 3-D, 0-d, empty), V = 1, narrow integer ids"""
    # Distinct ids: repeated ids are test_adam_repeated's property (the repeated versions of
    # these cases are there), so the trap costs that cell only.
    ids2 = _distinct((4, 5), 40, 350)
    ids3 = _distinct((2, 3, 4), 30, 351)
    i32 = _distinct(5, 9, 352, np.int32)
    u8 = _distinct(9, 200, 353, np.uint8)
    return [
        step("ids of shape (4, 5)", *state(40, 3, 354), ids2, _grads(ids2, 3, 355), 3, 0.1),
        step("ids of shape (2, 3, 4)", *state(30, 2, 356), ids3, _grads(ids3, 2, 357), 2, 0.2),
        step("a 0-d id (np.array(4))", *state(6, 2, 358), np.array(4), np.array([1.0, -1.0]), 2),
        step(
            "ids of shape (1, 1)",
            *zeros3(6, 3),
            np.array([[2]]),
            _grads(np.zeros((1, 1)), 3, 359),
            1,
        ),
        step(
            "empty ids of shape (0,)",
            *state(3, 2, 360),
            np.array([], dtype=np.int64),
            np.zeros((0, 2)),
            4,
        ),
        step(
            "empty ids of shape (2, 0)",
            *state(4, 3, 361),
            np.zeros((2, 0), dtype=np.int64),
            np.zeros((2, 0, 3)),
            4,
        ),
        step(
            "a table with one row (V = 1)",
            *state(1, 3, 362),
            np.array([0]),
            _grads(np.zeros(1), 3, 363),
            2,
            0.5,
        ),
        step("int32 ids", *state(9, 2, 364), i32, _grads(i32, 2, 365), 3, 0.1),
        step("uint8 ids", *state(200, 2, 366), u8, _grads(u8, 2, 367), 3, 0.1),
    ]


@check("test_adam_float32_and_inputs", STEP, adam_judge)
@returning
@untouched_fresh
def adam_float32_and_inputs():
    """sparse_adam_step_: float32 arrays stay float32, and ids and grad_out are not modified"""
    # Distinct ids: repeated ids are test_adam_repeated's property (the float64 case with
    # repeats is there).
    ids = _distinct(20, 25, 370)
    i2 = _distinct((3, 4), 12, 371)
    return [
        step(
            "a float32 table",
            *state(25, 6, 372, np.float32),
            ids,
            _grads(ids, 6, 373, np.float32),
            3,
            0.01,
        ),
        step("a float64 table", *state(25, 6, 374), ids, _grads(ids, 6, 375), 3, 0.01),
        step(
            "a float32 table from zero moments, ids of shape (3, 4)",
            *zeros3(12, 3, np.float32),
            i2,
            _grads(i2, 3, 376, np.float32),
            1,
            0.1,
        ),
    ]
