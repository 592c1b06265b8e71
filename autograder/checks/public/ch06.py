"""Chapter 6's public judges and mistake models (pasted into the released notebook).

``init_embedding`` is random, so its judges grade *statistics* of the table a student's function
drew, never exact values, and they judge from the case alone: its arguments (V, d, scheme, rng)
and, for the scale, the standard deviation the scheme must give (``meta["sigma"]``: written in
the visible test cell, set by the hidden cases). The expected Outcome only says whether the call
must raise. Each statistic is allowed six of its standard errors, as the exercise says:

* the sample standard deviation of N entries has relative standard error 1 / sqrt(2 N);
* the sample mean has standard error s / sqrt(N) (s: the table's own std);
* the sample excess kurtosis has standard error sqrt(24 / N) (0 for a normal, -1.2 for a uniform).

The wrong scales are modelled from sigma (and V, d), never from the table of schemes.
``expected_row_length``'s and ``initial_loss``'s mistakes are modelled from the case and the
expected value. ``scale_for_initial_loss``'s are too where they can be (the square root of the
expected scale, a scale near 0, one within a few percent); the others need the loss itself, so a
case carries what they give in its meta ("one_sided": the scale where the loss first passes
log V + tol from below, "approximation": the small-scale expansion's scale, "bits": the answer
with the loss in bits). A visible test states these literally; the hidden checks compute them
with the reference's loss.
"""

from __future__ import annotations

import math

import numpy as np

from ..compare import expected
from ..judges import (
    GLOBAL_MAX,
    NOT_ONE_ARRAY,
    RETURNED_NONE,
    TRANSPOSED,
    UNSTABLE_SOFTMAX,
    WRONG_DTYPE,
    Case,
    Diagnosis,
    Mistake,
    array_judge,
    common_problems,
    mistake_id,
    outcome_of,
)
from ..visible import make_expect

INIT = "init_embedding"
ROW = "expected_row_length"
Z = 6.0  # standard errors allowed for every statistic


def _table_problem(case, got, want):
    """Common problems, then: one finite array of shape (V, d), V and d the call's arguments."""
    problem = common_problems(case, got, want, INIT)
    if problem or want.error_type is not None:
        return problem
    if got.returned_none:
        return RETURNED_NONE.said(
            f"{INIT} returned None for {case.label}. Did you forget the return statement?"
        )
    g = got.value
    if g is None or got.is_tuple:
        what = ", ".join(got.types) or "nothing"
        return NOT_ONE_ARRAY.said(f"{INIT} should return one array for {case.label}, got {what}.")
    shape = (int(case.args[0]), int(case.args[1]))
    if g.shape != shape:
        text = f"{INIT} returned shape {g.shape} for {case.label}; expected (V, d) = {shape}."
        if g.shape == shape[::-1]:
            return TRANSPOSED.said(
                text + " It looks transposed: the table has one row per id, shape (V, d)."
            )
        return text
    if g.size and not np.all(np.isfinite(g.astype(np.float64))):
        return f"{INIT} returned NaN or inf for {case.label}."
    return None


SCHEME_NOT_CHECKED = Mistake("scheme-not-checked", "an unknown scheme did not raise ValueError")
CONSTANT = Mistake("constant-table", "every entry of the table is the same number")
UNIFORM_CENTRED = Mistake("uniform-not-normal", "centred uniform draws, not normal ones")
GLOBAL_RNG = Mistake(
    "global-rng", "the numbers do not come from the rng argument (np.random or a new generator)"
)
FIXED_SEED = Mistake(
    "fixed-seed", "the same table for every generator: the rng argument is ignored"
)


# --------------------------------------------------------------------------------------------
# test_init_contract: shape, float32, ValueError
# --------------------------------------------------------------------------------------------
def contract_judge(case, got, want):
    if want.error_type is not None and got.error_type is None:
        return SCHEME_NOT_CHECKED.said(
            f"{INIT} should raise ValueError for {case.label}: only 'pytorch', 'gpt2' and "
            "'transformer' are schemes; do not fall back to a default silently."
        )
    problem = _table_problem(case, got, want)
    if problem or want.error_type is not None:
        return problem
    if got.value.dtype != np.float32:
        return WRONG_DTYPE.said(
            f"{INIT} returned {got.value.dtype} for {case.label}; the table should be float32, "
            "like nn.Embedding's weight (convert with .astype(np.float32))."
        )
    return None


