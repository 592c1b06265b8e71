"""Chapter 6: the reference initialiser and row length agree with PyTorch and with the maths,
and the statistical checks are calibrated (a correct answer essentially never fails them)."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.checks import ch06, reference
from autograder.checks.judges import outcome_of

REF = reference.load("06_init_scale")
SCHEMES = ["pytorch", "gpt2", "transformer"]


def _std_z(sample: np.ndarray, sigma: float) -> float:
    """The sample std's distance from sigma in standard errors (sigma / sqrt(2N))."""
    return (sample.std() - sigma) / (sigma / math.sqrt(2 * sample.size))


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("d", [16, 768])
def test_reference_scale_matches_torch_initialisers(scheme, d):
    """The reference draws with the std of the real initialiser: nn.Embedding's default for
    "pytorch", nn.init.normal_ with GPT-2's 0.02 and with d**-0.5 for the others."""
    V = 131_072 // d
    sigma = ch06.SIGMA[scheme](d)
    ours = REF.init_embedding(V, d, scheme, np.random.default_rng(0)).astype(np.float64)
    torch.manual_seed(0)
    if scheme == "pytorch":
        theirs = torch.nn.Embedding(V, d).weight.detach().double().numpy()
    else:
        theirs = torch.nn.init.normal_(torch.empty(V, d), std=sigma).double().numpy()
    assert abs(_std_z(ours, sigma)) < 6 and abs(_std_z(theirs, sigma)) < 6
    assert abs(ours.mean()) < 6 * sigma / math.sqrt(ours.size)
    # Two samples of the same distribution: their stds differ by at most 6 * sqrt(2) std errors.
    assert abs(ours.std() - theirs.std()) < 6 * math.sqrt(2) * sigma / math.sqrt(2 * ours.size)


@settings(max_examples=60, deadline=None)
@given(
    V=st.integers(0, 40),
    d=st.integers(1, 40),
    scheme=st.sampled_from(SCHEMES),
    seed=st.integers(0, 2**32 - 1),
)
def test_reference_contract(V, d, scheme, seed):
    E = REF.init_embedding(V, d, scheme, np.random.default_rng(seed))
    assert E.shape == (V, d) and E.dtype == np.float32
    np.testing.assert_array_equal(E, REF.init_embedding(V, d, scheme, np.random.default_rng(seed)))


def test_unknown_scheme_raises():
    with pytest.raises(ValueError):
        REF.init_embedding(3, 3, "xavier", np.random.default_rng(0))


def test_statistical_checks_are_calibrated_and_never_fail_the_reference():
    """Run the scale and distribution judges on the reference with 200 other seeds each: none may
    fail, and the std's z-scores must look standard normal (the derivation in checks/ch06.py)."""
    zs = []
    check = ch06.init_table
    for case in check.cases():
        part = case.meta["part"]
        if part not in ("scale", "distribution"):
            continue
        V, d, scheme, _ = case.args
        for seed in range(200):
            moved = ch06.init_case(V, d, scheme, 10_000 + seed, part=part)
            got = outcome_of(REF.init_embedding, moved)
            assert check.judge(moved, got, got) is None, (part, moved.label)
            if part == "scale":
                zs.append(_std_z(got.value.astype(np.float64), case.meta["sigma"]))
    zs = np.array(zs)
    assert abs(zs.mean()) < 0.15 and 0.85 < zs.std() < 1.15, (zs.mean(), zs.std())
    assert np.abs(zs).max() < 5  # 1,600 draws: a |z| of 5 would have probability ~1e-3


@pytest.mark.parametrize("d", [1, 2, 3, 7, 64, 300])
def test_row_length_matches_gamma_and_torch_lgamma(d):
    sigma = 0.7
    want_gamma = sigma * math.sqrt(2) * math.gamma((d + 1) / 2) / math.gamma(d / 2)
    want_torch = (
        sigma
        * math.sqrt(2)
        * torch.exp(
            torch.lgamma(torch.tensor((d + 1) / 2, dtype=torch.float64))
            - torch.lgamma(torch.tensor(d / 2, dtype=torch.float64))
        ).item()
    )
    assert math.isclose(REF.expected_row_length(d, sigma), want_gamma, rel_tol=1e-12)
    assert math.isclose(REF.expected_row_length(d, sigma), want_torch, rel_tol=1e-12)


