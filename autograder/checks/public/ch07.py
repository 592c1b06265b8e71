"""Chapter 7's public judges and mistake models (pasted into the released notebook).

``table_cost`` returns exact integers; each of its cells grades one property (``check=``):
"tied" and "factorized" the parameter count, "bytes" the bytes against the function's own
parameter count (a 32-bit wrap-around of 16 * params left to "ints"), "ints" the types (two Python ints, no 32-bit overflow). ``suggest_dim``: the
rule's value ("suggest_dim") and the contract ("suggest_dim:contract": an int, ValueError).

Every wrong count is modelled from the case and the expected value, never from the reference.

``heldout_error`` returns one float. Its classic mistakes that need a fitted model (the error on
the training split, an uncentered fit, ...) are read from the case: ``meta["curve"]`` holds the
held-out errors for d = 0, 1, ... (what an off-by-one rank gives) and ``meta["wrong"]`` what
the other mistakes give; a visible test states them literally, the hidden checks compute them.
``best_dim`` returns an int; its mistakes come from the case's ``max_d``, the expected d and the
curve. Its cases also ask for the student's own ``heldout_error`` at d = 0, ..., max_d
(``held_curve_calls``, read back as ``Outcome.companion``): a best_dim that returns the argmin of
a wrong curve is told its search is right and sent to Part C.
"""

from __future__ import annotations

import math

import numpy as np

from ..compare import expected, shown
from ..judges import MODIFIED_INPUT, Mistake, common_problems
from ..visible import make_expect

COST = "table_cost"
DIM = "suggest_dim"
INT32_MAX = 2**31 - 1

# The mistakes this chapter's judges recognise (each judge writes its own message).
NOT_A_TUPLE = Mistake("not-a-tuple", "table_cost does not return a tuple (params, bytes)")
INT32_OVERFLOW = Mistake("int32-overflow", "the counts wrapped around like 32-bit integers")
TIED_TWICE = Mistake("tied-counted-twice", "a tied table counted twice")
ONE_TABLE = Mistake("untied-one-table", "an untied model counted as one table")
BYTES = {
    4: Mistake("bytes-weights-only", "4 bytes per parameter: the weights alone"),
    8: Mistake("bytes-no-moments", "8 bytes per parameter: no Adam moments"),
    12: Mistake("bytes-12", "12 bytes per parameter: one of the four float32 numbers missing"),
    2: Mistake("bytes-float16", "2 bytes per parameter: float16 weights alone"),
    32: Mistake("bytes-32", "32 bytes per parameter: twice the count"),
}
BITS = Mistake("bits-not-bytes", "bits counted where bytes were wanted (or / 8 too often)")
NO_PROJECTION = Mistake("no-projection", "the m x d projection of a factorized table left out")
FACTOR_IGNORED = Mistake("factor-m-ignored", "factor_m ignored: V x d counted")
FACTORIZED_TWICE = Mistake("factorized-tied-twice", "a tied factorized table counted twice")
SHARED_PROJECTION = Mistake("shared-projection", "two untied tables given one shared projection")
PROJECTION_V_BY_D = Mistake("projection-v-by-d", "a V x d projection instead of m x d")
FLOAT_COUNTS = Mistake("float-counts", "float counts (/ instead of //) where ints are due")
NUMPY_INTS = Mistake("numpy-ints", "numpy integers where Python ints are due")
NO_CAP = Mistake("no-cap", "fastai's cap min(600, ...) left out")
MAX_NOT_MIN = Mistake("max-not-min", "max(600, ...) instead of min(600, ...)")
POWER_OF_PRODUCT = Mistake("power-of-product", "(1.6 * V) ** 0.56 instead of 1.6 * V ** 0.56")
TRUNCATED = Mistake("truncated", "int() truncates where round() rounds")
ROUNDED_UP = Mistake("rounded-up", "rounded up (ceil) where round() rounds to the nearest")
NOT_ONE_NUMBER = Mistake("not-one-number", "suggest_dim does not return one number")
RULE_NOT_CHECKED = Mistake("rule-not-checked", "an unknown rule did not raise ValueError")
FLOAT_WIDTH = Mistake("float-width", "a float width (np.round gives one) where an int is due")
# Every mistake this chapter recognises (judges.COMMON besides): ids unique within the chapter.
MISTAKES = [NOT_A_TUPLE, INT32_OVERFLOW, TIED_TWICE, ONE_TABLE, *BYTES.values(), BITS]
MISTAKES += [NO_PROJECTION, FACTOR_IGNORED, FACTORIZED_TWICE, SHARED_PROJECTION]
MISTAKES += [PROJECTION_V_BY_D, FLOAT_COUNTS, NUMPY_INTS, NO_CAP, MAX_NOT_MIN, POWER_OF_PRODUCT]
MISTAKES += [TRUNCATED, ROUNDED_UP, NOT_ONE_NUMBER, RULE_NOT_CHECKED, FLOAT_WIDTH]