# --------------------------------------------------------------------------------------------
# test_init_scale: the standard deviation of each scheme
# --------------------------------------------------------------------------------------------
UNIFORM = Mistake(
    "uniform-draws",
    "drew uniformly from [0, 1) (rng.random, std 1/sqrt(12) = 0.289): draw from a normal "
    "distribution, rng.normal or rng.standard_normal",
)
VARIANCE_FOR_STD = Mistake(
    "variance-for-std",
    "used 0.02 as the variance; 0.02 is GPT-2's standard deviation (the variance is "
    "0.02**2 = 0.0004)",
)
SQRT_D_IN_TABLE = Mistake(
    "sqrt-d-in-table",
    "put the sqrt(d) multiplier into the table: the transformer's table has std "
    "1/sqrt(d), and the multiplier belongs to the lookup (E[ids] * sqrt(d)), not to "
    "init_embedding",
)
STD_ONE_OVER_D = Mistake(
    "std-one-over-d",
    "used std 1/d; the transformer's table has std d**-0.5 = 1/sqrt(d) (its variance is 1/d)",
)
TIMES_SQRT_D = Mistake(
    "times-sqrt-d",
    "multiplied by sqrt(d) instead of dividing: the transformer's table has std 1/sqrt(d)",
)
V_FOR_D = Mistake(
    "v-for-d",
    "used the vocabulary size V instead of the width d: the transformer's table has std 1/sqrt(d)",
)
PYTORCH_SCALED = Mistake(
    "pytorch-scaled",
    "scaled the pytorch scheme by 1/sqrt(d); nn.Embedding's default is N(0, 1), std 1 at "
    "every width",
)
SCALE_MISTAKES = [
    UNIFORM,
    VARIANCE_FOR_STD,
    SQRT_D_IN_TABLE,
    STD_ONE_OVER_D,
    TIMES_SQRT_D,
    V_FOR_D,
    PYTORCH_SCALED,
]


def _scale_candidates(case, sigma):
    """(std, mistake) of the classic wrong scales, each derived from the expected sigma."""
    V, d, scheme = case.args[0], case.args[1], case.args[2]
    out = [(sigma / math.sqrt(12.0), UNIFORM)]
    if scheme == "gpt2":
        out.append((math.sqrt(sigma), VARIANCE_FOR_STD))
    if scheme == "transformer":
        out += [
            (sigma * math.sqrt(d), SQRT_D_IN_TABLE),
            (sigma * sigma, STD_ONE_OVER_D),
            (1.0 / sigma, TIMES_SQRT_D),
            (sigma * math.sqrt(d / V) if V else None, V_FOR_D),
        ]
    if scheme == "pytorch":
        out.append((sigma / math.sqrt(d), PYTORCH_SCALED))
    return [(s, m) for s, m in out if s]


def scale_judge(case, got, want):
    problem = _table_problem(case, got, want)
    if problem:
        return problem
    g = got.value.astype(np.float64)
    sigma = float(case.meta["sigma"])
    tol = Z / math.sqrt(2 * g.size)  # six relative standard errors of the sample std
    s = float(g.std())
    if abs(s / sigma - 1) <= tol:
        return None
    for alt, mistake in _scale_candidates(case, sigma):
        if abs(s / alt - 1) <= tol:
            return mistake.said(
                f"{INIT} {mistake.message} (for {case.label}: std {s:.4g}, expected {sigma:.4g})."
            )
    return (
        f"{INIT}'s entries have standard deviation {s:.4g} for {case.label}; expected "
        f"{sigma:.4g} (a correct table of {g.size:,} entries lands within {100 * tol:.1f}% of it)."
    )


