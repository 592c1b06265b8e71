"""Chapter 7: choosing d and what a table costs. Hidden checks for its exercise (the judges are
public: public/ch07.py, shared with the visible tests).

``table_cost`` returns exact integers, so its checks compare exactly; each cell grades one
property and leaves the others to their own cells:

* test_cost_tied:        params (first element) of unfactorized tables, tied and untied;
* test_cost_bytes:       bytes == 16 * params, with the student's own params (an int32
                         wrap-around of them left to test_cost_python_ints);
* test_cost_factorized:  params of factorized tables;
* test_cost_python_ints: a tuple of two Python ints, with no int32 overflow (values exact).

``suggest_dim`` rounds, so its hidden V values are chosen so that the rounded quantity is never
within 1e-3 of a half (tests/test_ch07_reference.py checks this for every case): every reasonable
implementation (``V ** 0.25``, ``math.sqrt(math.sqrt(V))``, ``np.power``, ``round``,
``int(x + 0.5)``, ``np.round``) then gives the same answer.

``heldout_error`` is graded to a relative 1e-7 (an SVD by numpy, a Gram matrix's eigenvectors, or
rank-one pieces one at a time all agree far closer), on matrices from the notebook's given
``ratings_split`` (loaded with the reference, one source for it); each case carries the held-out
curve around its d and what the classic mistakes give (computed with the reference where it can:
the training split scored, the means swapped) for public.ch07 to name them. ``best_dim`` is graded
on matrices whose best d is the signal's rank (tests/test_ch07_reference.py checks the margins),
noise alone (d = 0) and max_d below the rank.
"""

from __future__ import annotations

import functools

import numpy as np

from . import reference
from .framework import Case, checks_for
from .judges import named_case
from .public.ch07 import (
    best_judge,
    bytes_judge,
    contract_judge,
    factorized_judge,
    held_curve_calls,
    heldout_edges_judge,
    heldout_judge,
    ints_judge,
    rule_judge,
    tied_judge,
)

A = "07_choosing_d"
check = checks_for(A)
COST_NAMES = ["V", "d", "tied", "factor_m"]


def cost_case(V, d, tied, m=None, name=None):
    args = (V, d, tied) if m is None else (V, d, tied, m)
    call = f"table_cost({V}, {d}, {tied}" + (")" if m is None else f", {m})")
    label = f"{call}" + (f" ({name})" if name else "")
    return Case(label, args, meta={"arg_names": COST_NAMES})


TF_VS = [1, 2, 10, 50, 100, 600, 1000, 10000, 30522, 50257, 128256, 3000000]
FASTAI_VS = [1000, 10000, 2000, 100, 50, 30522, 39000, 40000, 128256, 3000000, 600, 1, 2, 5, 10]


def dim_case(V, rule):
    return named_case(f"suggest_dim({V}, {rule!r})", V=V, rule=rule)


def _llama(tied):
    name = "Llama 3's vocabulary and width, tied" if tied else "Llama-3-8B, untied"
    return cost_case(128256, 4096, tied, name=name)


def _bert(tied):
    return cost_case(30522, 768, tied, name="BERT-base" if tied else "BERT-base, untied")


def _albert():
    return cost_case(30000, 4096, True, 128, name="ALBERT-style")


@check("test_cost_tied", "table_cost", tied_judge)
def cost_tied():
    """table_cost: one stored table when tied, two when untied"""
    return [
        *[
            _llama(True),
            _llama(False),
            _bert(True),
            cost_case(50257, 768, True, name="GPT-2 small"),
        ],
        *[cost_case(V, d, tied) for V, d, tied in ((10, 3, False), (1, 1, True), (7, 5, False))],
    ]


@check("test_cost_bytes", "table_cost", bytes_judge)
def cost_bytes():
    """table_cost: 16 bytes per parameter (weight, gradient, two Adam moments)"""
    return [
        *[_llama(True), _bert(False), _albert(), cost_case(10, 3, True)],
    ]


@check("test_cost_factorized", "table_cost", factorized_judge)
def cost_factorized():
    """table_cost: a factorized table is V x m plus an m x d projection"""
    return [
        _albert(),
        cost_case(30000, 128, True, 128, name="m = d"),
        cost_case(128256, 4096, False, 256),
        cost_case(50257, 768, True, 64),
        cost_case(10, 6, False, 2),
        cost_case(1000, 12, True, 3),
    ]