HELD = "heldout_error"
BEST = "best_dim"
HELD_RTOL = 1e-7  # float64 SVDs by any method agree far closer than this


def _wrong(key):
    """What a mistake gives, from the case's meta["wrong"] (a visible test states it)."""
    return lambda case, want: case.meta.get("wrong", {}).get(key)


def _curve_at(step):
    """The held-out error at d + step, from the case's meta["curve"] (None outside it)."""

    def model(case, want):
        curve, d = case.meta.get("curve", ()), int(case.args[2]) + step
        return curve[d] if 0 <= d < len(curve) else None

    return model


TRAIN_SPLIT = Mistake(
    "train-split",
    "measured the error on the training split: the model is fitted to M_train and scored on "
    "M_val. The training error only falls as d grows (d = min(n, m) fits it exactly), so it "
    "cannot choose d",
    _wrong("train"),
)
RANK_OFF_BY_ONE = Mistake(
    "rank-off-by-one",
    "kept d + 1 or d - 1 directions: the rank-d model keeps exactly the first d singular "
    "directions, U[:, :d], s[:d] and Vt[:d, :] (d = 0: the mean alone)",
    (_curve_at(1), _curve_at(-1), _wrong("rank_minus_one")),
)
SMALLEST_DIRECTIONS = Mistake(
    "smallest-directions",
    "kept the d directions with the smallest singular values: np.linalg.eigh (and eigvalsh) sort "
    "the eigenvalues in ascending order, the largest last, so reverse them (V[:, ::-1]) before "
    "keeping the first d; np.linalg.svd's s is already largest first",
    (_wrong("smallest"), _wrong("smallest_rows")),
)
FITTED_ON_VAL = Mistake(
    "fitted-on-m-val",
    "fitted the model on M_val: the mean and the SVD come from M_train, and M_val only scores the "
    "model (a model fitted to its test data looks better than it is; at d = min(n, m) it is M_val "
    "itself and its error is 0)",
    _wrong("fit_val"),
)
# At d = min(n, m) a model fitted on M_val reproduces it, and the training split scored against
# the full-rank model fitted to it gives 0 too: an error of 0 there names both.
ZERO_AT_FULL_RANK = (
    "returned 0 at d = min(n, m): the model is M_val itself, so it fitted the model on M_val (the mean "
    "and the SVD come from M_train; M_val only scores the model), or the error was measured on "
    "the training split, which the full-rank model reproduces exactly"
)
NOT_CENTERED = Mistake(
    "not-centered",
    "fitted the SVD to M_train itself: subtract M_train's mean first and add it back to the "
    "prediction. Uncentered, the first direction is spent on the mean (the ratings' common level) "
    "instead of on the users' and items' structure",
    _wrong("uncentered"),
)
# At d = 0 no direction is kept: the uncentered model and the centered one whose mean was not
# added back are both the zero matrix, so one message names both.
NOT_CENTERED_AT_0 = (
    "predicted 0 everywhere at d = 0: no mean taken out (it fitted the SVD to M_train itself), or "
    "the mean taken out and not added back; at d = 0 both give the zero matrix. The model is "
    "M_train's mean plus its first d directions, so at d = 0 it predicts the mean everywhere: "
    "subtract the mean before the SVD and add it back to the prediction"
)
MEAN_NOT_ADDED = Mistake(
    "mean-not-added-back",
    "subtracted M_train's mean before the SVD but did not add it back: the prediction is "
    "mean + U_d S_d V_d^T",
    _wrong("no_add_back"),
)
VALIDATION_MEAN = Mistake(
    "validation-mean",
    "centered with the held-out split's mean: everything the model uses comes from M_train, "
    "and M_val only scores it (a model that peeks at its test data looks better than it is)",
    (_wrong("val_mean"), _wrong("val_mean_fit")),
)
AXIS_MEAN = Mistake(
    "mean-per-column-or-row",
    "centered each column (or each row) by its own mean (M_train.mean(axis=0), or axis=1): "
    "the model's mean is one number, the mean of all the entries of M_train (M_train.mean(), "
    "no axis), subtracted before the SVD and added back to the prediction. Per-item or per-user "
    "means are another model, with m (or n) biases fitted besides the d directions",
    (_wrong("column_mean"), _wrong("row_mean")),
)
SUM_NOT_MEAN = Mistake(
    "sum-not-mean",
    "summed the squared errors: the error is their mean over the n x m entries",
    lambda case, want: want * np.size(case.args[1]),
)
RMSE = Mistake(
    "rmse-not-mse",
    "took the square root (an RMSE): the error asked is the mean squared error",
    lambda case, want: math.sqrt(want),
)
# VALIDATION_MEAN before FITTED_ON_VAL: at d = 0 both predict M_val's mean (the centering named)
HELD_MISTAKES = [TRAIN_SPLIT, SMALLEST_DIRECTIONS, RANK_OFF_BY_ONE, NOT_CENTERED, MEAN_NOT_ADDED]
HELD_MISTAKES += [VALIDATION_MEAN, FITTED_ON_VAL, AXIS_MEAN, SUM_NOT_MEAN, RMSE]
NOT_A_NUMBER = Mistake("not-a-number", "one number (a float) was due")
FLOAT32 = Mistake("float32", "computed in float32: right to float32's precision, not to float64's")
FLOAT32_RTOL = 1e-4  # float32 rounding (eps 1.2e-7 of ratings far from 0) through an SVD


