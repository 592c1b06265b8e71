"""Chapter 5: the reference solutions agree with PyTorch autograd, the outside oracle."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.checks import reference

REF = reference.load("05_weight_tying")


def torch_tied(E, x, y):
    """F.cross_entropy(E[x] @ E.T, y) and its autograd gradient: the contract's definition."""
    Et = torch.tensor(E, requires_grad=True)
    loss = F.cross_entropy(
        Et[torch.from_numpy(x.astype(np.int64))] @ Et.T, torch.from_numpy(y.astype(np.int64))
    )
    loss.backward()
    return loss.item(), Et.grad.numpy()


def torch_untied(E_in, W_out, x, y):
    Et = torch.tensor(E_in, requires_grad=True)
    Wt = torch.tensor(W_out, requires_grad=True)
    loss = F.cross_entropy(
        Et[torch.from_numpy(x.astype(np.int64))] @ Wt.T, torch.from_numpy(y.astype(np.int64))
    )
    loss.backward()
    return loss.item(), Et.grad.numpy(), Wt.grad.numpy()


def assert_close(got, want, dtype):
    rtol = 1e-10 if dtype == np.float64 else 2e-5
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def assert_loss_close(got, want, dtype):
    rtol = 1e-10 if dtype == np.float64 else 2e-5
    assert abs(got - want) <= rtol * max(abs(want), 1.0), (got, want)


@st.composite
def bigram_batch(draw, scale_max=3.0):
    V = draw(st.integers(1, 30))
    d = draw(st.integers(1, 6))
    N = draw(st.integers(1, 40))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    E = draw(hnp.arrays(dtype, (V, d), elements=st.floats(-scale_max, scale_max, width=32)))
    x = draw(hnp.arrays(np.int64, (N,), elements=st.integers(0, V - 1)))
    y = draw(hnp.arrays(np.int64, (N,), elements=st.integers(0, V - 1)))
    return E, x, y


@settings(max_examples=150, deadline=None)
@given(bigram_batch())
def test_tied_equals_torch_autograd(case):
    E, x, y = case
    before = (E.copy(), x.copy(), y.copy())
    loss, dE = REF.tied_bigram_loss_grad(E, x, y)
    want_loss, want_dE = torch_tied(E, x, y)
    assert isinstance(loss, float)
    assert dE.shape == E.shape and dE.dtype == E.dtype
    assert_loss_close(loss, want_loss, E.dtype)
    assert_close(dE, want_dE, E.dtype)
    for a, b in zip((E, x, y), before, strict=True):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=100, deadline=None)
@given(bigram_batch(), st.integers(0, 2**31 - 1))
def test_untied_equals_torch_autograd_and_the_paths_add_up(case, seed):
    E, x, y = case
    W = np.random.default_rng(seed).standard_normal(E.shape).astype(E.dtype)
    loss, dE_in, dW_out = REF.untied_bigram_loss_grad(E, W, x, y)
    want = torch_untied(E, W, x, y)
    assert_loss_close(loss, want[0], E.dtype)
    assert_close(dE_in, want[1], E.dtype)
    assert_close(dW_out, want[2], E.dtype)
    # Rows never looked up get no input-path gradient: the input path is sparse.
    unused = np.setdiff1d(np.arange(E.shape[0]), x)
    assert np.all(dE_in[unused] == 0)
    # Tying: the tied gradient is the sum of the two paths at W_out = E_in = E.
    _, p_in, p_out = REF.untied_bigram_loss_grad(E, E, x, y)
    assert_close(REF.tied_bigram_loss_grad(E, x, y)[1], p_in.astype(np.float64) + p_out, E.dtype)


@settings(max_examples=60, deadline=None)
@given(bigram_batch(scale_max=1.0), st.floats(20.0, 200.0))
def test_large_logits_match_torch_in_float64(case, scale):
    """Logits up to ~10^5: a naive softmax overflows, the reference and torch do not."""
    E, x, y = case
    E = E.astype(np.float64) * scale
    loss, dE = REF.tied_bigram_loss_grad(E, x, y)
    want_loss, want_dE = torch_tied(E, x, y)
    assert np.isfinite(loss) and np.all(np.isfinite(dE))
    assert_loss_close(loss, want_loss, np.float64)
    assert_close(dE, want_dE, np.float64)


@pytest.mark.parametrize("max_logit", [800.0, 5e3, 1e5])
def test_logits_beyond_a_naive_softmax(max_logit):
    rng = np.random.default_rng(1)
    E = rng.standard_normal((25, 8))
    x, y = rng.permutation(25)[:12], rng.integers(0, 25, 12)
    E *= np.sqrt(max_logit / np.max(np.sum(E[x] ** 2, axis=1)))
    with np.errstate(over="ignore", invalid="ignore"):
        Z = E[x] @ E.T
        naive = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    assert not np.all(np.isfinite(naive))  # the case really does defeat a naive softmax
    loss, dE = REF.tied_bigram_loss_grad(E, x, y)
    want_loss, want_dE = torch_tied(E, x, y)
    assert_loss_close(loss, want_loss, np.float64)
    assert_close(dE, want_dE, np.float64)


def test_float32_large_logits_match_torch():
    rng = np.random.default_rng(2)
    E = (6.0 * rng.standard_normal((30, 6))).astype(np.float32)  # logits in the hundreds
    x, y = rng.integers(0, 30, 50), rng.integers(0, 30, 50)
    loss, dE = REF.tied_bigram_loss_grad(E, x, y)
    want_loss, want_dE = torch_tied(E, x, y)
    assert dE.dtype == np.float32
    assert_loss_close(loss, want_loss, np.float32)
    assert_close(dE, want_dE, np.float32)


def test_nn_module_tying_is_one_assignment_and_autograd_adds_the_paths():
    V, d = 11, 4
    emb = torch.nn.Embedding(V, d).double()
    out = torch.nn.Linear(d, V, bias=False).double()
    out.weight = emb.weight  # tying
    assert out.weight is emb.weight
    params = {id(p) for m in (emb, out) for p in m.parameters()}
    assert len(params) == 1
    rng = np.random.default_rng(3)
    x, y = rng.integers(0, V, 30), rng.integers(0, V, 30)
    loss = F.cross_entropy(out(emb(torch.from_numpy(x))), torch.from_numpy(y))
    loss.backward()
    E = emb.weight.detach().numpy().copy()
    ref_loss, ref_dE = REF.tied_bigram_loss_grad(E, x, y)
    assert_loss_close(ref_loss, loss.item(), np.float64)
    assert_close(ref_dE, emb.weight.grad.numpy(), np.float64)
    # The tied gradient is dense: every row gets some gradient from the output path.
    assert np.all(np.linalg.norm(ref_dE, axis=1) > 0)


def test_worked_examples_from_the_exercise():
    E = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]])
    loss, dE = REF.tied_bigram_loss_grad(40.0 * E, np.array([0, 2]), np.array([1, 0]))
    assert abs(loss - (1600 + np.log(2) / 2)) < 1e-9
    np.testing.assert_allclose(dE, [[10.0, -10.0], [-20.0, 0.0], [30.0, -40.0]], atol=1e-9)
    loss, dE = REF.tied_bigram_loss_grad(
        E[:1], np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64)
    )
    assert loss == 0.0 and np.all(dE == 0)  # V = 1: the only token is always right