@check("test_cost_python_ints", "table_cost", ints_judge)
def cost_python_ints():
    """table_cost: a tuple of two Python ints, exact beyond 32 bits"""
    return [
        _llama(False),
        cost_case(50257, 12288, True, name="GPT-3"),
        cost_case(256000, 16384, False, name="a 256,000-id vocabulary at width 16,384, untied"),
        cost_case(3000000, 300, False, name="word2vec's Google News vocabulary, two tables"),
        *[_albert(), cost_case(10, 3, True)],
    ]


suggest_tf = check(
    "test_suggest_tf", "suggest_dim", rule_judge, "suggest_dim: the 'tf' rule, round(V ** 0.25)"
)(lambda: [dim_case(V, "tf") for V in TF_VS])
suggest_fastai = check(
    "test_suggest_fastai",
    "suggest_dim",
    rule_judge,
    "suggest_dim: the 'fastai' rule, min(600, round(1.6 * V ** 0.56))",
)(lambda: [dim_case(V, "fastai") for V in FASTAI_VS])


@check("test_suggest_contract", "suggest_dim", contract_judge)
def suggest_contract():
    """suggest_dim: an int, and ValueError for an unknown rule"""
    cases = [
        dim_case(V, rule)
        for V, rule in [
            (1000, "tf"),
            (10000, "tf"),
            (50, "fastai"),
            (10000, "fastai"),
            (128256, "fastai"),
        ]
    ]
    for rule in ["sqrt", "TF", ""]:
        cases.append(
            Case(
                f"the unknown rule {rule!r}",
                (1000, rule),
                meta={"arg_names": ["V", "rule"], "expect_error": True},
            )
        )
    return cases


# --------------------------------------------------------------------------------------------
# heldout_error and best_dim: ratings matrices from the notebook's given ratings_split
# --------------------------------------------------------------------------------------------
HELD_NAMES = ["M_train", "M_val", "d"]
BEST_NAMES = ["M_train", "M_val", "max_d"]


def _split(n, m, rank, seed, **kwargs):
    """(M_train, M_val) from the notebook's given ratings_split (one source for it)."""
    return reference.function(A, "ratings_split")(n, m, rank, seed, **kwargs)


def _uncentered(M_train, M_val, d):
    """The held-out error of the rank-d SVD of M_train itself (no mean taken out): a mistake."""
    U, s, Vt = np.linalg.svd(M_train, full_matrices=False)
    return float(np.mean(((U[:, :d] * s[:d]) @ Vt[:d] - M_val) ** 2))


def _centered_on(M_train, M_val, d, mu):
    """The held-out error of the rank-d SVD of M_train - mu, mu added back: with M_val's mean as
    mu, or per-column or per-row means (an array mu), a mistake."""
    U, s, Vt = np.linalg.svd(M_train - mu, full_matrices=False)
    return float(np.mean((mu + (U[:, :d] * s[:d]) @ Vt[:d] - M_val) ** 2))


def _smallest(M_train, M_val, d, rows=False):
    """The held-out error of a model that keeps the d smallest directions (np.linalg.eigh's
    ascending order not reversed), from A.T @ A (or A @ A.T with rows): a mistake."""
    mu = float(np.mean(M_train))
    A = M_train - mu
    if rows:
        _, U = np.linalg.eigh(A @ A.T)
        pred = mu + U[:, :d] @ (U[:, :d].T @ A)
    else:
        _, V = np.linalg.eigh(A.T @ A)
        pred = mu + (A @ V[:, :d]) @ V[:, :d].T
    return float(np.mean((pred - M_val) ** 2))


def _held_wrong(M_train, M_val, d):
    """What the classic mistakes of heldout_error give here, most of them through the reference:
    scored on the training split; fitted on M_val; the d smallest directions kept; centered with M_val's mean, in two ways (the SVD of M_train
    minus that mean, or the centered fit moved to it); the mean not added back (the centered fit
    scored against M_val + mean); centered by each column's (or each row's) own mean."""
    held, mu = reference.function(A, "heldout_error"), float(np.mean(M_train))
    return {
        "train": held(M_train, M_train, d),
        "fit_val": held(M_val, M_val, d),
        "smallest": _smallest(M_train, M_val, d),
        "smallest_rows": _smallest(M_train, M_val, d, rows=True),
        "uncentered": _uncentered(M_train, M_val, d),
        "val_mean": held(M_train - mu + float(np.mean(M_val)), M_val, d),
        "val_mean_fit": _centered_on(M_train, M_val, d, float(np.mean(M_val))),
        "no_add_back": held(M_train, M_val + mu, d),
        "column_mean": _centered_on(M_train, M_val, d, M_train.mean(axis=0)),
        "row_mean": _centered_on(M_train, M_val, d, M_train.mean(axis=1, keepdims=True)),
    }