def heldout_judge(case, got, want):
    problem = common_problems(case, got, want, HELD)
    if problem or want.error_type is not None:
        return problem
    if got.is_tuple or got.value is None or got.value.size != 1:
        what = ", ".join(got.types) if got.is_tuple else f"shape {np.shape(got.value)}"
        return NOT_A_NUMBER.said(f"{HELD} should return one float for {case.label}; got {what}.")
    g, w = float(np.asarray(got.value, dtype=np.float64).reshape(-1)[0]), float(want.value)
    if math.isfinite(g) and abs(g - w) <= HELD_RTOL * abs(w):
        return None
    for m in HELD_MISTAKES:
        for alt in m.predictions(case, w):
            alt = float(alt)
            if abs(g - alt) <= 1e-6 * abs(alt) + 1e-12 and abs(alt - w) > HELD_RTOL * abs(w):
                if m is NOT_CENTERED and int(case.args[2]) == 0:
                    return m.said(f"{HELD} {NOT_CENTERED_AT_0} (for {case.label}).")
                fit_val = _wrong("fit_val")(case, w)
                if (
                    m is TRAIN_SPLIT
                    and abs(alt) <= 1e-12
                    and fit_val is not None
                    and abs(fit_val) <= 1e-12
                ):
                    return FITTED_ON_VAL.said(f"{HELD} {ZERO_AT_FULL_RANK} (for {case.label}).")
                return m.said(f"{HELD} {m.message} (for {case.label}).")
    if math.isfinite(g) and abs(g - w) <= FLOAT32_RTOL * abs(w):
        return FLOAT32.said(
            f"{HELD} returned {g:.9g} for {case.label}: right to about 6 digits, as float32 "
            "arithmetic gives (the further the ratings are from 0, the fewer of their digits "
            "float32 keeps). Compute in float64: np.asarray(M_train, dtype=np.float64), "
            "and no .astype(np.float32)."
        )
    return (
        f"{HELD} returned {g:.6g} for {case.label}{expected(case, f'{w:.6g}')}: the mean over the "
        "entries of (mean + U_d S_d V_d^T - M_val)**2, the rank-d SVD fitted to M_train - mean."
    )


# The mistakes the values and centering cells charge that the edges cell excuses (it grades
# d = 0 and d = min(n, m) only): where the model is centered or fitted and in what precision;
# a wrong edge value of any other kind (d - 1 directions at d = min(n, m), a sum, an RMSE, ...)
# it still charges.
EDGE_EXCUSED = {m.name for m in (NOT_CENTERED, MEAN_NOT_ADDED, VALIDATION_MEAN, AXIS_MEAN)}
EDGE_EXCUSED |= {TRAIN_SPLIT.name, FITTED_ON_VAL.name, FLOAT32.name}


