"""Chapter 4: the reference solutions agree with PyTorch (F.embedding_bag and its autograd)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.checks import reference

REF = reference.load("04_bags")
TOL = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def _offsets(sizes):
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


@st.composite
def bags(draw):
    """A table, bags of 0 to 6 ids each (empty bags included), a dtype and an upstream gradient."""
    V = draw(st.integers(1, 30))
    d = draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    sizes = draw(st.lists(st.integers(0, 6), min_size=1, max_size=12))
    N = int(sum(sizes))
    ids = draw(hnp.arrays(np.int64, (N,), elements=st.integers(0, V - 1)))
    finite = st.floats(-1e3, 1e3, width=32)
    E = draw(hnp.arrays(dtype, (V, d), elements=finite))
    q = draw(hnp.arrays(dtype, (len(sizes), d), elements=finite))
    return E, ids, _offsets(sizes), q


def torch_bag(E, ids, offsets, mode):
    return F.embedding_bag(
        torch.from_numpy(ids), torch.from_numpy(E), torch.from_numpy(offsets), mode=mode
    )


def torch_grad(E, ids, offsets, q, mode):
    """E.grad after F.embedding_bag(...).backward(q): the outside oracle for the backward."""
    table = torch.from_numpy(E.copy()).requires_grad_(True)
    out = F.embedding_bag(torch.from_numpy(ids), table, torch.from_numpy(offsets), mode=mode)
    out.backward(torch.from_numpy(q))
    return table.grad.numpy()


def assert_close(got, want, dtype):
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    tol = TOL[dtype]
    np.testing.assert_allclose(got, want, rtol=tol["rtol"], atol=tol["atol"] * scale)


@settings(max_examples=200, deadline=None)
@given(bags())
def test_mean_equals_torch_embedding_bag(case):
    E, ids, offsets, _ = case
    before = (E.copy(), ids.copy(), offsets.copy())
    out = REF.embedding_bag_mean(E, ids, offsets)
    want = torch_bag(E, ids, offsets, "mean").numpy()
    assert out.shape == (len(offsets), E.shape[1]) and out.dtype == E.dtype
    assert np.all(np.isfinite(out))
    assert_close(out, want, E.dtype.type)
    for a, b in zip(before, (E, ids, offsets), strict=True):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=200, deadline=None)
@given(bags(), st.sampled_from(["mean", "sum"]))
def test_backward_equals_torch_autograd(case, mode):
    E, ids, offsets, q = case
    before = (ids.copy(), offsets.copy(), q.copy())
    G = REF.embedding_bag_backward(ids, offsets, q, E.shape[0], mode=mode)
    assert G.shape == E.shape and G.dtype == q.dtype
    assert_close(G, torch_grad(E, ids, offsets, q, mode), q.dtype.type)
    for a, b in zip(before, (ids, offsets, q), strict=True):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=100, deadline=None)
@given(bags(), st.randoms(use_true_random=False))
def test_mean_does_not_depend_on_the_order_inside_a_bag(case, rnd):
    E, ids, offsets, _ = case
    ends = np.append(offsets[1:], len(ids))
    shuffled = ids.copy()
    for s, e in zip(offsets, ends, strict=True):
        chunk = list(shuffled[s:e])
        rnd.shuffle(chunk)
        shuffled[s:e] = chunk
    assert_close(
        REF.embedding_bag_mean(E, shuffled, offsets),
        REF.embedding_bag_mean(E, ids, offsets),
        E.dtype.type,
    )


# torch's awkward cases, one by one, in both dtypes
AWKWARD = {
    "several empty bags in a row": ([3, 0, 0, 0, 2], 10),
    "empty bags first": ([0, 0, 4], 10),
    "an empty last bag (offset == N)": ([2, 3, 0], 10),
    "only empty bags (no ids, offsets [0, 0, 0])": ([0, 0, 0], 10),
    "an empty input with one bag (offsets [0])": ([0], 10),
    "a single bag": ([9], 10),
    "bags of one id each": ([1, 1, 1, 1], 10),
    "every id the same": ([4, 2, 3], 1),  # V = 1: every id is 0
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(AWKWARD))
def test_awkward_cases_match_torch(name, dtype):
    sizes, V = AWKWARD[name]
    rng = np.random.default_rng(len(name))
    ids = rng.integers(0, V, size=sum(sizes)).astype(np.int64)
    offsets = _offsets(sizes)
    E = rng.standard_normal((V, 3)).astype(dtype)
    q = rng.standard_normal((len(sizes), 3)).astype(dtype)
    out = REF.embedding_bag_mean(E, ids, offsets)
    assert out.dtype == dtype and np.all(np.isfinite(out))
    assert_close(out, torch_bag(E, ids, offsets, "mean").numpy(), dtype)
    for mode in ("mean", "sum"):
        G = REF.embedding_bag_backward(ids, offsets, q, V, mode=mode)
        assert G.dtype == dtype
        assert_close(G, torch_grad(E, ids, offsets, q, mode), dtype)


def test_worked_example_from_the_chapter():
    """ids [4, 1, 1, 7, 2], offsets [0, 3]: row 1 gets (2/3) q_0 and row 7 gets (1/2) q_1."""
    E = np.arange(16.0).reshape(8, 2)
    ids, offsets = np.array([4, 1, 1, 7, 2]), np.array([0, 3])
    np.testing.assert_allclose(REF.embedding_bag_mean(E, ids, offsets), [[4.0, 5.0], [9.0, 10.0]])
    q = np.array([[3.0, -3.0], [2.0, 4.0]])
    G = REF.embedding_bag_backward(ids, offsets, q, 8)
    np.testing.assert_allclose(G[1], 2 / 3 * q[0])
    np.testing.assert_allclose(G[4], 1 / 3 * q[0])
    np.testing.assert_allclose(G[7], 1 / 2 * q[1])
    np.testing.assert_allclose(G[2], 1 / 2 * q[1])
    assert np.all(G[[0, 3, 5, 6]] == 0)


@pytest.mark.parametrize(
    "offsets,why",
    [
        ([1, 3], "offsets[0] must be 0"),
        ([0, 3, 2], "never decrease"),
        ([0, 6], "<= len(ids)"),
        ([], "non-empty"),
    ],
)
def test_reference_rejects_invalid_offsets(offsets, why):
    ids, E, q = np.array([4, 1, 1, 7, 2]), np.ones((8, 2)), np.ones((max(len(offsets), 1), 2))
    offsets = np.array(offsets, dtype=np.int64)
    with pytest.raises(ValueError, match="offsets") as err:
        REF.embedding_bag_mean(E, ids, offsets)
    assert why in str(err.value)
    with pytest.raises(ValueError, match="offsets"):
        REF.embedding_bag_backward(ids, offsets, q, 8)


@pytest.mark.parametrize("mode", ["max", "avg", "", "MEAN"])
def test_backward_rejects_other_modes(mode):
    with pytest.raises(ValueError, match="mode"):
        REF.embedding_bag_backward(np.array([1]), np.array([0]), np.ones((1, 2)), 3, mode=mode)
