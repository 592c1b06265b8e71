"""Chapter 7's claims about the predicted one-hot/gather ratio hold whatever the calibration: the
page asserts them on its own run, so over a grid of bandwidths, product rates and call overheads
they must hold, or some machine's speed could fail the website's build."""

import itertools

import numpy as np
import pytest

from coursekit.bench_ch07 import CH07_SIZES, ch07_methods
from coursekit.ratio_ch07 import FAST, SLOW, check_claims, d_star, regimes
from coursekit.timing import predict

MODELS = sorted(CH07_SIZES["models"], key=lambda m: m[1] * m[2])
SHAPES = {V * d: (V, d) for _, V, d in MODELS}
METHODS = ch07_methods(CH07_SIZES["n_tokens"], SHAPES)
COSTS = {m.label: [m.cost(x) for x in SHAPES] for m in METHODS}
GRID = list(
    itertools.product(
        np.geomspace(1e9, 100e9, 7),  # bandwidth, bytes/s
        np.geomspace(10e9, 2000e9, 7),  # the product's rate, flop/s
        np.geomspace(0.5e-6, 50e-6, 4),  # call overhead, s
    )
)


def model_result(bandwidth, rate, overhead):
    """What timing() returns for the model's side, at one calibration (no timing)."""
    cal = dict(bandwidth=bandwidth, overhead=overhead, rates={"r": rate}, rate_of={SLOW: "r"})
    predicted = {
        label: [predict(c._replace(shape=cal["rate_of"].get(label, ())), cal) for c in costs]
        for label, costs in COSTS.items()
    }
    return dict(xs=list(SHAPES), costs=COSTS, predicted=predicted, calibration=cal)


@pytest.mark.parametrize("bandwidth, rate, overhead", GRID)
def test_the_pages_ratio_claims_hold_at_every_plausible_calibration(bandwidth, rate, overhead):
    check_claims(model_result(bandwidth, rate, overhead))


def test_the_old_claim_that_the_ratio_rises_with_V_fails_where_the_reviewer_saw_it():
    """At 15 GB/s and 300 GFLOP/s the TF rule's d = 10 is memory-bound: its ratio beats the
    wider table's with the same V, so "the ratio follows V alone" is false there."""
    rows = regimes(model_result(15e9, 300e9, 5e-6))
    tf, fastai = rows[0], rows[1]
    assert (tf["V"], tf["d"], fastai["d"]) == (10_000, 10, 278)
    assert not tf["compute_bound"] and fastai["compute_bound"]
    assert tf["ratio"] > 1.3 * fastai["ratio"]
    assert d_star(model_result(15e9, 300e9, 5e-6)) == pytest.approx(40)


def test_the_checks_can_fail():
    """A ratio that does not follow V at the clean points is caught."""
    result = model_result(15e9, 300e9, 1e-7)
    result["predicted"][FAST][-1] *= 3  # word2vec's gather three times slower: ratio / 3
    with pytest.raises(AssertionError):
        check_claims(result)