def heldout_edges_judge(case, got, want):
    """heldout_error at d = 0 and d = min(n, m) (check="edges"): a value that a centering, split
    or float32 mistake explains passes here, as the values and centering cells charge it."""
    message = heldout_judge(case, got, want)
    if message and getattr(message, "mistake", "") in EDGE_EXCUSED:
        return None
    return message


# --------------------------------------------------------------------------------------------
# best_dim: the d in 0, ..., max_d with the smallest held-out error
# --------------------------------------------------------------------------------------------
def _max_d(case):
    return int(case.args[2])


def _curve_argmin(lo, hi_less):
    """argmin of the curve over d in [lo, max_d - hi_less]: a search that skips an end."""

    def model(case, want):
        curve = case.meta.get("curve", ())[: _max_d(case) + 1]
        part = curve[lo : len(curve) - hi_less]
        return lo + int(np.argmin(part)) if len(part) and len(curve) == _max_d(case) + 1 else None

    return model


CHOSE_BY_TRAIN = Mistake(
    "chose-by-train-error",
    "returned max_d, the largest d allowed: that is what the training error picks (it only "
    "falls). Choose by the held-out error, which falls while d adds signal and rises once it "
    "adds noise. If best_dim calls your heldout_error, make Part C's tests pass first: one "
    "that measured the error on the training split makes a correct search pick max_d too",
    lambda case, want: _max_d(case),
)
MAX_D_EXCLUDED = Mistake(
    "max-d-excluded",
    "is one off the best d, which is max_d itself here: range(max_d) never tries it (try every "
    "d = 0, 1, ..., max_d: range(max_d + 1)), or a position in a list of errors that does not "
    "start at d = 0 was returned as the dimension",
    _curve_argmin(0, 1),
)
ZERO_EXCLUDED = Mistake(
    "zero-excluded",
    "never tried d = 0, the mean alone: when the matrix holds nothing but noise around its mean, "
    "no direction helps and d = 0 is the best model",
    _curve_argmin(1, 0),
)
ARGMAX = Mistake(
    "argmax-not-argmin",
    "returned the d with the largest held-out error: the best d has the smallest",
    lambda case, want: (
        int(np.argmax(case.meta["curve"][: _max_d(case) + 1])) if "curve" in case.meta else None
    ),
)
INDEX_NOT_DIM = Mistake(
    "index-not-dim",
    "is one off the best d: the position in a list of errors that does not start at d = 0 is "
    "not the dimension. If best_dim calls your heldout_error, make Part C's tests pass first: one "
    "that keeps d + 1 or d - 1 directions, or is not centered (its first direction goes to the "
    "mean), moves the smallest error one d away",
    (lambda case, want: want + 1, lambda case, want: want - 1),
)


def _last_minimum(case, want):
    """The largest d whose held-out error equals the smallest (None without a tie)."""
    curve = np.asarray(case.meta.get("curve", ())[: _max_d(case) + 1])
    if curve.size != _max_d(case) + 1:
        return None
    ties = np.flatnonzero(curve == curve.min())
    return int(ties[-1]) if ties.size > 1 else None


TIE_LARGER = Mistake(
    "tie-not-smallest",
    "returned a larger d among several with the same smallest held-out error: on a tie the "
    "smallest d wins (the simpler model). np.argmin returns the first minimum; a loop that "
    "keeps a candidate when its error is <= the best so far keeps the last one (use <)",
    _last_minimum,
)
BEST_MISTAKES = [TIE_LARGER, CHOSE_BY_TRAIN, MAX_D_EXCLUDED, ZERO_EXCLUDED, ARGMAX, INDEX_NOT_DIM]
FLOAT_DIM = Mistake("float-dim", "a float where the dimension, an int, is due")
HELD_CARRIED_OVER = Mistake(
    "heldout-error-carried-over",
    "a right search over a wrong heldout_error: best_dim returned the smallest d of your own "
    "heldout_error's errors, but your heldout_error is wrong on this case",
)


def held_curve_calls(case):
    """The calls of the student's heldout_error a best_dim case asks for (Outcome.companion):
    d = 0, ..., max_d on the case's matrices, then d = 1, ..., max_d on M_train minus its mean
    (what a heldout_error that centres M_train in place leaves for the calls after the first:
    :func:`_in_place_chain`)."""
    M_train, M_val, max_d = case.args[:3]
    ds = range(int(max_d) + 1)
    centred = np.asarray(M_train) - np.mean(M_train)
    return HELD, [(M_train, M_val, d) for d in ds] + [(centred, M_val, d) for d in ds[1:]]


