"""Chapter 6: initialization scale. Hidden checks for its exercise.

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
"""

from __future__ import annotations

import math

import numpy as np

from .framework import (
    Case,
    Check,
    CheckResult,
    Mistake,
    Outcome,
    array_judge,
    checks_for,
    common_problems,
    named_case,
)

A = "06_init_scale"
check = checks_for(A)
INIT_NAMES = ["V", "d", "scheme", "rng"]
Z = 6.0  # standard errors allowed for every statistic (see the module docstring)

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


def _table_problem(case: Case, got: Outcome, want: Outcome) -> str | None:
    """Common problems, then: one array of the reference's shape, finite values."""
    problem = common_problems(case, got, want, "init_embedding")
    if problem or want.error_type is not None:
        return problem
    g, w = got.value, want.value
    if g is None or got.is_tuple:
        return f"init_embedding should return one array for {case.label}, got {', '.join(got.types) or 'nothing'}."
    if g.shape != w.shape:
        hint = (
            " It looks transposed: the table has one row per id, shape (V, d)."
            if g.shape == w.shape[::-1]
            else ""
        )
        return f"init_embedding returned shape {g.shape} for {case.label}; expected (V, d) = {w.shape}.{hint}"
    if g.size and not np.all(np.isfinite(g.astype(np.float64))):
        return f"init_embedding returned NaN or inf for {case.label}."
    return None


# --------------------------------------------------------------------------------------------
# test_init_contract: shape, float32, ValueError
# --------------------------------------------------------------------------------------------
def _contract_judge(case, got, want):
    if want.error_type is not None and got.error_type is None:
        return (
            f"init_embedding should raise ValueError for {case.label}: only 'pytorch', 'gpt2' and "
            "'transformer' are schemes; do not fall back to a default silently."
        )
    problem = _table_problem(case, got, want)
    if problem or want.error_type is not None:
        return problem
    if got.value.dtype != np.float32:
        return (
            f"init_embedding returned {got.value.dtype} for {case.label}; the table should be float32, "
            "like nn.Embedding's weight (convert with .astype(np.float32))."
        )
    return None


# --------------------------------------------------------------------------------------------
# test_init_scale: the standard deviation of each scheme
# --------------------------------------------------------------------------------------------
def _scale_candidates(case):
    """(std, message) of classic wrong scales for this case."""
    V, d, scheme = case.meta["V"], case.meta["d"], case.meta["scheme"]
    sigma = case.meta["sigma"]
    out = [
        (
            sigma / math.sqrt(12.0),
            "drew uniformly from [0, 1) (rng.random, std 1/sqrt(12) = 0.289): draw from a normal distribution, rng.normal or rng.standard_normal",
        )
    ]
    if scheme == "gpt2":
        out.append(
            (
                math.sqrt(0.02),
                "used 0.02 as the variance; 0.02 is GPT-2's standard deviation (the variance is 0.02**2 = 0.0004)",
            )
        )
    if scheme == "transformer":
        out.append(
            (
                1.0,
                "put the sqrt(d) multiplier into the table: the transformer's table has std 1/sqrt(d), and the multiplier belongs to the lookup (E[ids] * sqrt(d)), not to init_embedding",
            )
        )
        out.append(
            (
                1.0 / d,
                "used std 1/d; the transformer's table has std d**-0.5 = 1/sqrt(d) (its variance is 1/d)",
            )
        )
        out.append(
            (
                math.sqrt(d),
                "multiplied by sqrt(d) instead of dividing: the transformer's table has std 1/sqrt(d)",
            )
        )
        out.append(
            (
                V**-0.5,
                "used the vocabulary size V instead of the width d: the transformer's table has std 1/sqrt(d)",
            )
        )
    if scheme == "pytorch":
        out.append(
            (
                d**-0.5,
                "scaled the pytorch scheme by 1/sqrt(d); nn.Embedding's default is N(0, 1), std 1 at every width",
            )
        )
    return out


def _scale_judge(case, got, want):
    problem = _table_problem(case, got, want)
    if problem:
        return problem
    g = got.value.astype(np.float64)
    sigma = case.meta["sigma"]
    tol = Z / math.sqrt(2 * g.size)  # relative standard error of the sample std: 1 / sqrt(2N)
    s = float(g.std())
    if abs(s / sigma - 1) <= tol:
        return None
    for alt, message in _scale_candidates(case):
        if abs(s / alt - 1) <= tol:
            return (
                f"init_embedding {message} (for {case.label}: std {s:.4g}, expected {sigma:.4g})."
            )
    return (
        f"init_embedding's entries have standard deviation {s:.4g} for {case.label}; expected "
        f"{sigma:.4g} (a correct table of {g.size:,} entries lands within {100 * tol:.1f}% of it)."
    )


