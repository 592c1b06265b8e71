"""Chapter 3's public judge and mistake models for ``sparse_adam_step_`` (pasted into the
released notebook).

``sparse_adam_step_(E, m, v, ids, grad_out, t, lr, betas, eps)`` returns None and changes E, m
and v in place, so every case grades those three after the call (``output=("args", (0, 1, 2))``).

Every mistake is modelled from the case and the expected arrays (E1, m1, v1), never by running
the rule: the summed gradient of a touched row (g_hat, the exercise's ĝ) is read back from the
expected first moment, g_hat = (m1 - b1 * m0) / (1 - b1), and the expected step is D = E0 - E1. A
mistake in the step size or in eps scales D; a mistake in the moments changes m1 and v1 by what it
does to g_hat (and D by what it does to sqrt(v1)). A model gives None for an array it does not
predict (any value is accepted there), or None for a case it cannot occur in.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..compare import close, differing_rows, fmt, shown, tolerance
from ..judges import (
    EPS_CORRECTED,
    EPS_INSIDE_SQRT,
    Mistake,
    common_problems,
    eps_moved_factor,
    explains,
    forgiving,
    in_place_problem,
    mistake_id,
)
from ..visible import make_expect

STEP = "sparse_adam_step_"
NAMES = ["E", "m", "v", "ids", "grad_out", "t", "lr", "betas", "eps"]
GRADED = ("E", "m", "v")
DEFAULTS = {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8}


def _tol(dtype):
    """float32: the framework's tolerance. float64: rtol = atol scale = 1e-6, looser than the
    framework's 1e-9: a right answer computed in another order, or in float64 and written back,
    stays far inside it, and every modelled mistake moves values far more. It does not spare a
    mistake whose effect scales with eps (1e-8 by default): eps inside the square root changes
    the step by about eps / (2 v), which is over 1e-6 wherever v is small (a first step with
    |g| of order 1 has v = 0.001 * g**2): it fails 6 of the 7 cells, 4 of them already in
    their visible part (samples/ch03.py records which), not only the cell that tests eps."""
    return tolerance(dtype) if np.dtype(dtype) != np.float64 else (1e-6, 1e-6)


def near(got, want, dtype):
    """close, with this chapter's tolerance."""
    return close(got, want, dtype, tol=_tol(dtype))


# ------------------------------------------------------------------------------------------
# What a case says, and what its expected arrays say
# ------------------------------------------------------------------------------------------
def _inputs(case) -> dict:
    """The call's arguments by name (positional, keyword, then the defaults)."""
    given = dict(zip(NAMES, case.args, strict=False))
    given.update(case.kwargs)
    return {**DEFAULTS, **given}


def _ids(case):
    return np.asarray(_inputs(case)["ids"]).reshape(-1).astype(np.int64)


def _step_size(lr, b1, b2, t):
    """lr * sqrt(1 - b2**t) / (1 - b1**t): the step size SparseAdam uses at step t."""
    return lr * np.sqrt(1 - b2**t) / (1 - b1**t)