def _in_place_chain(case, got):
    """The errors a search over d = 0, 1, ..., max_d sees when the student's heldout_error
    centres M_train in place (M_train -= mu): d = 0 on M_train, every later d on M_train minus
    its mean, whose mean (about 0) is all the model adds back. None when unknown."""
    n, own = _max_d(case) + 1, got.companion or []
    chain = own[:1] + own[n : 2 * n - 1]
    if len(chain) != n or any(c is None for c in chain):
        return None
    chain = np.asarray(chain, dtype=np.float64)
    return chain if np.isfinite(chain).all() else None


def _carried_over(case, got, g):
    """A message when best_dim's wrong answer g is the argmin (the smallest d on a tie) of the
    student's own heldout_error on the case (got.companion): the search is right, and since a
    right heldout_error's argmin is the expected d, the student's heldout_error is wrong here
    (where, when the case states the right curve, meta["curve"]); else None."""
    own, right = _curve_of(case, got.companion), _curve_of(case, case.meta.get("curve"))
    if own is None or int(np.argmin(own)) != g:
        return None
    where = ""
    if right is not None:
        wrong = [d for d in range(len(own)) if not math.isclose(own[d], right[d], rel_tol=1e-5)]
        where = f" (at d = {', '.join(map(str, wrong[:4]))}{', ...' if len(wrong) > 4 else ''})"
    return HELD_CARRIED_OVER.said(
        f"{BEST}'s search is right for your {HELD} (for {case.label}): it returned d = {g}, the "
        f"d with the smallest of your {HELD}'s errors for d = 0, ..., {len(own) - 1}. But your "
        f"{HELD} is wrong on this case{where}, so its smallest error sits at another d than the "
        f"right one{_looks_like(case, own)}. Part C's tests name the mistake: fix {HELD} first "
        "and this cell passes."
    )


def _named_curve(case, own):
    """The key of the Part C mistake whose held-out curve the student's own curve is (its cells
    name it and take its points), or None. The sum and the RMSE come from the right curve
    (meta["curve"], rounded where a visible test states it, hence rtol 1e-5); the others (the
    uncentered fit, the error on the training split, ...) are stated by the case
    (meta["wrong_curves"]: numbers in a visible test, the hidden checks' own otherwise), so no
    fit of M_train is computed here."""
    n = len(own)
    curves = {}
    right = _curve_of(case, case.meta.get("curve"))
    if right is not None:
        curves.update(sum=right * np.size(case.args[1]), rmse=np.sqrt(right))
    curves.update(case.meta.get("wrong_curves", {}))
    for key, curve in curves.items():
        curve = np.asarray(curve, dtype=np.float64)[: len(own)]
        if curve.size == n and np.allclose(own, curve, rtol=1e-5, atol=1e-12):
            return key
    return None


def _looks_like(case, own):
    """What the student's own held-out curve looks like, when it is one of two mistakes the
    search cannot undo: the uncentered fit's curve (as the case states it, meta["wrong_curves"]),
    or a curve that never rises (the training error)."""
    uncentered = case.meta.get("wrong_curves", {}).get("uncentered")
    if uncentered is not None and len(uncentered) >= len(own):
        if np.allclose(own, np.asarray(uncentered[: len(own)]), rtol=1e-5, atol=1e-12):
            return f": your errors are those of a {HELD} that fitted the SVD to M_train itself"
    if len(own) > 1 and np.all(np.diff(own) <= 0):
        return (
            f": your errors never rise as d grows, as if {HELD} measured the error on the "
            "training split"
        )
    return ""


def _inherited_in_place(case, got):
    """True when best_dim changed M_train alone and returned the smallest d (the first on a
    tie) of what a search in d order over a heldout_error that centres M_train in place sees
    (:func:`_in_place_chain`): the change is heldout_error's, which Part C's cells charge."""
    if list(got.modified) != [0] or got.is_tuple or got.value is None or got.value.shape != ():
        return False
    chain = _in_place_chain(case, got)
    return chain is not None and got.value.item() == int(np.argmin(chain))


def _curve_of(case, curve):
    """Held-out errors for d = 0, ..., max_d as an array; None when unknown or not finite."""
    n = _max_d(case) + 1
    if curve is None or len(curve) < n or any(c is None for c in curve[:n]):
        return None
    curve = np.asarray(curve[:n], dtype=np.float64)
    return curve if np.isfinite(curve).all() else None