# --------------------------------------------------------------------------------------------
# test_init_distribution: centred and normal (independently of the scale)
# --------------------------------------------------------------------------------------------
def distribution_judge(case, got, want):
    problem = _table_problem(case, got, want)
    if problem:
        return problem
    g = got.value.astype(np.float64).ravel()
    n = g.size
    s = float(g.std())
    if s == 0.0:
        return CONSTANT.said(
            f"{INIT} returned a table whose entries are all equal for {case.label}; draw them at "
            "random."
        )
    m = float(g.mean())
    # The table's own scale s: this cell grades the shape of the distribution only (the scale is
    # test_init_scale's job): |mean| <= 6 s / sqrt(N).
    if abs(m) > Z * s / math.sqrt(n):
        if abs(m / s - math.sqrt(3.0)) < 0.05:  # U[0, a): mean a/2, std a/sqrt(12)
            return UNIFORM.said(
                f"{INIT}'s entries are not centred at 0 for {case.label} (mean {m:.4g}): rng.random "
                "draws uniformly from [0, 1); draw from a normal distribution, rng.normal or "
                "rng.standard_normal."
            )
        return (
            f"{INIT}'s entries have mean {m:.4g} for {case.label}; expected 0 (mean 0, std sigma)."
        )
    z = (g - m) / s
    g2 = float(np.mean(z**4) - 3.0)  # sample excess kurtosis: 0 for a normal, -1.2 for a uniform
    limit = Z * math.sqrt(24.0 / n)
    if abs(g2) > limit:
        if abs(g2 + 1.2) < 0.1:
            return UNIFORM_CENTRED.said(
                f"{INIT}'s entries look uniform, not normal, for {case.label} (excess kurtosis "
                f"{g2:.3f}; a normal has 0, a uniform -1.2): draw from rng.normal or "
                "rng.standard_normal."
            )
        return (
            f"{INIT}'s entries do not look normal for {case.label}: their excess kurtosis is "
            f"{g2:.3f}, a normal distribution has 0 (within {limit:.3f} here)."
        )
    return None


# --------------------------------------------------------------------------------------------
# test_init_uses_rng: same seed -> same table, new seed -> new table
# --------------------------------------------------------------------------------------------
def seed_problem(case, table, first_label, first, same: bool) -> str | None:
    """``table`` (this case's) against ``first`` (drawn for ``first_label``): with ``same`` the
    two generators had the same seed and the tables must be equal, else they must differ."""
    equal = first.shape == table.shape and np.array_equal(first, table)
    if same and not equal:
        return GLOBAL_RNG.said(
            f"{INIT} gave different tables for two generators with the same seed "
            f"({case.label}): draw every number from the rng argument (rng.normal, "
            "rng.standard_normal), not from np.random or a new default_rng()."
        )
    if not same and equal:
        return FIXED_SEED.said(
            f"{INIT} gave the same table for {first_label} and {case.label}: it ignores the rng "
            "argument (a fixed seed inside the function?). Draw from rng."
        )
    return None


def rng_judge(case, got, want):
    """A table, and (in a visible test) equal to meta["same_as"] or different from
    meta["differs_from"], the table a first call drew (meta["first_label"] names it)."""
    problem = _table_problem(case, got, want)
    if problem:
        return problem
    first_label = case.meta.get("first_label", "the first generator")
    for key, same in (("same_as", True), ("differs_from", False)):
        if case.meta.get(key) is not None:  # None: the first call failed, and said why
            problem = seed_problem(case, got.value, first_label, np.asarray(case.meta[key]), same)
            if problem:
                return problem
    return None


# --------------------------------------------------------------------------------------------
# expected_row_length: the exact chi mean
# --------------------------------------------------------------------------------------------
def _mistake(name, message, fn):
    """A mistake ``fn(d, sigma, want)``; no model where it gives the right answer anyway."""

    def model(case, want):
        d, sigma = case.args[0], case.args[1]
        w = float(want)
        try:
            value = fn(d, sigma, w)
        except ZeroDivisionError:
            return None
        if value is None or (w != 0 and math.isclose(value, w, rel_tol=1e-6)):
            return None  # the mistake gives the right answer here: nothing to name
        return np.asarray(value, dtype=np.float64)

    return Mistake(name, message, model)


