"""Chapter 7: choosing d and what a table costs. Hidden checks for its exercise (the judges are
public: public/ch07.py, shared with the visible tests).

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

from .framework import Case, checks_for
from .judges import named_case
from .public.ch07 import (
    bytes_judge,
    contract_judge,
    factorized_judge,
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