def best_judge(case, got, want):
    problem = common_problems(case, got, want, BEST)
    if getattr(problem, "mistake", "") == MODIFIED_INPUT.name and _inherited_in_place(case, got):
        return None  # Part C's cells charge the heldout_error that centres M_train in place
    if problem or want.error_type is not None:
        return problem
    if got.is_tuple or got.value is None or got.value.shape != ():
        return NOT_ONE_NUMBER.said(
            f"{BEST} should return one int for {case.label}; got {', '.join(got.types)}."
        )
    g, w = got.value.item(), int(want.value.item())
    own = _curve_of(case, got.companion)
    if g != w and own is not None and int(np.argmin(own)) == g and _named_curve(case, own):
        w = g  # a right search over a heldout_error whose mistake Part C's tests name and charge
    if g == w:
        t = got.types[0]
        if t != "int" and not t.startswith("numpy.int"):
            return FLOAT_DIM.said(
                f"{BEST} returned a {t} ({g!r}) for {case.label}; a dimension is an int "
                "(int(np.argmin(errors)))."
            )
        return None
    carried = _carried_over(case, got, g)
    if carried:
        return carried
    for m in BEST_MISTAKES:
        for alt in m.predictions(case, w):
            if alt is not None and alt != w and g == alt:
                return m.said(f"{BEST} {m.message} (for {case.label}).")
    return (
        f"{BEST} returned {g} for {case.label}{expected(case, str(w), ', expected ')}: not the d "
        "with the smallest held-out error (if best_dim calls your heldout_error, make Part C's "
        "tests pass first: its mistakes carry over)."
    )


MISTAKES += [*HELD_MISTAKES, NOT_A_NUMBER, FLOAT32, *BEST_MISTAKES, FLOAT_DIM, HELD_CARRIED_OVER]


def _cost_args(case):
    """(V, d, tied, m) of a table_cost call, m None when the table is not factorized."""
    args = list(case.args) + [None] * (4 - len(case.args))
    V, d, tied, m = args[:4]
    return V, d, case.kwargs.get("tied", tied), case.kwargs.get("factor_m", m)


def _wrap32(x: int) -> int:
    """What an int32 computation of x leaves (two's-complement wrap-around)."""
    return (x + 2**31) % 2**32 - 2**31


def _pair(case, got, want):
    """(problem, got_params, got_bytes, want_params, want_bytes) with Python ints (or floats)."""
    problem = common_problems(case, got, want, COST)
    if problem:
        return problem, None, None, None, None
    if not got.is_tuple or len(got.values) != 2 or any(v.shape != () for v in got.values):
        what = ", ".join(got.types) or "nothing"
        return (
            NOT_A_TUPLE.said(
                f"{COST} should return a tuple of two numbers (params, bytes) for {case.label}; "
                f"got {what}."
            ),
            None,
            None,
            None,
            None,
        )
    g = [v.item() for v in got.values]  # Python int (or float) from a 0-d array
    w = [int(v.item()) for v in want.values]
    return None, g[0], g[1], w[0], w[1]


def _overflow_message(case):
    return INT32_OVERFLOW.said(
        f"{COST}'s numbers overflowed for {case.label}: they wrapped around like 32-bit integers "
        f"(np.int32 holds at most {INT32_MAX:,}). Compute with Python ints, which never overflow "
        "(do not convert V or d to np.int32)."
    )


def _on_params(explain):
    """A judge of the parameter count: common problems first, then ``explain(case, got, want)``
    for a wrong count (both counts as Python ints)."""

    def judge(case, got, want):
        problem, gp, _, wp, _ = _pair(case, got, want)
        if problem:
            return problem
        return None if gp == wp else explain(case, gp, wp)

    return judge


# --------------------------------------------------------------------------------------------
# test_cost_tied
# --------------------------------------------------------------------------------------------
@_on_params
def tied_judge(case, gp, wp):
    V, d, tied, _ = _cost_args(case)
    if tied and gp == 2 * wp:
        return TIED_TWICE.said(
            f"{COST} counted the tied table twice for {case.label}: with tied=True the input "
            f"table and the output layer are the same {V} x {d} matrix, stored once (half of the "
            f"{gp:,} parameters counted)."
        )
    if not tied and 2 * gp == wp:
        return ONE_TABLE.said(
            f"{COST} counted one table for {case.label}: with tied=False the input table and the "
            f"output layer are two separate V x d matrices (twice {gp:,} parameters)."
        )
    return f"{COST} returned {gp:,} parameters for {case.label}{expected(case, f'{wp:,}')}, which is not the count."


