"""Chapter 7: choosing d and what a table costs. Hidden checks for its exercise.

``table_cost`` returns exact integers, so its checks compare exactly; each cell grades one
property and leaves the others to their own cells:

* test_cost_tied:        params (first element) of unfactorized tables, tied and untied;
* test_cost_bytes:       bytes == 16 * params, with the student's own params;
* test_cost_factorized:  params of factorized tables;
* test_cost_python_ints: a tuple of two Python ints, with no int32 overflow (values exact).

``suggest_dim`` rounds, so its hidden V values are chosen so that the rounded quantity is never
within 1e-3 of a half (tests/test_ch07_reference.py checks this for every case): every reasonable
implementation (``V ** 0.25``, ``math.sqrt(math.sqrt(V))``, ``np.power``, ``round``,
``int(x + 0.5)``, ``np.round``) then gives the same answer.
"""

from __future__ import annotations

from .compare import expected, shown
from .framework import Case, checks_for, common_problems, named_case

A = "07_choosing_d"
check = checks_for(A)
COST_NAMES = ["V", "d", "tied", "factor_m"]
INT32_MAX = 2**31 - 1


def cost_case(V, d, tied, m=None, name=None):
    args = (V, d, tied) if m is None else (V, d, tied, m)
    call = f"table_cost({V}, {d}, {tied}" + (")" if m is None else f", {m})")
    label = f"{call}" + (f" ({name})" if name else "")
    return Case(label, args, meta={"arg_names": COST_NAMES, "V": V, "d": d, "tied": tied, "m": m})


def _wrap32(x: int) -> int:
    """What an int32 computation of x leaves (two's-complement wrap-around)."""
    return (x + 2**31) % 2**32 - 2**31


def _pair(case, got, want):
    """(problem, got_params, got_bytes, want_params, want_bytes) with Python ints (or floats)."""
    problem = common_problems(case, got, want, "table_cost")
    if problem:
        return problem, None, None, None, None
    if not got.is_tuple or len(got.values) != 2 or any(v.shape != () for v in got.values):
        what = ", ".join(got.types) or "nothing"
        return (
            f"table_cost should return a tuple of two numbers (params, bytes) for {case.label}; got {what}.",
            None,
            None,
            None,
            None,
        )
    g = [v.item() for v in got.values]  # Python int (or float) from a 0-d array
    w = [int(v.item()) for v in want.values]
    return None, g[0], g[1], w[0], w[1]