def _curve(M_train, M_val, upto):
    held = reference.function(A, "heldout_error")
    return [held(M_train, M_val, d) for d in range(min(upto, min(M_train.shape)) + 1)]


def _noisier_val(split, factor, shift, seed):
    """The split with M_val observed with ``factor`` times the noise and ``shift`` added: the two
    splits' means differ, so only M_train's mean is the model's (M_val's would peek at it)."""
    M_train, M_val = split
    extra = np.sqrt(factor**2 - 1.0) * np.random.default_rng(seed).standard_normal(M_val.shape)
    return M_train, M_val + extra + shift


def _flat(n, m, value, seed):
    """A constant M_train (every d fits it exactly: a tie at every d) and a noisy M_val."""
    M_train = np.full((n, m), value)
    return M_train, M_train + np.random.default_rng(seed).standard_normal((n, m))


def held_case(label, split, d, shown=False):
    M_train, M_val = split
    meta = {"curve": _curve(M_train, M_val, d + 1), "wrong": _held_wrong(M_train, M_val, d)}
    return Case(label, (M_train, M_val, d), meta={"arg_names": HELD_NAMES, "shown": shown, **meta})


def _wrong_curves(M_train, M_val, max_d):
    """The held-out curves (d = 0, ..., max_d) of Part C's named mistakes (d + 1 and d - 1
    directions among them, as RANK_OFF_BY_ONE names both): a best_dim that picks the smallest d
    of one of them passes Part D (Part C's cells charge the mistake)."""
    wrong = [_held_wrong(M_train, M_val, d) for d in range(max_d + 1)]
    curves = {key: [w[key] for w in wrong] for key in wrong[0]}
    held, top = reference.function(A, "heldout_error"), min(M_train.shape)
    curves["rank_plus_one"] = [held(M_train, M_val, min(d + 1, top)) for d in range(max_d + 1)]
    curves["rank_minus_one"] = [held(M_train, M_val, max(d - 1, 0)) for d in range(max_d + 1)]
    return curves


def best_case(label, split, max_d, shown=False, tie=False):
    M_train, M_val = split
    meta = {"curve": _curve(M_train, M_val, max_d), "shown": shown, "tie": tie}
    meta["wrong_curves"] = _wrong_curves(M_train, M_val, max_d)
    case = Case(label, (M_train, M_val, max_d), meta={"arg_names": BEST_NAMES, **meta})
    case.meta["companion"] = held_curve_calls(case)  # the student's own heldout_error curve
    return case


@functools.cache
def _held_cases(which):
    """One heldout cell's cases, built once per process (each fits a few SVDs for its meta)."""
    example = _split(30, 20, 3, 0)
    name = "ratings_split(30, 20, 3, seed=0)"
    if which == "values":
        shown = [held_case(f"{name}, d = {d}", example, d, shown=True) for d in (0, 1, 3, 5)]
        tall, wide = _split(60, 40, 4, 10), _split(40, 80, 2, 11)
        return shown + [
            *(held_case(f"a 60 x 40 matrix of rank 4, d = {d}", tall, d) for d in (2, 4, 7)),
            *(held_case(f"a 40 x 80 matrix of rank 2, d = {d}", wide, d) for d in (1, 3)),
            held_case(
                "a 50 x 30 matrix of rank 5, noise 0.5, d = 5", _split(50, 30, 5, 12, noise=0.5), 5
            ),
            # not an edge (d < min(n, m)): graded here, with the other values (the edges cell's
            # noise alone at d = 3 went with it: float32 is the centering cell's to charge)
            held_case("a 10 x 80 matrix of rank 2, d = 2", _split(10, 80, 2, 31), 2),
        ]
    if which == "centering":
        return [
            held_case(
                "ratings_split(30, 20, 3, seed=1, offset=10.0), d = 3",
                _split(30, 20, 3, 1, offset=10.0),
                3,
                shown=True,
            ),
            held_case("ratings around -20, d = 2", _split(40, 25, 2, 20, offset=-20.0), 2),
            held_case("ratings around 50, d = 4", _split(25, 40, 4, 21, offset=50.0), 4),
            held_case("ratings around 3.5, d = 1", _split(60, 30, 3, 22), 1),
            held_case(
                "M_val three times as noisy as M_train and 0.8 higher on average, d = 3",
                _noisier_val(_split(40, 30, 3, 23), 3.0, 0.8, 24),
                3,
            ),
        ]
    return [
        held_case("d = 0", example, 0, shown=True),
        held_case("d = 20 = min(n, m)", example, 20, shown=True),
        held_case("a 80 x 10 matrix, d = 10 = min(n, m)", _split(80, 10, 2, 30), 10),
        held_case("noise alone (rank 0), d = 0", _split(30, 30, 0, 32), 0),
        held_case("noise alone (rank 0), d = 30 = min(n, m)", _split(30, 30, 0, 32), 30),
    ]