# --------------------------------------------------------------------------------------------
# test_init_distribution: centred and normal (independently of the scale)
# --------------------------------------------------------------------------------------------
def _distribution_judge(case, got, want):
    problem = _table_problem(case, got, want)
    if problem:
        return problem
    g = got.value.astype(np.float64).ravel()
    n = g.size
    s = float(g.std())
    if s == 0.0:
        return f"init_embedding returned a table whose entries are all equal for {case.label}; draw them at random."
    m = float(g.mean())
    # The student's own scale s is used, so that this cell grades the shape of the distribution
    # only (the scale is test_init_scale's job): |mean| <= 6 s / sqrt(N).
    if abs(m) > Z * s / math.sqrt(n):
        if (
            abs(m / s - math.sqrt(3.0)) < 0.05
        ):  # U[0, a): mean a/2, std a/sqrt(12) -> mean/std = sqrt(3)
            return (
                f"init_embedding's entries are not centred at 0 for {case.label} (mean {m:.4g}): rng.random "
                "draws uniformly from [0, 1); draw from a normal distribution, rng.normal or rng.standard_normal."
            )
        return f"init_embedding's entries have mean {m:.4g} for {case.label}; expected 0 (mean 0, std sigma)."
    z = (g - m) / s
    g2 = float(np.mean(z**4) - 3.0)  # sample excess kurtosis: 0 for a normal, -1.2 for a uniform
    if abs(g2) > Z * math.sqrt(24.0 / n):
        if abs(g2 + 1.2) < 0.1:
            return (
                f"init_embedding's entries look uniform, not normal, for {case.label} (excess kurtosis "
                f"{g2:.3f}; a normal has 0, a uniform -1.2): draw from rng.normal or rng.standard_normal."
            )
        return (
            f"init_embedding's entries do not look normal for {case.label}: their excess kurtosis is "
            f"{g2:.3f}, a normal distribution has 0 (within {Z * math.sqrt(24.0 / n):.3f} here)."
        )
    return None


# --------------------------------------------------------------------------------------------
# test_init_uses_rng: same seed -> same table, new seed -> new table (a check across cases)
# --------------------------------------------------------------------------------------------
class SeedCheck(Check):
    """A Check that also compares outcomes *across* cases (the framework judges one case at a
    time). Cases carry meta["group"] and meta["role"] in {"first", "same", "other"}: "same" must
    equal its group's "first" exactly, "other" (another seed) must differ from it."""

    def verdict(self, got, cases=None):
        cases = self.cases() if cases is None else cases
        result = super().verdict(got, cases)
        if not result.passed:
            return result
        firsts = {}
        messages = []
        for case, outcome in zip(cases, got, strict=True):
            group, role = case.meta["group"], case.meta["role"]
            if role == "first":
                firsts[group] = (case, outcome.value)
                continue
            first_case, first = firsts[group]
            same = first.shape == outcome.value.shape and np.array_equal(first, outcome.value)
            if role == "same" and not same:
                messages.append(
                    f"init_embedding gave different tables for two generators with the same seed "
                    f"({case.label}): draw every number from the rng argument (rng.normal, "
                    "rng.standard_normal), not from np.random or a new default_rng()."
                )
            if role == "other" and same:
                messages.append(
                    f"init_embedding gave the same table for {first_case.label} and {case.label}: it "
                    "ignores the rng argument (a fixed seed inside the function?). Draw from rng."
                )
        return CheckResult(self.grade_id, not messages, messages[:3], len(got))


def _rng_judge(case, got, want):
    return _table_problem(case, got, want)


def _rng_cases():
    cases = []
    for g, (V, d, scheme, seed) in enumerate(
        [(50, 8, "gpt2", 400), (30, 16, "transformer", 410), (20, 4, "pytorch", 420)]
    ):
        cases.append(init_case(V, d, scheme, seed, group=g, role="first"))
        cases.append(init_case(V, d, scheme, seed, group=g, role="same"))
        cases.append(init_case(V, d, scheme, seed + 1, group=g, role="other"))
    return cases


# --------------------------------------------------------------------------------------------
# expected_row_length: the exact chi mean
# --------------------------------------------------------------------------------------------
SMALL_D = [(1, 1.0), (2, 0.5), (3, 1.0), (4, 2.0), (10, 0.02), (64, 1.0), (100, 0.125), (5, 0.0)]
LARGE_D = [(342, 1.0), (343, 1.0), (768, 0.02), (1024, 0.5), (4096, 1.0), (4096, 0.02)]
LARGE_D += [(12288, 0.02), (20000, 1.0)]


def row_case(d, sigma):
    return named_case(f"d = {d}, sigma = {sigma}", d=d, sigma=sigma)


