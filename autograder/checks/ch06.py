"""Chapter 6: initialization scale. Hidden checks for its exercise (the judges are public:
public/ch06.py, shared with the visible tests).

``init_embedding`` is random, and students may draw its numbers in any correct way
(``rng.normal(0, s, size)``, ``rng.standard_normal(shape) * s``, float32 draws, Box-Muller...), so
its checks grade *distributions*, never exact values:

* Every case has a fixed seed, so a given submission always gets the same verdict.
* Each statistic is compared with six of its standard errors. For a table of N independent
  N(0, s^2) entries (N = V*d >= 64,000 in every statistical case):
    - the sample mean m has standard error s / sqrt(N);
    - the sample standard deviation has variance Var(s_hat) ~ s^2 / (2 (N - 1)) (the delta method
      on Var(s_hat^2) = 2 s^4 / (N - 1)), so its relative standard error is 1 / sqrt(2 N);
    - the sample excess kurtosis g2 = m4 / m2^2 - 3 has standard error sqrt(24 / N).
  Six standard errors on an (asymptotically) normal statistic fail a correct answer with
  probability 2e-9 per statistic; with about 30 statistics over all cells, below 1e-7 per
  submission. A wrong scale is far outside these bounds: at N = 64,000 the std tolerance is 1.7%
  relative, while the classic mistakes are off by factors of 7 and more.
* Reproducibility (same seed, same table) is exact.

``expected_row_length`` is deterministic and graded to a relative 1e-9.

``initial_loss`` is graded to a relative 1e-6 (float32 tables may be summed in float32), on the
notebook's given ``random_model`` (loaded with the reference, one source for it) and small
tables written out. ``scale_for_initial_loss`` is graded to the relative 1e-3 the exercise asks
for, so any correct method passes (bisection, a secant or Newton iteration, a grid refined around
the crossing); each case carries in its meta what the classic mistakes that need the loss give
(:func:`_alternatives`, with the reference's loss and scale), for public.ch06 to name them.
"""

from __future__ import annotations

import functools
import math
import types

import numpy as np

from . import reference
from .framework import Case, Check, CheckResult, checks_for
from .judges import mistake_id, named_case
from .public.ch06 import (  # noqa: F401 - Z: the standard errors allowed (public)
    Z,
    contract_judge,
    distribution_judge,
    loss_companion,
    loss_judge,
    loss_scale_judge,
    rng_judge,
    row_judge,
    scale_judge,
    seed_problem,
)

A = "06_init_scale"
SCALE = "scale_for_initial_loss"
check = checks_for(A)
INIT_NAMES = ["V", "d", "scheme", "rng"]
# Z (public.ch06): the standard errors allowed for every statistic (see the module docstring).

# The specification's standard deviations (the exercise's table). tests/test_ch06_reference.py
# checks that the reference in the source notebook draws with exactly these.
SIGMA = {"pytorch": lambda d: 1.0, "gpt2": lambda d: 0.02, "transformer": lambda d: d**-0.5}


def init_case(V, d, scheme, seed, **meta):
    sigma = SIGMA[scheme](d) if scheme in SIGMA else None
    label = f"V = {V}, d = {d}, scheme {scheme!r} (seed {seed})"
    return Case(
        label,
        (V, d, scheme, np.random.default_rng(seed)),
        meta={"arg_names": INIT_NAMES, "sigma": sigma, "scheme": scheme, "V": V, "d": d, **meta},
    )


# --------------------------------------------------------------------------------------------
# init_embedding's rng cases: same seed -> same table, new seed -> new table (across cases)
# --------------------------------------------------------------------------------------------
class SeedCheck(Check):
    """A Check that also compares outcomes *across* cases (the framework judges one case at a
    time). Its seed cases carry meta["group"] and meta["role"] in {"first", "same", "other"}
    (the others, none: they are only judged one at a time): "same" must
    equal its group's "first" exactly, "other" (another seed) must differ from it. The messages
    are the public judge's (public.ch06.seed_problem), as in the visible test."""

    def verdict(self, got, cases=None):
        cases = self.cases() if cases is None else cases
        result = super().verdict(got, cases)
        if not result.passed:
            return result
        firsts = {}
        messages, mistakes = [], []
        for case, outcome in zip(cases, got, strict=True):
            if "group" not in case.meta:  # a case of another part of the cell
                continue
            group, role = case.meta["group"], case.meta["role"]
            if role == "first":
                firsts[group] = (case, outcome.value)
                continue
            first_case, first = firsts[group]
            problem = seed_problem(case, outcome.value, first_case.label, first, role == "same")
            if problem:
                messages.append(str(problem))
                mistakes.append(mistake_id(problem))
        return CheckResult(self.grade_id, not messages, messages[:3], len(got), mistakes)