# --------------------------------------------------------------------------------------------
# test_cost_bytes
# --------------------------------------------------------------------------------------------
def bytes_judge(case, got, want):
    problem, gp, gb, wp, wb = _pair(case, got, want)
    if problem:
        return problem
    per = wb // wp if wp else 16  # bytes per parameter, from the expected pair
    if gb == per * gp:
        return None
    if gp == int(gp) and gb == int(gb) and int(gb) == _wrap32(per * int(gp)):
        return None  # 16 bytes per parameter, wrapped around 32 bits: the ints cell charges that
    for factor, what in [
        (
            4,
            "only the float32 weights (4 bytes per parameter): training with Adam also stores the "
            "gradient and Adam's two moment estimates, 16 bytes per parameter in all",
        ),
        (
            8,
            "the weights and their gradients (8 bytes per parameter) but not Adam's two moment "
            "estimates: 16 bytes per parameter in all",
        ),
        (
            12,
            "three of the four float32 numbers per parameter: the weight, its gradient and both of "
            "Adam's moments make 16 bytes",
        ),
        (
            2,
            "2 bytes per parameter (float16 weights only); this model trains in float32 with Adam: "
            "16 bytes per parameter",
        ),
        (
            32,
            "32 bytes per parameter; the weight, its gradient and Adam's two moments are 4 float32 "
            "numbers of 4 bytes each: 16 bytes",
        ),
    ]:
        if gb == factor * gp:
            return BYTES[factor].said(f"{COST} counted {what} (for {case.label}).")
    if gp and gb == per * gp // 8:
        return BITS.said(
            f"{COST} counted bits where bytes were wanted, or divided by 8 once too often (for {case.label})."
        )
    return f"{COST} returned {gb:,} bytes for {gp:,} parameters for {case.label}; expected 16 bytes per parameter (16 * params)."


# --------------------------------------------------------------------------------------------
# test_cost_factorized
# --------------------------------------------------------------------------------------------
@_on_params
def factorized_judge(case, gp, wp):
    V, d, tied, m = _cost_args(case)
    n = 1 if tied else 2
    projection = m * d
    small = wp // n - projection  # the V x m part of one stored table, from the expected count
    if gp == n * small:
        return NO_PROJECTION.said(
            f"{COST} forgot the m x d projection for {case.label}: a factorized table is a "
            f"V x m table ({small:,}) plus an m x d projection ({projection:,}) that maps its rows "
            "up to width d."
        )
    if gp == n * V * d:
        return FACTOR_IGNORED.said(
            f"{COST} ignored factor_m for {case.label}: with factor_m = {m} each table is V*m + m*d, not V*d."
        )
    if tied and gp == 2 * wp:
        return FACTORIZED_TWICE.said(
            f"{COST} counted the tied table twice for {case.label}: tied=True stores one "
            f"factorized table (half of {gp:,} parameters), not two."
        )
    if not tied and gp == wp - projection:
        return SHARED_PROJECTION.said(
            f"{COST} gave the two untied tables one shared projection for {case.label}: each stored "
            "table is a V x m table plus its own m x d projection."
        )
    if gp == n * (small + V * d):
        return PROJECTION_V_BY_D.said(
            f"{COST} used V x d for the projection for {case.label}; the projection is m x d ({m} x {d})."
        )
    return (
        f"{COST} returned {gp:,} parameters for {case.label}; a factorized table is "
        f"n_tables x (V x m + m x d){expected(case, f'{wp:,}', ' = ')}."
    )


# --------------------------------------------------------------------------------------------
# test_cost_python_ints
# --------------------------------------------------------------------------------------------
def ints_judge(case, got, want):
    problem, gp, gb, wp, wb = _pair(case, got, want)
    if problem:
        return problem
    ints = [g for g in (gp, gb) if g == int(g)]
    overflow = (
        any(t in ("numpy.int32", "numpy.int16", "numpy.uint32") for t in got.types)
        or any(int(g) < 0 for g in ints)
        or any(
            int(g) == _wrap32(w) and int(g) != w
            for g, w in zip((gp, gb), (wp, wb), strict=True)
            if g == int(g)
        )
    )
    if overflow and (gp != wp or gb != wb):
        return _overflow_message(case)
    bad = [t for t in got.types if t != "int"]
    if bad:
        if any(t in ("float", "numpy.float64", "numpy.float32") for t in bad):
            return FLOAT_COUNTS.said(
                f"{COST} returned {', '.join(got.types)} for {case.label}: parameter and byte counts "
                "are integers. Use integer arithmetic (* and //, not /) or int(...)."
            )
        return NUMPY_INTS.said(
            f"{COST} returned {', '.join(got.types)} for {case.label}; the contract asks for Python "
            "ints (numpy integers have fixed sizes and can overflow): wrap them in int(...)."
        )
    return None