ROW_MISTAKES = [
    _mistake(
        "sqrt-d-approximation",
        f"{ROW} returned the approximation sqrt(d) * sigma; the exact mean of the chi "
        "distribution is a little smaller (sigma * sqrt(2) * Gamma((d+1)/2) / Gamma(d/2))",
        lambda d, s, w: math.sqrt(d) * s,
    ),
    _mistake(
        "squared-length",
        f"{ROW} returned the expected squared length d * sigma**2, not the expected length",
        lambda d, s, w: d * s * s,
    ),
    _mistake(
        "no-sigma",
        f"{ROW} ignored sigma: the length scales with sigma (multiply the sigma = 1 value by sigma)",
        lambda d, s, w: None if s in (0.0, 1.0) else w / s,
    ),
    _mistake(
        "sigma-squared",
        f"{ROW} scaled by sigma**2 instead of sigma: a length scales like the standard deviation",
        lambda d, s, w: None if s in (0.0, 1.0) else w * s,
    ),
    _mistake(
        "swapped-gammas",
        f"{ROW} swapped the two Gamma functions: the numerator is Gamma((d + 1) / 2)",
        lambda d, s, w: None if w == 0 else 2 * s * s / w,
    ),
    _mistake(
        "no-sqrt-2",
        f"{ROW} lost the factor sqrt(2) in sigma * sqrt(2) * Gamma((d+1)/2) / Gamma(d/2)",
        lambda d, s, w: w / math.sqrt(2),
    ),
]

_row_values = array_judge(ROW, check_dtype=False, mistakes=ROW_MISTAKES, row_word="value")
# Gamma(x) and exp(lgamma(x)) are the same number: both overflow a float once x > 171.6.
GAMMA_OVERFLOW = Mistake(
    "gamma-overflow",
    "Gamma(d / 2) and Gamma((d + 1) / 2) are larger than the largest float once d >= 343 "
    "(math.gamma(172) overflows, and so does exp(math.lgamma(172)): it is the same number), but "
    "their ratio is moderate. Take the ratio in logarithms: subtract first, then exp once, "
    "exp(lgamma((d + 1) / 2) - lgamma(d / 2)); exp(lgamma(a)) / exp(lgamma(b)) overflows like "
    "gamma(a) / gamma(b)",
)
NOT_A_FLOAT = Mistake("not-a-float", "an array where one float is due")
NOT_EXACT = Mistake(
    "not-exact-enough",
    "the value is within 1e-6 but not within the relative 1e-9 the exercise asks for: an "
    "approximation (a truncated series in 1/d, or one used above some d) is not exact enough "
    "at every d. exp(lgamma((d + 1) / 2) - lgamma(d / 2)) is exact to about 1e-13 at every d",
)


def row_judge(case, got, want):
    if got.error_type == "OverflowError":
        return GAMMA_OVERFLOW.said(
            f"{ROW} raised OverflowError for {case.label}: {GAMMA_OVERFLOW.message}."
        )
    if got.value is not None and not got.is_tuple and got.value.size == 1:
        v = float(np.asarray(got.value, dtype=np.float64).ravel()[0])
        if not math.isfinite(v) and want.value is not None and math.isfinite(float(want.value)):
            return GAMMA_OVERFLOW.said(
                f"{ROW} returned {v} for {case.label}: {GAMMA_OVERFLOW.message}."
            )
    if got.value is not None and got.value.shape != () and got.value.size == 1 and not got.is_tuple:
        return NOT_A_FLOAT.said(
            f"{ROW} returned an array of shape {got.value.shape} for {case.label}; "
            "return a single float (float(...))."
        )
    msg = _row_values(case, got, want)
    if msg and not mistake_id(msg) and want.value is not None and got.value is not None:
        g, w = float(np.asarray(got.value, dtype=np.float64).reshape(-1)[0]), float(want.value)
        if w != 0 and math.isfinite(g) and abs(g / w - 1) < 1e-6:
            return NOT_EXACT.said(f"{ROW} is not exact for {case.label}: {NOT_EXACT.message}.")
    return msg