def _rng_cases():
    cases = []
    for g, (V, d, scheme, seed) in enumerate(
        [(50, 8, "gpt2", 400), (30, 16, "transformer", 410), (20, 4, "pytorch", 420)]
    ):
        cases.append(init_case(V, d, scheme, seed, part="rng", group=g, role="first"))
        cases.append(init_case(V, d, scheme, seed, part="rng", group=g, role="same"))
        cases.append(init_case(V, d, scheme, seed + 1, part="rng", group=g, role="other"))
    return cases


# --------------------------------------------------------------------------------------------
# expected_row_length: the exact chi mean
# --------------------------------------------------------------------------------------------
SMALL_D = [(1, 1.0), (2, 0.5), (3, 1.0), (4, 2.0), (10, 0.02), (64, 1.0), (100, 0.125), (5, 0.0)]
# 172 <= d < 343: math.gamma still fits a float (it overflows from d = 343), but a series in 1/d
# used above d = 171 ("x above about 171" read as d) is off by up to 8e-9 there (1e-9 is asked).
LARGE_D = [(172, 1.0), (200, 0.5), (256, 1.0), (300, 2.0), (342, 1.0), (343, 1.0)]
LARGE_D += [(768, 0.02), (1024, 0.5), (4096, 1.0), (4096, 0.02)]
LARGE_D += [(12288, 0.02), (20000, 1.0)]


def row_case(d, sigma):
    return named_case(f"d = {d}, sigma = {sigma}", d=d, sigma=sigma)


def _contract_cases():
    """shape (V, d), dtype float32, ValueError for an unknown scheme"""
    cases = [
        init_case(V, d, scheme, seed, part="contract")
        for V, d, scheme, seed in [
            (5, 3, "gpt2", 100),
            (1, 1, "pytorch", 101),
            (7, 1, "transformer", 102),
            (0, 4, "pytorch", 103),
            (3, 768, "transformer", 104),
            (40, 16, "gpt2", 105),
        ]
    ]
    for scheme in ["xavier", "GPT-2", ""]:
        cases.append(
            Case(
                f"the unknown scheme {scheme!r}",
                (4, 4, scheme, np.random.default_rng(106)),
                meta={"arg_names": INIT_NAMES, "expect_error": True, "part": "contract"},
            )
        )
    return cases


# (V, d, scheme) of the scale cases, seeds 200, 201, ...
SCALE_SHAPES = [
    (2000, 64, "pytorch"),
    (250, 512, "pytorch"),
    (2000, 64, "gpt2"),
    (125, 768, "gpt2"),
]
SCALE_SHAPES += [(8000, 16, "transformer"), (2000, 64, "transformer"), (125, 1024, "transformer")]
SCALE_SHAPES += [(32, 4096, "transformer")]
DISTRIBUTION_SHAPES = [(2000, 64, "pytorch"), (1000, 128, "gpt2"), (500, 256, "transformer")]

# Each part of init_embedding's contract has its judge (public.ch06); the cell's one check sends
# every case to its part's judge.
INIT_JUDGES = {
    "contract": contract_judge,
    "scale": scale_judge,
    "distribution": distribution_judge,
    "rng": rng_judge,
}


def init_judge(case, got, want):
    return INIT_JUDGES[case.meta["part"]](case, got, want)


