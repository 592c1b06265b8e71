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
"""

from __future__ import annotations

import numpy as np

from .framework import Case, Check, CheckResult, checks_for
from .judges import mistake_id, named_case
from .public.ch06 import (  # noqa: F401 - Z: the standard errors allowed (public)
    Z,
    contract_judge,
    distribution_judge,
    rng_judge,
    row_judge,
    scale_judge,
    seed_problem,
)

A = "06_init_scale"
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
# test_init_uses_rng: same seed -> same table, new seed -> new table (a check across cases)
# --------------------------------------------------------------------------------------------
class SeedCheck(Check):
    """A Check that also compares outcomes *across* cases (the framework judges one case at a
    time). Cases carry meta["group"] and meta["role"] in {"first", "same", "other"}: "same" must
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
        cases.append(init_case(V, d, scheme, seed, group=g, role="first"))
        cases.append(init_case(V, d, scheme, seed, group=g, role="same"))
        cases.append(init_case(V, d, scheme, seed + 1, group=g, role="other"))
    return cases


# --------------------------------------------------------------------------------------------
# expected_row_length: the exact chi mean
# --------------------------------------------------------------------------------------------
SMALL_D = [(1, 1.0), (2, 0.5), (3, 1.0), (4, 2.0), (10, 0.02), (64, 1.0), (100, 0.125), (5, 0.0)]
# 172 <= d < 343: Gamma((d + 1) / 2) no longer fits a float, Gamma(d / 2) still may; a series in
# 1/d used above d = 171 is off by up to 8e-9 there (the exercise asks for 1e-9).
LARGE_D = [(172, 1.0), (200, 0.5), (256, 1.0), (300, 2.0), (342, 1.0), (343, 1.0)]
LARGE_D += [(768, 0.02), (1024, 0.5), (4096, 1.0), (4096, 0.02)]
LARGE_D += [(12288, 0.02), (20000, 1.0)]


def row_case(d, sigma):
    return named_case(f"d = {d}, sigma = {sigma}", d=d, sigma=sigma)


@check("test_init_contract", "init_embedding", contract_judge)
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


@check("test_init_scale", "init_embedding", scale_judge)
def init_scale():
    """init_embedding: each scheme's standard deviation (1, 0.02, 1/sqrt(d))"""
    return [init_case(V, d, scheme, 200 + i) for i, (V, d, scheme) in enumerate(SCALE_SHAPES)]


@check("test_init_distribution", "init_embedding", distribution_judge)
def init_distribution():
    """init_embedding: normal entries with mean 0"""
    shapes = [(2000, 64, "pytorch"), (1000, 128, "gpt2"), (500, 256, "transformer")]
    return [init_case(V, d, scheme, 300 + i) for i, (V, d, scheme) in enumerate(shapes)]


init_uses_rng = SeedCheck(
    A,
    "test_init_uses_rng",
    "init_embedding",
    _rng_cases,
    rng_judge,
    "init_embedding: every number comes from the rng argument",
)


@check("test_row_length_small_d", "expected_row_length", row_judge)
def row_length_small():
    """expected_row_length: the exact chi mean for small d"""
    return [row_case(d, s) for d, s in SMALL_D]


@check("test_row_length_large_d", "expected_row_length", row_judge)
def row_length_large():
    """expected_row_length: the exact chi mean for real widths, without overflow"""
    return [row_case(d, s) for d, s in LARGE_D]