# --------------------------------------------------------------------------------------------
# suggest_dim
# --------------------------------------------------------------------------------------------
FORMULA = {"tf": "V ** 0.25", "fastai": "1.6 * V ** 0.56"}
CAP = 600  # fastai's min(600, ...)


def _dim_value(case, got, want):
    problem = common_problems(case, got, want, DIM)
    if problem or want.error_type is not None:
        return problem, None, None
    if got.is_tuple or got.value is None or got.value.shape != ():
        return (
            NOT_ONE_NUMBER.said(
                f"{DIM} should return one number for {case.label}; got {', '.join(got.types)}."
            ),
            None,
            None,
        )
    return None, got.value.item(), int(want.value.item())


def rule_judge(case, got, want):
    """The rule's width. The wrong roundings are named only when the width is what they give:
    floor (int() truncates) or ceil of the unrounded value, where that differs from round's.
    Another width one off (V ** 1/4 is V / 4; round(sqrt(V))) gets the generic message."""
    problem, g, w = _dim_value(case, got, want)
    if problem:
        return problem
    if g == w:
        return None
    V, rule = case.args[0], case.args[1]
    formula = FORMULA.get(rule, "the rule")
    if rule == "fastai" and w == CAP and g > CAP:
        return NO_CAP.said(
            f"{DIM} forgot fastai's cap for {case.label}: the rule is min(600, ...), and "
            "1.6 * V ** 0.56 is above 600 here."
        )
    if rule == "fastai" and g == CAP and w < CAP:
        return MAX_NOT_MIN.said(
            f"{DIM} returned 600 for {case.label}: the rule is min(600, ...), not max."
        )
    if rule == "fastai" and g != w - 1 and g == min(CAP, round((1.6 * V) ** 0.56)):
        return POWER_OF_PRODUCT.said(
            f"{DIM} raised 1.6 * V to the power 0.56 for {case.label}; the rule is 1.6 * (V ** 0.56): "
            "** binds tighter than *, so 1.6 * V ** 0.56 is already right."
        )
    x = {"tf": V**0.25, "fastai": min(CAP, 1.6 * V**0.56)}.get(rule)  # the unrounded width
    if x is not None and g == math.floor(x) != w:
        return TRUNCATED.said(
            f"{DIM} truncated instead of rounding for {case.label}: int() drops the fraction "
            f"of {formula} (use round())."
        )
    if x is not None and g == math.ceil(x) != w:
        return ROUNDED_UP.said(
            f"{DIM} rounded up for {case.label}: {formula} must be rounded to the nearest integer (use round(), not ceil)."
        )
    return f"{DIM} returned {g} for {case.label}, which is not {formula} rounded{expected(case, str(w), ' (')}{')' if shown(case) else ''}."


def contract_judge(case, got, want):
    if want.error_type is not None and got.error_type is None:
        return RULE_NOT_CHECKED.said(
            f"{DIM} should raise ValueError for {case.label}: only 'tf' and 'fastai' are rules."
        )
    problem, g, w = _dim_value(case, got, want)
    if problem or want.error_type is not None:
        return problem
    t = got.types[0]
    if t != "int" and not t.startswith("numpy.int"):
        return FLOAT_WIDTH.said(
            f"{DIM} returned a {t} ({g!r}) for {case.label}; a width is an int: round(x) returns "
            "one, np.round(x) returns a float (wrap it in int(...))."
        )
    return None


JUDGES = {
    f"{COST}:tied": tied_judge,
    f"{COST}:bytes": bytes_judge,
    f"{COST}:factorized": factorized_judge,
    f"{COST}:ints": ints_judge,
    DIM: rule_judge,
    f"{DIM}:contract": contract_judge,
    HELD: heldout_judge,
    f"{HELD}:edges": heldout_edges_judge,
    BEST: best_judge,
}
expect = make_expect(JUDGES, MISTAKES, {BEST: held_curve_calls})