# --------------------------------------------------------------------------------------------
# initial_loss: the mean cross-entropy in nats, before any training
# --------------------------------------------------------------------------------------------
LOSS = "initial_loss"
SCALE = "scale_for_initial_loss"
LOSS_RTOL = 1e-6  # float32 tables may be summed in float32: a loss is a diagnostic, not a key
SCALE_RTOL = 1e-3  # what the exercise asks of the scale


def _positions(case):
    """(N, shape) of a case's ids (initial_loss's and scale_for_initial_loss's third argument)."""
    shape = np.shape(case.args[2])
    return int(np.prod(shape, dtype=np.int64)), shape


LOG2 = Mistake(
    "log2-loss",
    "took the loss in bits (log base 2): the course's loss is in nats, the natural log (np.log), "
    "so that the uniform guess costs log V = ln V",
    lambda case, want: np.float64(want / math.log(2)),
)
LOG10 = Mistake(
    "log10-loss",
    "took the loss with log base 10: the course's loss is in nats, the natural log (np.log)",
    lambda case, want: np.float64(want / math.log(10)),
)
SUM_POSITIONS = Mistake(
    "sum-over-positions",
    "summed the per-position losses: the loss is their mean over all N positions, so that it "
    "does not grow with the batch and log V stays the yardstick",
    lambda case, want: None if _positions(case)[0] < 2 else np.float64(want * _positions(case)[0]),
)
FIRST_AXIS_MEAN = Mistake(
    "mean-over-first-axis",
    "averaged over the first axis only (summed over the others): for ids of shape (B, T) the "
    "mean is over all B * T positions",
    lambda case, want: (
        None
        if len(_positions(case)[1]) < 2 or _positions(case)[1][0] == _positions(case)[0]
        else np.float64(want * _positions(case)[0] / _positions(case)[1][0])
    ),
)
NO_MAX = Mistake(
    "no-max-subtraction",
    "exp of logits this large overflows (or a probability underflows to 0 and its log is -inf): "
    "subtract each row's largest logit m first and take the log-softmax as "
    "(z_y - m) - log(sum_j exp(z_j - m)), never exp(z) directly nor log(softmax(z))",
)
LOSS_MISTAKES = [LOG2, LOG10, SUM_POSITIONS, FIRST_AXIS_MEAN]


def _unstable(case) -> tuple[bool, bool]:
    """(could exp of an unshifted logit overflow here, could one shift for the whole batch
    underflow a whole row here), in float64 or the table's dtype: exp overflows above log(largest
    float) and underflows to 0 below log(smallest subnormal)."""
    E, W, ids = case.args[0], case.args[1], case.args[2]
    x = np.asarray(ids).reshape(-1).astype(np.int64)
    top = (np.asarray(E, dtype=np.float64)[x] @ np.asarray(W, dtype=np.float64).T).max(axis=1)
    dtypes = {np.dtype(np.float64), np.dtype(np.asarray(E).dtype)}
    over = any(top.max() > np.log(np.finfo(dt).max) for dt in dtypes)
    spread = top.max() - top.min()
    under = any(spread > -np.log(float(np.finfo(dt).smallest_subnormal)) for dt in dtypes)
    return over, under


def _non_finite(case, g) -> str:
    """A loss of inf or NaN: which softmax broke, told apart by what the case's logits allow and,
    where both could happen, by the sign (log(0) = -inf: a row's normalizer underflowed)."""
    over, under = _unstable(case)
    if under and (g == -math.inf or not over):
        mistake = GLOBAL_MAX
    elif over and (g == math.inf or not under):
        mistake = NO_MAX
    elif over and under:
        mistake = UNSTABLE_SOFTMAX
    else:
        mistake = NO_MAX
    return mistake.said(f"{LOSS} returned {g} for {case.label}: {mistake.message}.")


NOT_ONE_NUMBER = Mistake("not-one-number", "one number (a float) was due")