def _init_cases():
    return [
        *_contract_cases(),
        *(init_case(V, d, s, 200 + i, part="scale") for i, (V, d, s) in enumerate(SCALE_SHAPES)),
        *(
            init_case(V, d, s, 300 + i, part="distribution")
            for i, (V, d, s) in enumerate(DISTRIBUTION_SHAPES)
        ),
        *_rng_cases(),
    ]


# One cell grades the whole of init_embedding (one rng draw; the chapter's idea is in the later
# parts): its contract, each scheme's standard deviation (1, 0.02, 1/sqrt(d)), normal entries
# with mean 0, and every number drawn from rng.
init_table = SeedCheck(
    A,
    "test_init_embedding",
    "init_embedding",
    _init_cases,
    init_judge,
    "init_embedding: shape (V, d), float32 and ValueError for an unknown scheme; each scheme's "
    "standard deviation; normal entries with mean 0; every number from rng",
)


@check("test_row_length_small_d", "expected_row_length", row_judge)
def row_length_small():
    """expected_row_length: the exact chi mean for small d"""
    return [row_case(d, s) for d, s in SMALL_D]


@check("test_row_length_large_d", "expected_row_length", row_judge)
def row_length_large():
    """expected_row_length: the exact chi mean for real widths, without overflow"""
    return [row_case(d, s) for d, s in LARGE_D]


# --------------------------------------------------------------------------------------------
# initial_loss: the mean cross-entropy in nats of z_n = W @ E[x_n], before any training
# --------------------------------------------------------------------------------------------
LOSS_NAMES = ["E", "W", "ids", "targets"]
WORKED_E = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
WORKED_W = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])


def loss_case(label, E, W, ids, targets, **meta):
    return Case(label, (E, W, ids, targets), meta={"arg_names": LOSS_NAMES, **meta})


def _model(V, d, N, seed, favoured=0.0, dtype=np.float64, shape=None):
    """A seeded model from the notebook's given random_model (one source for it), optionally
    with float32 tables and ids and targets reshaped."""
    E, W, ids, targets = reference.function(A, "random_model")(V, d, N, seed, favoured)
    if shape is not None:
        ids, targets = ids.reshape(shape), targets.reshape(shape)
    return E.astype(dtype), W.astype(dtype), ids, targets


@check("test_initial_loss_values", "initial_loss", loss_judge)
def initial_loss_values():
    """initial_loss: the mean of -log softmax(z_n)[y_n] in nats; exactly log V for a zero table"""
    ids, targets = np.array([0, 1]), np.array([2, 1])
    return [
        loss_case("the worked example", WORKED_E, WORKED_W, ids, targets, shown=True),
        loss_case("a table of zeros", np.zeros((3, 2)), WORKED_W, ids, targets, shown=True),
        loss_case("a random model, V = 20, d = 8, 64 positions", *_model(20, 8, 64, 500)),
        loss_case("a random model, V = 50, d = 16, 256 positions", *_model(50, 16, 256, 501)),
        loss_case("a float32 model, V = 27, d = 10", *_model(27, 10, 100, 502, dtype=np.float32)),
        loss_case("one position", *_model(5, 3, 1, 503)),
        loss_case("a zero table, V = 1000", np.zeros((1000, 4)), *_model(1000, 4, 30, 504)[1:]),
    ]


@check("test_initial_loss_batch", "initial_loss", loss_judge)
def initial_loss_batch():
    """initial_loss: ids and targets of shape (B, T), the mean over all B * T positions"""
    ids = np.array([[0, 1, 2], [2, 2, 0]])
    targets = np.array([[1, 1, 0], [2, 0, 1]])
    return [
        loss_case("ids of shape (2, 3)", WORKED_E, WORKED_W, ids, targets, shown=True),
        loss_case("ids of shape (8, 16)", *_model(30, 8, 128, 510, shape=(8, 16))),
        loss_case("ids of shape (4, 5, 3)", *_model(12, 4, 60, 511, shape=(4, 5, 3))),
        loss_case("ids of shape (1, 40)", *_model(9, 6, 40, 512, shape=(1, 40))),
    ]


# The visible test's second model: row 0's logits [350, 350, 700], row 1's [-400, -400, -800]. No
# logit overflows exp, but one shift for the whole batch (700) underflows all of row 1.
MIXED_E = np.array([[350.0, 350.0], [-400.0, -400.0], [0.0, 0.0]])
MIXED_W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])