@pytest.mark.parametrize("d", [1, 4, 64, 768])
def test_row_length_matches_monte_carlo_with_torch(d):
    """The mean length of many rows of torch.randn agrees within 6 standard errors."""
    g = torch.Generator().manual_seed(d)
    n = max(2_000, 2_000_000 // d)
    lengths = torch.linalg.vector_norm(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    se = lengths.std().item() / math.sqrt(n)
    assert abs(lengths.mean().item() - REF.expected_row_length(d, 1.0)) < 6 * se


@settings(max_examples=200, deadline=None)
@given(d=st.integers(1, 30_000), sigma=st.floats(0.001, 100.0))
def test_row_length_laws(d, sigma):
    m, m_next = REF.expected_row_length(d, sigma), REF.expected_row_length(d + 1, sigma)
    assert math.isclose(m * m_next, d * sigma**2, rel_tol=1e-9)  # Gamma(x + 1) = x Gamma(x)
    assert m < math.sqrt(d) * sigma  # Jensen: E||h|| < sqrt(E||h||^2)
    if d >= 10:  # the asymptotic series 1 - 1/(4d) + 1/(32 d^2)
        assert math.isclose(
            m / (math.sqrt(d) * sigma), 1 - 1 / (4 * d) + 1 / (32 * d * d), rel_tol=1e-4
        )


def test_numbers_from_the_chapter():
    assert round(math.sqrt(4096) * 1.0) == 64 and round(REF.expected_row_length(4096, 1.0)) == 64
    assert round(REF.expected_row_length(4096, 0.02), 1) == 1.3
    assert round(REF.expected_row_length(768, 0.02), 2) == 0.55
    with pytest.raises(OverflowError):  # why Part B needs logarithms
        math.gamma((343 + 1) / 2)
    math.gamma((342 + 1) / 2)


# --------------------------------------------------------------------------------------------
# initial_loss and scale_for_initial_loss: PyTorch's cross-entropy, and the band's definition
# --------------------------------------------------------------------------------------------
@st.composite
def bigram_models(draw, max_scale=1e3):
    V, d = draw(st.integers(1, 30)), draw(st.integers(1, 8))
    shape = draw(st.sampled_from([(1,), (7,), (3, 4), (2, 3, 2)]))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([0.0, 0.01, 1.0, 30.0, max_scale]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    rng = np.random.default_rng(seed)
    E = (scale * rng.standard_normal((V, d))).astype(dtype)
    W = rng.standard_normal((V, d)).astype(dtype)
    return E, W, rng.integers(0, V, size=shape), rng.integers(0, V, size=shape)


@settings(max_examples=120, deadline=None)
@given(bigram_models())
def test_initial_loss_is_torch_cross_entropy(model):
    """The mean cross-entropy in nats over every position, F.cross_entropy's default, stable for
    logits in the thousands; exactly log V for a zero table."""
    E, W, ids, targets = model
    before = [a.copy() for a in model]
    logits = (
        torch.from_numpy(E.astype(np.float64))[torch.from_numpy(ids.ravel())]
        @ torch.from_numpy(W.astype(np.float64)).T
    )
    want = torch.nn.functional.cross_entropy(logits, torch.from_numpy(targets.ravel())).item()
    got = REF.initial_loss(E, W, ids, targets)
    assert type(got) is float and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)
    if not E.any():
        assert got == pytest.approx(math.log(W.shape[0]), abs=1e-12)
    assert all(np.array_equal(a, b) for a, b in zip(before, model, strict=True))


def _gap(E, W, ids, targets):
    return lambda s: REF.initial_loss(s * E, W, ids, targets) - math.log(W.shape[0])


@settings(max_examples=25, deadline=None)
@given(
    V=st.integers(2, 30),
    d=st.integers(1, 8),
    N=st.integers(4, 64),
    seed=st.integers(0, 10_000),
    favoured=st.sampled_from([0.0, 0.5, 0.8]),
    tol=st.sampled_from([0.01, 0.1, 0.5]),
)
def test_scale_is_where_the_loss_first_leaves_the_band(V, d, N, seed, favoured, tol):
    """|L(s) - log V| reaches tol at the returned scale and stays below it on a fine grid of
    smaller scales; the loss is convex in s (the exercise's argument for a single crossing)."""
    model = REF.random_model(V, d, N, seed, favoured)
    gap = _gap(*model)
    s = REF.scale_for_initial_loss(*model, tol)
    assert abs(abs(gap(s)) - tol) < 1e-5
    grid = np.linspace(0.0, s * (1 - 1e-3), 400)
    assert max(abs(gap(x)) for x in grid) < tol
    curve = np.array([gap(x) for x in np.linspace(0.0, 2 * s, 41)])
    assert (np.diff(curve, 2) > -1e-9).all()


def test_graded_scale_cases_are_well_posed():
    """Every graded model: the first exit is unique to the judge's precision, the 'wrong' answers
    the judges name differ from the right one by more than it, and the band cell's models (and
    the visible tol = 0.01 case) leave the band downwards."""
    for check in (ch06.scale_values, ch06.scale_band, ch06.scale_tolerance):
        for case in check.cases():
            E, W, ids, targets, tol = case.args
            s = REF.scale_for_initial_loss(E, W, ids, targets, tol)
            gap = _gap(E, W, ids, targets)
            assert abs(abs(gap(s)) - tol) < 1e-5, case.label
            wrong = dict(case.meta["wrong"])
            # the reference search over k x the loss: what a wrong initial_loss makes it return
            own = {f"own_loss k={k:.4g}": alt for k, alt in wrong.pop("own_loss", [])}
            band = wrong.pop("below_band", None)  # where the loss is below log V - tol
            if band is not None:
                assert band[0] < band[1] and gap(band[1]) < 0, case.label
                assert abs(gap(band[0]) + tol) < 1e-5 and abs(gap(band[1]) + tol) < 1e-5
                wrong |= {"below_band[0]": band[0], "below_band[1]": band[1]}
            for name, alt in {**wrong, **own}.items():  # the same answer here, or far from it
                assert abs(alt / s - 1) < 1e-6 or abs(alt / s - 1) > 0.01, (case.label, name)
            if check is ch06.scale_band or "tol = 0.01" in case.label:
                assert gap(s) < 0, case.label  # it leaves downwards