def _number(case, got, want, fname):
    """(problem, the student's number, the expected number)."""
    problem = common_problems(case, got, want, fname)
    if problem or want.error_type is not None:
        return problem, None, None
    if got.is_tuple or got.value is None or got.value.size != 1:
        what = ", ".join(got.types) if got.is_tuple else f"shape {np.shape(got.value)}"
        return (
            NOT_ONE_NUMBER.said(
                f"{fname} should return one float for {case.label}; it returned {what}."
            ),
            None,
            None,
        )
    return None, float(np.asarray(got.value, dtype=np.float64).reshape(-1)[0]), float(want.value)


def _near(a, b, rtol):
    return math.isfinite(a) and abs(a - b) <= rtol * max(abs(b), 1e-300)


def _named_number(fname, case, g, w, mistakes, rtol):
    """The first mistake that gives the student's number (and not the expected one)."""
    for m in mistakes:
        for alt in m.predictions(case, w):
            if _near(g, float(alt), rtol) and not _near(float(alt), w, rtol):
                return m.said(f"{fname} {m.message} (for {case.label}).")
    return None


def loss_judge(case, got, want):
    problem, g, w = _number(case, got, want, LOSS)
    if problem:
        return problem
    if _near(g, w, LOSS_RTOL):
        return None
    if not math.isfinite(g):
        return _non_finite(case, g)
    named = _named_number(LOSS, case, g, w, LOSS_MISTAKES, LOSS_RTOL)
    if named:
        return named
    return (
        f"{LOSS} returned {g:.6g} for {case.label}{expected(case, f'{w:.6g}')}: the mean over "
        "the positions of -log softmax(z_n)[y_n], z_n = W @ E[x_n], in nats."
    )


# --------------------------------------------------------------------------------------------
# scale_for_initial_loss: where the initial loss of s * E first leaves log V +- tol
# --------------------------------------------------------------------------------------------
def _from_meta(key):
    """What a mistake gives, from the case's meta["wrong"] (a visible test states it literally)."""
    return lambda case, want: case.meta.get("wrong", {}).get(key)


ONE_SIDED = Mistake(
    "one-sided-band",
    "kept only loss <= log V + tol: the band is two-sided, |loss - log V| <= tol. A loss far "
    "below log V before any training is as wrong a start as one far above it (the initial "
    "predictions already favour the targets), and here the loss leaves the band downwards first",
    _from_meta("one_sided"),
)
BOTH_TABLES = Mistake(
    "scaled-both-tables",
    "scaled W as well as E: the logits W @ (s E[x]) grow like s, but (s W) @ (s E[x]) grows like "
    "s**2, so the answer is off by a square root. Scale the table E only",
    lambda case, want: np.float64(math.sqrt(want)) if want > 0 else None,
)
APPROXIMATION = Mistake(
    "small-scale-approximation",
    "used the small-scale expansion (loss ~ log V + s**2 Var(z) / 2, a logit standard deviation "
    "of sqrt(2 tol)): it is only approximate this far out. Find where the loss itself leaves "
    "the band (bisection on the loss you compute)",
    _from_meta("approximation"),
)
BITS = Mistake(LOG2.name, LOG2.message, _from_meta("bits"))  # the same mistake, in the band
AT_LOG_V = Mistake(
    "targets-log-v-exactly",
    "returned a scale where the loss equals log V (s = 0, or where a loss that dipped below "
    "log V comes back to it): the answer is where |loss - log V| first reaches tol",
    _from_meta("at_log_v"),
)
NOT_PRECISE = Mistake(
    "not-precise-enough",
    "is within a few percent but not within the relative 1e-3 asked: refine around the "
    "crossing (bisection halves the bracket at each step; a fixed grid is too coarse)",
)
SCALE_MODELS = [ONE_SIDED, BOTH_TABLES, APPROXIMATION, BITS, AT_LOG_V]


def _own_at_zeros(case, got):
    """The student's initial_loss on a table of zeros (the companion call): its value, or None
    where it raised or did not return one number."""
    return (got.companion or [None])[0]