def _far_apart_rows(V, d, N, seed):
    """A random model whose output layer's first column is 1 (a bias feature) and whose table's
    first column is 600 in half the rows and -300 in the others: each row's largest logit is
    about 600 or about -300, so a naive exp does not overflow (below 709) but one maximum for the
    whole batch underflows the low rows (more than 745 below it)."""
    E, W, ids, targets = reference.function(A, "random_model")(V, d, N, seed)
    E, W = E.copy(), W.copy()
    W[:, 0] = 1.0
    E[:, 0] = np.where(np.arange(V) < V // 2, 600.0, -300.0)
    return E, W, ids, targets


@check("test_initial_loss_large", "initial_loss", loss_judge)
def initial_loss_large():
    """initial_loss: finite for logits in the thousands (log-sum-exp)"""
    E, W, ids, targets = _model(40, 16, 64, 520)
    E32, W32, ids32, targets32 = _model(30, 8, 50, 521, dtype=np.float32)
    return [
        loss_case(
            "the worked example's table times 1000",
            1000 * WORKED_E,
            WORKED_W,
            np.array([0, 1, 2]),
            np.array([2, 1, 0]),
            shown=True,
        ),
        loss_case(
            "logits up to 700 in some rows and below -200 in others (row maxima far apart)",
            MIXED_E,
            MIXED_W,
            np.array([0, 1]),
            np.array([0, 0]),
            shown=True,
        ),
        loss_case("a random model's table times 300", 300 * E, W, ids, targets),
        loss_case(
            "a model with a bias column: row maxima from about -300 to 600",
            *_far_apart_rows(12, 4, 40, 522),
        ),
        loss_case("a float32 table times 50", np.float32(50) * E32, W32, ids32, targets32),
    ]


# --------------------------------------------------------------------------------------------
# scale_for_initial_loss: where the loss of s * E first leaves log V +- tol
# --------------------------------------------------------------------------------------------
SCALE_NAMES = ["E", "W", "ids", "targets", "tol"]


def _first_pass(gap, level):
    """The scale at which the convex gap(s) (0 at s = 0) first reaches level > 0 from below."""
    lo, hi = 0.0, 1.0
    while gap(hi) < level:
        lo, hi = hi, 2.0 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) < level else (lo, mid)
    return (lo + hi) / 2


def _back_to_log_v(gap, up):
    """Where a gap that dips below 0 comes back to it (its positive root), else None: the
    minimum by golden section on [0, up], then bisection from there to up."""
    a, b, g = 0.0, up, (math.sqrt(5) - 1) / 2
    for _ in range(40):
        x1, x2 = b - g * (b - a), a + g * (b - a)
        a, b = (a, x2) if gap(x1) < gap(x2) else (x1, b)
    lo, hi = (a + b) / 2, up
    if gap(lo) >= 0:
        return None
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def _below_band(gap, tol, up):
    """[a, b]: the scales where the convex gap(s) is below -tol (a one-sided search may stop
    anywhere in there), or None when it never gets that low before up."""
    a, b, g = 0.0, up, (math.sqrt(5) - 1) / 2
    for _ in range(60):
        x1, x2 = b - g * (b - a), a + g * (b - a)
        a, b = (a, x2) if gap(x1) < gap(x2) else (x1, b)
    lowest = (a + b) / 2
    if gap(lowest) >= -tol:
        return None

    def root(lo, hi, below_at_lo):  # where gap + tol changes sign between lo and hi
        for _ in range(60):
            mid = (lo + hi) / 2
            if (gap(mid) < -tol) == below_at_lo:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    return [root(lowest, 0.0, True), root(lowest, up, True)]


def _loss_multiples(ids):
    """The multiples k of the right loss that the modelled initial_loss mistakes compute: in
    bits, in log base 10, summed over the N positions, averaged over the first axis only."""
    shape = np.shape(ids)
    N = int(np.prod(shape, dtype=np.int64))
    ks = [1 / math.log(2), 1 / math.log(10), float(N)]
    return ks + ([N / shape[0]] if len(shape) > 1 and shape[0] not in (0, N) else [])