def _overflow_message(case):
    return (
        f"table_cost's numbers overflowed for {case.label}: they wrapped around like 32-bit integers "
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
def _tied_judge(case, gp, wp):
    if case.meta["tied"] and gp == 2 * wp:
        return (
            f"table_cost counted the tied table twice for {case.label}: with tied=True the input "
            f"table and the output layer are the same {case.meta['V']} x {case.meta['d']} matrix, "
            f"stored once (half of the {gp:,} parameters counted)."
        )
    if not case.meta["tied"] and 2 * gp == wp:
        return (
            f"table_cost counted one table for {case.label}: with tied=False the input table and the "
            f"output layer are two separate V x d matrices (twice {gp:,} parameters)."
        )
    return f"table_cost returned {gp:,} parameters for {case.label}{expected(case, f'{wp:,}')}, which is not the count."


# --------------------------------------------------------------------------------------------
# test_cost_bytes
# --------------------------------------------------------------------------------------------
def _bytes_judge(case, got, want):
    problem, gp, gb, wp, wb = _pair(case, got, want)
    if problem:
        return problem
    if gb == 16 * gp:
        return None
    if gp == int(gp) and gb == int(gb) and int(gb) == _wrap32(16 * int(gp)):
        return _overflow_message(case)
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
            return f"table_cost counted {what} (for {case.label})."
    if gp and gb == 16 * gp // 8:
        return f"table_cost counted bits where bytes were wanted, or divided by 8 once too often (for {case.label})."
    return f"table_cost returned {gb:,} bytes for {gp:,} parameters for {case.label}; expected 16 bytes per parameter (16 * params)."


# --------------------------------------------------------------------------------------------
# test_cost_factorized
# --------------------------------------------------------------------------------------------
@_on_params
def _factor_judge(case, gp, wp):
    V, d, m, tied = case.meta["V"], case.meta["d"], case.meta["m"], case.meta["tied"]
    n = 1 if tied else 2
    if gp == n * V * m:
        return (
            f"table_cost forgot the m x d projection for {case.label}: a factorized table is a "
            f"V x m table ({V * m:,}) plus an m x d projection ({m * d:,}) that maps its rows up to width d."
        )
    if gp == n * V * d:
        return f"table_cost ignored factor_m for {case.label}: with factor_m = {m} each table is V*m + m*d, not V*d."
    if tied and gp == 2 * wp:
        return (
            f"table_cost counted the tied table twice for {case.label}: tied=True stores one "
            f"factorized table (half of {gp:,} parameters), not two."
        )
    if not tied and gp == 2 * V * m + m * d:
        return (
            f"table_cost gave the two untied tables one shared projection for {case.label}: each stored "
            f"table is a V x m table plus its own m x d projection."
        )
    if gp == n * (V * m + V * d):
        return f"table_cost used V x d for the projection for {case.label}; the projection is m x d ({m} x {d})."
    return (
        f"table_cost returned {gp:,} parameters for {case.label}; a factorized table is "
        f"n_tables x (V x m + m x d){expected(case, f'{wp:,}', ' = ')}."
    )


# --------------------------------------------------------------------------------------------
# test_cost_python_ints
# --------------------------------------------------------------------------------------------
def _ints_judge(case, got, want):
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
            return (
                f"table_cost returned {', '.join(got.types)} for {case.label}: parameter and byte counts "
                "are integers. Use integer arithmetic (* and //, not /) or int(...)."
            )
        return (
            f"table_cost returned {', '.join(got.types)} for {case.label}; the contract asks for Python "
            "ints (numpy integers have fixed sizes and can overflow): wrap them in int(...)."
        )
    return None


# --------------------------------------------------------------------------------------------
# suggest_dim
# --------------------------------------------------------------------------------------------
TF_VS = [1, 2, 10, 50, 100, 600, 1000, 10000, 30522, 50257, 128256, 3000000]
FASTAI_VS = [1000, 10000, 2000, 100, 50, 30522, 39000, 40000, 128256, 3000000, 600, 1, 2, 5, 10]


def dim_case(V, rule):
    return named_case(f"suggest_dim({V}, {rule!r})", V=V, rule=rule)


def _dim_value(case, got, want):
    problem = common_problems(case, got, want, "suggest_dim")
    if problem or want.error_type is not None:
        return problem, None, None
    if got.is_tuple or got.value is None or got.value.shape != ():
        return (
            f"suggest_dim should return one number for {case.label}; got {', '.join(got.types)}.",
            None,
            None,
        )
    return None, got.value.item(), int(want.value.item())


def _rule_judge(case, got, want):
    problem, g, w = _dim_value(case, got, want)
    if problem:
        return problem
    if g == w:
        return None
    V, rule = case.meta["V"], case.meta["rule"]
    raw = V**0.25 if rule == "tf" else 1.6 * V**0.56
    formula = "V ** 0.25" if rule == "tf" else "1.6 * V ** 0.56"
    capped = (lambda x: min(600, x)) if rule == "fastai" else (lambda x: x)
    if rule == "fastai" and g == round(raw) and w == 600:
        return (
            f"suggest_dim forgot fastai's cap for {case.label}: the rule is min(600, ...), and "
            "1.6 * V ** 0.56 is above 600 here."
        )
    if rule == "fastai" and g == 600 and w < 600:
        return f"suggest_dim returned 600 for {case.label}: the rule is min(600, ...), not max."
    if rule == "fastai" and g == capped(round((1.6 * V) ** 0.56)) and g != capped(int(raw)):
        return (
            f"suggest_dim raised 1.6 * V to the power 0.56 for {case.label}; the rule is 1.6 * (V ** 0.56): "
            "** binds tighter than *, so 1.6 * V ** 0.56 is already right."
        )
    if g == capped(int(raw)):
        return (
            f"suggest_dim truncated instead of rounding for {case.label}: int() drops the fraction "
            f"of {formula} (use round())."
        )
    if g == capped(-(-raw // 1)):
        return f"suggest_dim rounded up for {case.label}: {formula} must be rounded to the nearest integer (use round(), not ceil)."
    return f"suggest_dim returned {g} for {case.label}, which is not {formula} rounded{expected(case, str(w), ' (')}{')' if shown(case) else ''}."


def _contract_judge(case, got, want):
    if want.error_type is not None and got.error_type is None:
        return f"suggest_dim should raise ValueError for {case.label}: only 'tf' and 'fastai' are rules."
    problem, g, w = _dim_value(case, got, want)
    if problem or want.error_type is not None:
        return problem
    t = got.types[0]
    if t != "int" and not t.startswith("numpy.int"):
        return (
            f"suggest_dim returned a {t} ({g!r}) for {case.label}; a width is an int: round(x) returns "
            "one, np.round(x) returns a float (wrap it in int(...))."
        )
    return None


def _llama(tied):
    name = "Llama 3's vocabulary and width, tied" if tied else "Llama-3-8B, untied"
    return cost_case(128256, 4096, tied, name=name)


def _bert(tied):
    return cost_case(30522, 768, tied, name="BERT-base" if tied else "BERT-base, untied")


def _albert():
    return cost_case(30000, 4096, True, 128, name="ALBERT-style")


@check("test_cost_tied", "table_cost", _tied_judge)
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


@check("test_cost_bytes", "table_cost", _bytes_judge)
def cost_bytes():
    """table_cost: 16 bytes per parameter (weight, gradient, two Adam moments)"""
    return [
        *[_llama(True), _bert(False), _albert(), cost_case(10, 3, True)],
    ]


@check("test_cost_factorized", "table_cost", _factor_judge)
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


@check("test_cost_python_ints", "table_cost", _ints_judge)
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
    "test_suggest_tf", "suggest_dim", _rule_judge, "suggest_dim: the 'tf' rule, round(V ** 0.25)"
)(lambda: [dim_case(V, "tf") for V in TF_VS])
suggest_fastai = check(
    "test_suggest_fastai",
    "suggest_dim",
    _rule_judge,
    "suggest_dim: the 'fastai' rule, min(600, round(1.6 * V ** 0.56))",
)(lambda: [dim_case(V, "fastai") for V in FASTAI_VS])


@check("test_suggest_contract", "suggest_dim", _contract_judge)
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