def _zero_table_problem(case, got) -> str | None:
    """What the student's initial_loss gets wrong on a table of zeros, whose loss is exactly
    log V (the companion call, made by the visible tests and the graded checks alike); None when
    it is right there, or when the companion was not asked for."""
    if got.companion is None:
        return None
    E, W, ids, targets = case.args[:4]
    log_V = math.log(W.shape[0])
    v = _own_at_zeros(case, got)
    if v is None:
        return f"on a table of zeros it raised an error or did not return one number, not log V = {log_V:.6g}"
    if _near(v, log_V, LOSS_RTOL):
        return None
    zero = Case("a table of zeros", (np.zeros_like(E), W, ids, targets))
    named = next(
        (
            m
            for m in LOSS_MISTAKES
            for alt in m.predictions(zero, log_V)
            if _near(v, float(alt), LOSS_RTOL)
        ),
        None,
    )
    return f"it gives {v:.6g} on a table of zeros, not log V = {log_V:.6g}" + (
        f" (it {named.message})" if named else ""
    )


def loss_companion(case: Case):
    """The call of the student's initial_loss a scale case asks for (Outcome.companion): a table
    of zeros, whose loss is exactly log V (N log V when it is summed, log2 V in bits)."""
    E, W, ids, targets = case.args[:4]
    return (LOSS, [(np.zeros_like(E), W, ids, targets)])


def _edge_crossing(case, part_c, g) -> bool:
    """Whether the student's own initial_loss (a visible test hands it as part_c) crosses an
    edge of the band log V +- tol at the scale g (its value on either side of g, within the
    relative 1e-3 asked, lies on either side of that edge)."""
    E, W, ids, targets = case.args[:4]
    log_V, tol = math.log(W.shape[0]), _tol(case)

    def side(s):
        out = outcome_of(part_c, Case("scaled", (s * E, W, ids, targets)))
        if out.error_type is not None or out.is_tuple or out.value is None or out.value.size != 1:
            return None
        return abs(float(np.asarray(out.value, dtype=np.float64).reshape(-1)[0]) - log_V) >= tol

    below, above = side(g * (1 - SCALE_RTOL / 2)), side(g * (1 + SCALE_RTOL / 2))
    return below is not None and above is not None and below != above


def _tol(case) -> float:
    return case.args[4] if len(case.args) > 4 else case.kwargs.get("tol", 0.1)  # its default


def _right_for_own_loss(case, got, want) -> bool:
    """The student's initial_loss is wrong on a table of zeros (Part C charges that: a loss in
    bits gives log2 V, a sum over the positions N log V), and the scale is right for that loss,
    so Part D does not charge the mistake again. Right for it: the scale where a loss in bits
    leaves log2 V +- tol bits (meta["wrong"]["bits"]); 0 when that loss is out of the band
    log V +- tol already at s = 0 (within the 1e-3 of the expected scale asked); what the
    reference search gives over that loss, a multiple k of the right one (the graded checks
    state it: meta["wrong"]["own_loss"], [k, scale] pairs); or, in a visible test (which hands
    the judge the student's initial_loss), a scale where that loss crosses an edge of the band."""
    own = _own_at_zeros(case, got)
    log_V = math.log(case.args[1].shape[0])
    if own is None or _near(own, log_V, LOSS_RTOL):
        return False
    problem, g, w = _number(case, got, want, SCALE)
    if problem or g is None or not math.isfinite(g):
        return False
    wrong = case.meta.get("wrong", {})
    bits = wrong.get("bits")
    if _near(own, math.log2(case.args[1].shape[0]), LOSS_RTOL) and bits is not None:
        if _near(g, float(bits), SCALE_RTOL):
            return True
    if abs(own - log_V) >= _tol(case) and 0.0 <= g <= SCALE_RTOL * w:
        return True
    k = own / log_V
    if any(_near(k, kk, 1e-6) and _near(g, ss, SCALE_RTOL) for kk, ss in wrong.get("own_loss", [])):
        return True
    part_c = case.meta.get("part_c")
    return callable(part_c) and g > 0 and _edge_crossing(case, part_c, g)