def _search_over(k, E, W, ids, targets, tol):
    """What the reference scale_for_initial_loss gives when the initial_loss it calls is k times
    the right one (public.ch06 excuses that answer: the search is right for the student's loss)."""
    loss, best = reference.function(A, "initial_loss"), reference.function(A, SCALE)
    names = {**best.__globals__, "initial_loss": lambda *a: k * loss(*a)}
    return types.FunctionType(best.__code__, names, best.__name__, best.__defaults__)(
        E, W, ids, targets, tol
    )


def _alternatives(E, W, ids, targets, tol):
    """What the classic mistakes that need the loss give (public.ch06 names them from these)."""
    loss, best = reference.function(A, "initial_loss"), reference.function(A, SCALE)
    log_V = math.log(W.shape[0])

    def gap(s):
        return loss(s * E, W, ids, targets) - log_V

    logits = E[np.ravel(ids)].astype(np.float64) @ W.astype(np.float64).T  # at s = 1
    one_sided = _first_pass(gap, tol)
    wrong = {
        "one_sided": one_sided,
        "approximation": math.sqrt(2 * tol / float(logits.var(axis=1).mean())),
        "at_log_v": _back_to_log_v(gap, one_sided),
        "below_band": _below_band(gap, tol, one_sided),
        "bits": best(E, W, ids, targets, tol * math.log(2)),
        "own_loss": [[k, _search_over(k, E, W, ids, targets, tol)] for k in _loss_multiples(ids)],
    }
    return {k: v for k, v in wrong.items() if v is not None}


def scale_case(label, model, tol=0.1, **meta):
    E, W, ids, targets = model
    meta = {"wrong": _alternatives(E, W, ids, targets, tol), **meta}
    case = Case(label, (E, W, ids, targets, tol), meta={"arg_names": SCALE_NAMES, **meta})
    case.meta["companion"] = loss_companion(case)  # the student's own loss on a table of zeros
    return case


@functools.cache
def _scale_cases(which):
    """The cases of one scale cell, built once per process (each needs a few root findings)."""
    if which == "values":
        return [
            scale_case("random_model(20, 8, 64, seed=0)", _model(20, 8, 64, 0), shown=True),
            scale_case("random_model(50, 16, 256, seed=1)", _model(50, 16, 256, 1), shown=True),
            scale_case("a float32 model, V = 30, d = 8", _model(30, 8, 80, 532, dtype=np.float32)),
            scale_case("ids of shape (4, 16)", _model(16, 4, 64, 533, shape=(4, 16))),
        ]
    if which == "band":
        return [
            scale_case(
                "random_model(20, 8, 64, seed=2, favoured=0.75)",
                _model(20, 8, 64, 2, 0.75),
                shown=True,
            ),
            scale_case("a model favouring 60% of its targets", _model(27, 10, 100, 540, 0.6)),
        ]
    return [
        scale_case(
            "random_model(20, 8, 64, seed=0), tol = 0.5", _model(20, 8, 64, 0), 0.5, shown=True
        ),
        scale_case(
            "random_model(20, 8, 64, seed=0), tol = 0.01", _model(20, 8, 64, 0), 0.01, shown=True
        ),
        scale_case("a random model, V = 27, d = 10, tol = 1.0", _model(27, 10, 64, 551), 1.0),
    ]


scale_values = check(
    "test_scale_values",
    SCALE,
    loss_scale_judge,
    "scale_for_initial_loss: the largest scale whose initial loss stays within 0.1 of log V",
)(lambda: list(_scale_cases("values")))
scale_band = check(
    "test_scale_band",
    SCALE,
    loss_scale_judge,
    "scale_for_initial_loss: the band is two-sided (a loss below log V - tol leaves it too)",
)(lambda: list(_scale_cases("band")))
scale_tolerance = check(
    "test_scale_tolerance",
    SCALE,
    loss_scale_judge,
    "scale_for_initial_loss: other tolerances tol",
)(lambda: list(_scale_cases("tolerance")))