class _Parts:
    """The inputs of a case and its expected arrays, in float64."""

    def __init__(self, case, want):
        a = _inputs(case)
        self.E0, self.m0, self.v0 = (np.array(a[k], dtype=np.float64) for k in GRADED)
        self.E1, self.m1, self.v1 = (np.array(w, dtype=np.float64) for w in want)
        self.flat = _ids(case)
        d = self.E0.shape[1]
        self.g = np.asarray(a["grad_out"], dtype=np.float64).reshape(self.flat.size, d)
        self.t, self.lr, self.eps = int(a["t"]), float(a["lr"]), float(a["eps"])
        self.b1, self.b2 = (float(b) for b in a["betas"])
        self.rows, self.counts = np.unique(self.flat, return_counts=True)
        # the summed gradient of each row (g_hat), as the expected first moment holds it
        self.g_hat = (self.m1 - self.b1 * self.m0) / (1 - self.b1)
        self.D = self.E0 - self.E1  # the expected step of every row

    def scaled(self, factor):
        """[E, m, v] when the step of every row is D * factor (m and v as expected)."""
        return [self.E0 - self.D * factor, self.m1, self.v1]

    def with_v(self, v):
        """[E, m, v] when the second moment is v instead of the expected one (m as expected):
        the step of every row scales by (sqrt(v1) + eps) / (sqrt(v) + eps)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = (np.sqrt(self.v1) + self.eps) / (np.sqrt(v) + self.eps)
        return [self.E0 - self.D * np.where(np.isfinite(factor), factor, 1.0), self.m1, v]

    def alpha(self, t):
        return _step_size(self.lr, self.b1, self.b2, t)


def _repeats(case):
    flat = _ids(case)
    return flat.size != np.unique(flat).size


def _model(when=None, empty=False):
    """A decorator: a model (parts -> [E, m, v]) that applies only to cases where ``when``
    holds, and to cases with at least one id (``empty``: to cases without ids too)."""

    def wrap(fn):
        def model(case, want):
            if (_ids(case).size == 0 and not empty) or (when is not None and not when(case)):
                return None
            return fn(_Parts(case, want))

        return model

    return wrap


@_model(_repeats)
def _per_occurrence(p):
    """k Adam updates for an id that occurs k times, one per occurrence, in order: the moments
    are the expected ones, plus what the k separate decays change (E not predicted)."""
    m, v = p.m1.copy(), p.v1.copy()
    for i, k in zip(p.rows, p.counts, strict=True):
        if k < 2:
            continue
        gs = p.g[p.flat == i]
        w1 = p.b1 ** np.arange(k - 1, -1, -1)[:, None]  # the later occurrences decay the earlier
        w2 = p.b2 ** np.arange(k - 1, -1, -1)[:, None]
        m[i] += (p.b1**k - p.b1) * p.m0[i] + (1 - p.b1) * ((w1 * gs).sum(axis=0) - p.g_hat[i])
        v[i] += (p.b2**k - p.b2) * p.v0[i] + (1 - p.b2) * (
            (w2 * gs * gs).sum(axis=0) - p.g_hat[i] ** 2
        )
    return [None, m, v]


@_model(_repeats)
def _last_write(p):
    """m[ids] = ...: each repeated row keeps the last occurrence's gradient instead of the sum."""
    m, v = p.m1.copy(), p.v1.copy()
    for i in p.rows:
        last = p.g[p.flat == i][-1]
        m[i] += (1 - p.b1) * (last - p.g_hat[i])
        v[i] += (1 - p.b2) * (last**2 - p.g_hat[i] ** 2)
    return [None, m, v]


@_model(_repeats)
def _averaged(p):
    """Each row's gradient divided by how often its id occurs."""
    m, v = p.m1.copy(), p.v1.copy()
    for i, k in zip(p.rows, p.counts, strict=True):
        m[i] += (1 - p.b1) * (p.g_hat[i] / k - p.g_hat[i])
        v[i] += (1 - p.b2) * ((p.g_hat[i] / k) ** 2 - p.g_hat[i] ** 2)
    return [None, m, v]


@_model(_repeats)
def _sum_of_squares(p):
    """v from the sum of the squares of a repeated row's gradients, sum(g_n**2), instead of the
    square of their sum, g_hat**2 (m as expected; E follows from v)."""
    v = p.v1.copy()
    for i, k in zip(p.rows, p.counts, strict=True):
        if k > 1:
            v[i] += (1 - p.b2) * ((p.g[p.flat == i] ** 2).sum(axis=0) - p.g_hat[i] ** 2)
    return p.with_v(v)