def loss_scale_judge(case, got, want):
    """scale_for_initial_loss's value; a wrong one whose initial_loss is wrong on a table of
    zeros (the companion call) says so first, and one right for that wrong loss passes: Part C
    charges the mistake, once."""
    message = _scale_message(case, got, want)
    if not message or _right_for_own_loss(case, got, want):
        return None
    problem = _zero_table_problem(case, got)
    if not problem:
        return message
    head = (
        f"Your {LOSS} {problem}; fix Part C first: a mistake there carries over into {SCALE}, "
        "which calls it. What this test saw: "
    )
    return Diagnosis(head + str(message), getattr(message, "mistake", ""))


def _below_band(case, got, g) -> bool:
    """Whether the loss at the scale g is below log V - tol (a search that kept only the upper
    edge of the band stopped there): from the case's meta["wrong"]["below_band"], the interval
    of such scales (the graded checks compute it), or, in a visible test, from the student's
    own initial_loss (part_c) when it is right on a table of zeros."""
    if not math.isfinite(g) or g <= 0:
        return False
    interval = case.meta.get("wrong", {}).get("below_band")
    if interval:
        a, b = float(interval[0]), float(interval[1])
        return a * (1 + SCALE_RTOL) < g < b * (1 - SCALE_RTOL)
    part_c = case.meta.get("part_c")
    if not callable(part_c) or _zero_table_problem(case, got) is not None:
        return False
    E, W, ids, targets = case.args[:4]
    out = outcome_of(part_c, Case("scaled", (g * E, W, ids, targets)))
    if out.error_type is not None or out.is_tuple or out.value is None or out.value.size != 1:
        return False
    v = float(np.asarray(out.value, dtype=np.float64).reshape(-1)[0])
    return v - math.log(W.shape[0]) < -_tol(case)


def _scale_message(case, got, want):
    problem, g, w = _number(case, got, want, SCALE)
    if problem:
        return problem
    if _near(g, w, SCALE_RTOL):
        return None
    named = _named_number(SCALE, case, g, w, SCALE_MODELS, SCALE_RTOL)
    if named:
        return named
    if _below_band(case, got, g):
        return ONE_SIDED.said(
            f"{SCALE} returned {g:.6g} for {case.label}, where the loss is already below "
            f"log V - tol: it {ONE_SIDED.message}."
        )
    if math.isfinite(g) and abs(g) < 0.01 * w:
        return AT_LOG_V.said(f"{SCALE} {AT_LOG_V.message} (for {case.label}: {g:.3g}).")
    if _near(g, w, 0.05):
        return NOT_PRECISE.said(
            f"{SCALE} returned {g:.6g} for {case.label}, which {NOT_PRECISE.message}."
        )
    return (
        f"{SCALE} returned {g:.6g} for {case.label}{expected(case, f'{w:.6g}')}: not the largest "
        "scale s at which the initial loss of s * E is still within tol of log V."
    )


INIT_MISTAKES = [SCHEME_NOT_CHECKED, *SCALE_MISTAKES, CONSTANT, UNIFORM_CENTRED, GLOBAL_RNG]
INIT_MISTAKES += [FIXED_SEED]
# Every mistake this chapter recognises (judges.COMMON besides): ids unique within the chapter.
MISTAKES = [*INIT_MISTAKES, *ROW_MISTAKES, GAMMA_OVERFLOW, NOT_A_FLOAT, NOT_EXACT]
MISTAKES += [*LOSS_MISTAKES, NO_MAX, GLOBAL_MAX, UNSTABLE_SOFTMAX, NOT_ONE_NUMBER, ONE_SIDED]
MISTAKES += [BOTH_TABLES, APPROXIMATION]
MISTAKES += [AT_LOG_V, NOT_PRECISE]


JUDGES = {
    INIT: contract_judge,
    f"{INIT}:scale": scale_judge,
    f"{INIT}:distribution": distribution_judge,
    f"{INIT}:rng": rng_judge,
    ROW: row_judge,
    LOSS: loss_judge,
    SCALE: loss_scale_judge,
}
expect = make_expect(JUDGES, MISTAKES, {SCALE: loss_companion})