heldout_values = check(
    "test_heldout_values",
    "heldout_error",
    heldout_judge,
    "heldout_error: the rank-d model fitted to M_train, its mean squared error on M_val",
)(lambda: list(_held_cases("values")))
heldout_centering = check(
    "test_heldout_centering",
    "heldout_error",
    heldout_judge,
    "heldout_error: the fit is centered on M_train's mean (and the mean added back)",
)(lambda: list(_held_cases("centering")))
heldout_edges = check(
    "test_heldout_edges",
    "heldout_error",
    heldout_edges_judge,
    "heldout_error: d = 0 (the mean alone) to d = min(n, m) (M_train reproduced)",
)(lambda: list(_held_cases("edges")))

# (n, m, rank, seed, noise, max_d): the best d is the rank (tests/test_ch07_reference.py checks
# that the held-out error's minimum is there, with a margin)
RANKED = [
    (60, 40, 4, 40, 1.0, 10),
    (30, 60, 2, 41, 1.0, 8),
    (50, 30, 6, 42, 1.0, 10),
    (40, 40, 1, 43, 0.5, 6),
    (30, 50, 5, 44, 2.0, 9),
]


@functools.cache
def _best_cases(which):
    example = _split(30, 20, 3, 0)
    name = "ratings_split(30, 20, 3, seed=0)"
    if which == "rank":
        return [
            best_case(f"{name}, max_d = 6", example, 6, shown=True),
            best_case(f"{name}, max_d = 20", example, 20, shown=True),
            *(
                best_case(
                    f"a {n} x {m} matrix of rank {r}, noise {s}, max_d = {k}",
                    _split(n, m, r, seed, noise=s),
                    k,
                )
                for n, m, r, seed, s, k in RANKED
            ),
        ]
    return [
        best_case(
            "ratings_split(30, 20, 0, seed=2), max_d = 5", _split(30, 20, 0, 2), 5, shown=True
        ),
        best_case(f"{name}, max_d = 2", example, 2, shown=True),
        best_case("noise alone, a 50 x 40 matrix, max_d = 8", _split(50, 40, 0, 50), 8),
        best_case("a 60 x 40 matrix of rank 4, max_d = 3", _split(60, 40, 4, 40), 3),
        best_case(f"{name}, max_d = 0", example, 0),
        best_case(
            "a constant 4 x 3 M_train of 3.5 (every d ties), max_d = 3",
            _flat(4, 3, 3.5, 3),
            3,
            shown=True,
            tie=True,
        ),
        best_case(
            "a constant 8 x 8 M_train of 2 (every d ties), max_d = 8",
            _flat(8, 8, 2.0, 4),
            8,
            tie=True,
        ),
    ]


best_dim_rank = check(
    "test_best_dim_rank",
    "best_dim",
    best_judge,
    "best_dim: the d in 0, ..., max_d with the smallest held-out error",
)(lambda: list(_best_cases("rank")))
best_dim_edges = check(
    "test_best_dim_edges",
    "best_dim",
    best_judge,
    "best_dim: d = 0 for noise alone, max_d itself is a candidate, and a tie goes to the smallest d",
)(lambda: list(_best_cases("edges")))