@_model()
def _v_not_squared(p):
    """v from the summed gradient itself, not its square (m as expected; E follows from v)."""
    v, E = p.v1.copy(), p.E0.copy()
    r = p.rows
    v[r] += (1 - p.b2) * (p.g_hat[r] - p.g_hat[r] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = (np.sqrt(p.v1[r]) + p.eps) / (np.sqrt(v[r]) + p.eps)  # NaN where v < 0
    E[r] = p.E0[r] - p.D[r] * factor
    return [E, p.m1, v]


@_model()
def _zero_gradient_skipped(p):
    """A touched row whose gradients sum to zero left as it was (m, v and E), as when the
    touched rows are taken from the nonzero rows of the gradient instead of from ids."""
    sums = [p.g[p.flat == r].sum(axis=0) for r in p.rows]  # each touched row's gradients
    cancel = np.array([r for r, g in zip(p.rows, sums, strict=True) if not g.any()], dtype=int)
    if cancel.size == 0 or not (p.m0[cancel].any() or p.v0[cancel].any()):
        return None  # no such row, or one that a skip leaves right (zero moments stay zero)
    E, m, v = p.E1.copy(), p.m1.copy(), p.v1.copy()
    E[cancel], m[cancel], v[cancel] = p.E0[cancel], p.m0[cancel], p.v0[cancel]
    return [E, m, v]


def _unchanged(k):
    """Array k (0: E, 1: m, 2: v) left as the caller passed it: rebound, not written into."""

    @_model()
    def model(p):
        return [a if i == k else None for i, a in enumerate((p.E0, p.m0, p.v0))]

    return model


@_model(empty=True)
def _dense(p):
    """Dense Adam: the moments of the rows ids does not touch decay too (E not predicted). With
    no ids that is every row: a dense Adam without an early return still decays them all."""
    untouched = np.setdiff1d(np.arange(p.E0.shape[0]), p.rows)
    m, v = p.m1.copy(), p.v1.copy()
    m[untouched] *= p.b1
    v[untouched] *= p.b2
    return [None, m, v]


@_model()
def _no_bias_correction(p):
    return p.scaled(p.lr / p.alpha(p.t))


@_model(lambda c: float(_inputs(c)["betas"][0]) ** int(_inputs(c)["t"]) > 1e-4)
def _only_m_corrected(p):
    """The step size lr / (1 - b1**t): m's bias correction without v's, sqrt(1 - b2**t). (Once
    b1**t is negligible, that is the step without any correction: _no_bias_correction's.)"""
    return p.scaled(p.lr / (1 - p.b1**p.t) / p.alpha(p.t))


@_model(lambda c: tuple(float(b) for b in _inputs(c)["betas"]) != DEFAULTS["betas"])
def _betas_ignored(p):
    """The betas argument ignored: (0.9, 0.999) hardcoded in the moments and the step size."""
    b1, b2 = DEFAULTS["betas"]
    E, m, v = p.E0.copy(), p.m1.copy(), p.v1.copy()
    r = p.rows
    m[r] = b1 * p.m0[r] + (1 - b1) * p.g_hat[r]
    v[r] = b2 * p.v0[r] + (1 - b2) * p.g_hat[r] ** 2
    E[r] -= _step_size(p.lr, b1, b2, p.t) * m[r] / (np.sqrt(v[r]) + p.eps)
    return [E, m, v]


def _eps_model(kind):
    @_model()
    def model(p):
        return p.scaled(eps_moved_factor(p.v1, p.eps, p.b2, p.t, kind))

    return model


def _t_model(dt):
    """The step size of step t + dt. At t + dt = 0 (t - 1 at the first step) the step size is
    0 / 0: NaN in numpy (Python floats raise ZeroDivisionError instead, which _error_hint names),
    so every touched row of E is NaN while m and v are right (they do not depend on t)."""

    @_model(lambda c: int(_inputs(c)["t"]) + dt >= 0)
    def model(p):
        if p.t + dt == 0:
            E = p.E1.copy()
            E[p.rows] = np.nan
            return [E, p.m1, p.v1]
        return p.scaled(p.alpha(p.t + dt) / p.alpha(p.t))

    return model


@_model(lambda c: int(_inputs(c)["t"]) > 1)
def _per_row_t(p):
    """A row whose moments were zero bias-corrected as at t = 1 (a step counter per row)."""
    fresh = np.zeros(p.E0.shape[0], dtype=bool)
    fresh[p.rows] = ~(p.m0[p.rows].any(axis=1) | p.v0[p.rows].any(axis=1))
    if not fresh.any():
        return None
    factor = np.where(fresh, p.alpha(1) / p.alpha(p.t), 1.0)[:, None]
    return p.scaled(factor)


PER_OCCURRENCE = (
    "a repeated id was given one Adam update per occurrence: SparseAdam sums a row's gradients "
    "first (coalesces them) and updates its moments and the row once with the sum. Adam is not "
    "linear in g (it squares g and divides by sqrt(v)), so k small steps are not one step with "
    "the summed gradient: this is the fancy-indexing trap in a new form"
)
LAST_WRITE = (
    "only one occurrence of a repeated id reached m and v: `m[ids] = b1 * m[ids] + (1 - b1) * g` "
    "writes each repeated row once, keeping the last occurrence's gradient (the fancy-indexing "
    "trap). Sum the gradients per row first (np.add.at, np.unique + bincount), then update the "
    "distinct rows"
)
NOT_IN_PLACE = (
    "the caller's arrays did not change: sparse_adam_step_ must update E, m and v in place. "
    "`E = E - ...`, `m = b1 * m + ...` or a converted copy (`E.astype(np.float64)`, "
    "`np.asarray(E, dtype=np.float64)` on a float32 table) make new arrays and only rebind the "
    "local name; write into the arrays instead (E[rows] -= ..., m[rows] = ...) and keep their dtype"
)
T_MINUS_ONE = (
    "the step number is off by one (t - 1 used): the caller passes this step's number, 1 for "
    "the first step, and the bias corrections use it as it is"
)

# Each model(case, want) gives [E, m, v], None for an array it does not predict, or None.
T_MINUS = Mistake("t-minus-one", T_MINUS_ONE, _t_model(-1))
DENSE_ADAM = Mistake(
    "dense-adam",
    "rows that ids does not touch changed (dense Adam): SparseAdam is lazy, so the moments "
    "of untouched rows do not decay and those rows do not move; update only the rows in ids",
    _dense,
)
ADAM_MISTAKES = [
    Mistake("per-occurrence", PER_OCCURRENCE, _per_occurrence),
    Mistake("last-write", LAST_WRITE, _last_write),
    Mistake(
        "averaged",
        "repeated ids were averaged: a row's gradient is the sum of its occurrences' gradients, "
        "not their mean",
        _averaged,
    ),
    Mistake(
        "sum-of-squares",
        "v was built from the sum of the squares of a repeated id's gradients: v takes the "
        "square of the summed gradient, (g_1 + g_2 + ...)**2, not g_1**2 + g_2**2 + ... Sum a "
        "row's gradients first, then square the sum (SparseAdam squares the coalesced gradient)",
        _sum_of_squares,
    ),
    Mistake(
        "v-not-squared",
        "v was built from the gradient itself, not its square: the second moment averages "
        "g**2, v = b2 * v + (1 - b2) * g**2 (a negative g makes sqrt(v) NaN)",
        _v_not_squared,
    ),
    Mistake(
        "zero-gradient-skipped",
        "a row that ids touches but whose gradients cancel (they sum to 0) was skipped: SparseAdam "
        "updates every row that occurs in ids, so its moments still decay (m = b1 * m, v = b2 * v) "
        "and it still moves by step_size * m / (sqrt(v) + eps). Take the touched rows from ids "
        "(np.unique(ids)), not from the nonzero rows of the summed gradient",
        _zero_gradient_skipped,
    ),
    Mistake("not-in-place", NOT_IN_PLACE, (_unchanged(0), _unchanged(1), _unchanged(2))),
    DENSE_ADAM,
    Mistake(
        "no-bias-correction",
        "the bias correction is missing: the step size is lr * sqrt(1 - b2**t) / (1 - b1**t), "
        "not lr (m and v start at zero, so early moments are too small without it)",
        _no_bias_correction,
    ),
    Mistake(
        "only-m-corrected",
        "only m was bias-corrected: the step size is lr * sqrt(1 - b2**t) / (1 - b1**t), not "
        "lr / (1 - b1**t); v starts at zero too, and its correction sqrt(1 - b2**t) is missing",
        _only_m_corrected,
    ),
    EPS_INSIDE_SQRT.also(_eps_model("inside")),
    EPS_CORRECTED.also(_eps_model("corrected")),
    Mistake(
        "t-plus-one",
        "the step number is off by one (t + 1 used): the caller passes this step's number, 1 for "
        "the first step; do not add 1 to it",
        _t_model(+1),
    ),
    T_MINUS,
    Mistake(
        "betas-ignored",
        "the betas given were not used: (0.9, 0.999) are only the defaults; take b1, b2 = betas "
        "and use them in the moments and in the step size",
        _betas_ignored,
    ),
    Mistake(
        "per-row-t",
        "a row touched for the first time was bias-corrected as if t were 1: a step counter per "
        "row. SparseAdam keeps one step counter per table (the t you are given), even for rows "
        "whose moments are still zero",
        _per_row_t,
    ),
]
RESHAPE_EMPTY = Mistake(
    "reshape-empty", "reshape on empty ids: the -1 cannot be worked out from 0 elements"
)
ONLY_1D_IDS = Mistake("only-1d-ids", "it works only for 1-D ids")
RETURNS_VALUE = Mistake("returns-value", "an in-place function returned something, not None")
# Every mistake this chapter recognises (judges.COMMON besides): ids unique within the chapter.
MISTAKES = [*ADAM_MISTAKES, RESHAPE_EMPTY, ONLY_1D_IDS, RETURNS_VALUE]


# ------------------------------------------------------------------------------------------
# The judge
# ------------------------------------------------------------------------------------------
def _error_hint(case, got):
    """An exception that usually has one cause."""
    a = _inputs(case)
    ids = np.asarray(a["ids"])
    err = got.error or ""
    if got.error_type == "ZeroDivisionError" and a["t"] == 1:
        return T_MINUS.said(
            f"{STEP} raised ZeroDivisionError at t = 1 for {case.label}: at the first step "
            "1 - b1**t is 1 - b1, not 0; a zero there means "
            f"{T_MINUS_ONE} (the error was: {err})"
        )
    if ids.size == 0 and ("size 0" in err or "zero-size" in err):
        return RESHAPE_EMPTY.said(
            f"{STEP} raised {got.error_type} for {case.label}: {err}. With no ids there is no "
            "step: reshape with the width (grad_out.reshape(-1, d), d = E.shape[1]), or return "
            "early when ids is empty"
        )
    if ids.ndim != 1 and ids.size:
        return ONLY_1D_IDS.said(
            f"{STEP} raised {got.error_type} for {case.label} (ids of shape {ids.shape}): it "
            "works only for 1-D ids. ids can have any shape: flatten ids to (N,) and grad_out "
            f"to (N, d) first (reshape). The error was: {err}"
        )
    return None


def _named(case, got, want, dtype):
    """The message of the first modelled mistake that explains the wrong arrays."""
    for m in ADAM_MISTAKES:
        for alt in m.predictions(case, want):
            if explains(got, want, alt, lambda a, b: near(a, b, dtype)):
                return m.on(case)
    return None


def _where(case, name, g, w, dtype):
    rows = differing_rows(g, w, dtype, tol=_tol(dtype))
    touched = set(_ids(case).tolist())
    untouched = [r for r in rows if r not in touched]
    text = f"{STEP} left wrong values in {name} for {case.label}: rows {rows} differ"
    if untouched and len(untouched) == len(rows):
        text += " and none of them is in ids (rows that ids does not touch must not change)"
    if shown(case) and rows:
        r = rows[0]
        text += f"; {name}[{r}] is {fmt(g[r])}, expected {fmt(w[r])}"
    return text + "."


def adam_judge(case, got, want):
    """Problems with the call, then shapes and dtypes, then values (a named mistake first)."""
    hint = _error_hint(case, got) if got.error_type not in (None, "NotImplementedError") else None
    problem = hint or common_problems(case, got, want, STEP)
    if problem or want.error_type is not None:
        return problem
    dtype = want.values[0].dtype
    problem = in_place_problem(case, got, want, STEP, GRADED)
    if problem:
        return problem
    if all(near(g, w, dtype) for g, w in zip(got.values, want.values, strict=True)):
        return None
    named = _named(case, got.values, want.values, dtype)
    if named:
        return named
    # m and v first: the step of E is computed from them, so a wrong moment is the cause
    for k in (1, 2, 0):
        name, g, w = GRADED[k], got.values[k], want.values[k]
        if not np.all(np.isfinite(g.astype(np.float64))) and np.all(np.isfinite(w)):
            text = (
                f"{STEP} left NaN or inf in {name} for {case.label}; the expected values are finite"
            )
            if _inputs(case)["t"] == 1:  # a hint, not the mistake's id: the model fits t - 1
                return f"{text}. At t = 1, a 0 in 1 - b1**t would mean that t - 1 was used."
            return text + "."
        if not near(g, w, dtype):
            return _where(case, name, g, w, dtype)
    return None


# The step-size mistakes: m and v right, E's step scaled. test_adam_bias_and_eps is the cell about
# the step size (bias corrections, t, eps), so it alone charges them; every other cell excuses a
# wrong answer that one of them explains exactly (every array it left is the expected one or the
# mistake's), since what that cell is about (in place, repeats, laziness, shapes, dtypes) is right.
# t-minus-one too: at t >= 2 its model scales the step; at t = 1 it either raises
# ZeroDivisionError (1 - b1**0 in Python floats: _error_hint names it) or leaves every touched row
# of E NaN with m and v right (its model at t = 1), so the first steps of the other cells excuse it.
STEP_SIZE_MISTAKES = {"no-bias-correction", "only-m-corrected", "t-plus-one", "t-minus-one"}


def excusing(judge, excused=STEP_SIZE_MISTAKES):
    """``judge`` for a cell that is not about the step size: a wrong answer that a mistake of
    ``excused`` explains is charged by test_adam_bias_and_eps, not here."""

    wrapped = forgiving(judge, excused)
    wrapped.__doc__ = judge.__doc__
    return wrapped


def returned_companion(case):
    """The second call every case asks for (Outcome.companion, the whole return): the same
    arguments, positionally, for what the function returns. An answer that is not in place
    (`E = E - ...; return E`) is charged by test_adam_in_place alone; the other cells grade the
    arrays it returns."""
    a = _inputs(case)
    return (STEP, [tuple(a[n] for n in NAMES)], "whole")


def _returned_arrays(got):
    """[E, m, v] with what the companion call returned in place of the caller's arrays: three
    arrays (E, m, v), or one (E; m and v as the graded call left them); None otherwise."""
    own = (got.companion or [None])[0]
    if not own or len(own) not in (1, 3) or len(got.values) != 3:
        return None
    back = [np.asarray(f, dtype=np.float64).astype(dt).reshape(sh) for _, dt, sh, f in own]
    return back + list(got.values[len(back) :])


def grading_returned(judge):
    """``judge`` for a cell that is not about working in place: where the caller's arrays did
    not change (not-in-place) but the function returns its new E (or E, m, v), those are
    graded instead; where it returns nothing, the message stays (there is nothing to grade)."""

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        if mistake_id(msg) != "not-in-place":
            return msg
        back = _returned_arrays(got)
        if back is None:
            return msg
        again = judge(case, dataclasses.replace(got, values=back, companion=None), want)
        return msg if mistake_id(again) == "not-in-place" else again

    wrapped.__doc__ = judge.__doc__
    return wrapped


# test_adam_bias_and_eps charges the step-size mistakes; test_adam_in_place not-in-place.
bias_judge = grading_returned(adam_judge)
_in_place_values = excusing(adam_judge)
adam_judge = excusing(bias_judge)
# test_adam_first_step excuses eps-corrected too (its first steps with small |g| show it, but
# eps is test_adam_bias_and_eps's property); test_adam_shapes_and_edges excuses dense-adam (its
# "no ids" cases decay every row of a dense Adam without an early return; laziness is
# test_adam_lazy's property). Each cell's own mistakes stay charged there.
first_judge = excusing(bias_judge, STEP_SIZE_MISTAKES | {EPS_CORRECTED.name})
shapes_judge = excusing(bias_judge, STEP_SIZE_MISTAKES | {DENSE_ADAM.name})


def in_place_judge(case, got, want):
    msg = _in_place_values(case, got, want)
    if msg:
        return msg
    if not got.returned_none and got.error_type is None:  # a raise that was excused returns none
        return RETURNS_VALUE.said(
            f"{STEP} returned something for {case.label}; it should return None. It updates E, m "
            "and v in place, so there is nothing to return (like list.sort(), or PyTorch's "
            "optimizer.step(), which changes the parameters and its state)."
        )
    return None


JUDGES = {
    STEP: adam_judge,
    f"{STEP}:bias": bias_judge,
    f"{STEP}:in_place": in_place_judge,
    f"{STEP}:first": first_judge,
    f"{STEP}:shapes": shapes_judge,
}
expect = make_expect(JUDGES, MISTAKES, companions=dict.fromkeys(JUDGES, returned_companion))