def _mistake(name, message, fn):
    def model(case, want):
        d, sigma = case.meta["d"], case.meta["sigma"]
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
        "approximation",
        "expected_row_length returned the approximation sqrt(d) * sigma; the exact mean of the chi "
        "distribution is a little smaller (sigma * sqrt(2) * Gamma((d+1)/2) / Gamma(d/2))",
        lambda d, s, w: math.sqrt(d) * s,
    ),
    _mistake(
        "squared",
        "expected_row_length returned the expected squared length d * sigma**2, not the expected length",
        lambda d, s, w: d * s * s,
    ),
    _mistake(
        "no sigma",
        "expected_row_length ignored sigma: the length scales with sigma (multiply the sigma = 1 value by sigma)",
        lambda d, s, w: None if s in (0.0, 1.0) else w / s,
    ),
    _mistake(
        "sigma squared",
        "expected_row_length scaled by sigma**2 instead of sigma: a length scales like the standard deviation",
        lambda d, s, w: None if s in (0.0, 1.0) else w * s,
    ),
    _mistake(
        "swapped gammas",
        "expected_row_length swapped the two Gamma functions: the numerator is Gamma((d + 1) / 2)",
        lambda d, s, w: None if w == 0 else 2 * s * s / w,
    ),
    _mistake(
        "no sqrt 2",
        "expected_row_length lost the factor sqrt(2) in sigma * sqrt(2) * Gamma((d+1)/2) / Gamma(d/2)",
        lambda d, s, w: w / math.sqrt(2),
    ),
]

_row_values = array_judge(
    "expected_row_length", check_dtype=False, mistakes=ROW_MISTAKES, row_word="value"
)
OVERFLOW_HINT = (
    "Gamma(d / 2) and Gamma((d + 1) / 2) are larger than the largest float once d >= 343 "
    "(math.gamma(172) overflows), but their ratio is moderate: subtract logarithms "
    "(math.lgamma) and exponentiate the difference."
)


def _row_judge(case, got, want):
    if got.error_type == "OverflowError":
        return f"expected_row_length raised OverflowError for {case.label}: {OVERFLOW_HINT}"
    if got.value is not None and not got.is_tuple and got.value.size == 1:
        v = float(np.asarray(got.value, dtype=np.float64).ravel()[0])
        if not math.isfinite(v) and want.value is not None and math.isfinite(float(want.value)):
            return f"expected_row_length returned {v} for {case.label}: {OVERFLOW_HINT}"
    if got.value is not None and got.value.shape != () and got.value.size == 1 and not got.is_tuple:
        return (
            f"expected_row_length returned an array of shape {got.value.shape} for {case.label}; "
            "return a single float (float(...))."
        )
    return _row_values(case, got, want)


@check("test_init_contract", "init_embedding", _contract_judge)
def init_contract():
    """init_embedding: shape (V, d), dtype float32, ValueError for an unknown scheme"""
    cases = [
        init_case(5, 3, "gpt2", 100),
        init_case(1, 1, "pytorch", 101),
        init_case(7, 1, "transformer", 102),
        init_case(0, 4, "pytorch", 103),
        init_case(3, 768, "transformer", 104),
        init_case(40, 16, "gpt2", 105),
    ]
    for scheme in ["xavier", "GPT-2", ""]:
        cases.append(
            Case(
                f"the unknown scheme {scheme!r}",
                (4, 4, scheme, np.random.default_rng(106)),
                meta={"arg_names": INIT_NAMES, "expect_error": True},
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


@check("test_init_scale", "init_embedding", _scale_judge)
def init_scale():
    """init_embedding: each scheme's standard deviation (1, 0.02, 1/sqrt(d))"""
    return [init_case(V, d, scheme, 200 + i) for i, (V, d, scheme) in enumerate(SCALE_SHAPES)]


@check("test_init_distribution", "init_embedding", _distribution_judge)
def init_distribution():
    """init_embedding: normal entries with mean 0"""
    shapes = [(2000, 64, "pytorch"), (1000, 128, "gpt2"), (500, 256, "transformer")]
    return [init_case(V, d, scheme, 300 + i) for i, (V, d, scheme) in enumerate(shapes)]


init_uses_rng = SeedCheck(
    A,
    "test_init_uses_rng",
    "init_embedding",
    _rng_cases,
    _rng_judge,
    "init_embedding: every number comes from the rng argument",
)


@check("test_row_length_small_d", "expected_row_length", _row_judge)
def row_length_small():
    """expected_row_length: the exact chi mean for small d"""
    return [row_case(d, s) for d, s in SMALL_D]


@check("test_row_length_large_d", "expected_row_length", _row_judge)
def row_length_large():
    """expected_row_length: the exact chi mean for real widths, without overflow"""
    return [row_case(d, s) for d, s in LARGE_D]
