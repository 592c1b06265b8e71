"""Chapter 2: the reference backward passes agree with PyTorch autograd, the outside oracle."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.checks import reference
from autograder.checks.compare import tolerance

REF = reference.load("02_sparse_backward")


def torch_grad(ids, grad_out, V, padding_idx=None):
    """dL/dE by autograd through F.embedding, in grad_out's dtype."""
    W = torch.zeros(
        V, grad_out.shape[-1], dtype=torch.from_numpy(grad_out).dtype, requires_grad=True
    )
    out = F.embedding(torch.from_numpy(np.asarray(ids, dtype=np.int64)), W, padding_idx=padding_idx)
    out.backward(torch.from_numpy(grad_out))
    return W.grad.numpy()


def torch_sparse_grad(ids, grad_out, V):
    """(rows, values) of nn.Embedding(sparse=True)'s gradient after coalesce()."""
    layer = torch.nn.Embedding(
        V, grad_out.shape[-1], sparse=True, dtype=torch.from_numpy(grad_out).dtype
    )
    layer(torch.from_numpy(np.asarray(ids, dtype=np.int64))).backward(torch.from_numpy(grad_out))
    grad = layer.weight.grad.coalesce()
    return grad.indices()[0].numpy(), grad.values().numpy()


def assert_close(got, want, dtype):
    rtol, atol = tolerance(dtype)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale)


@st.composite
def backward_case(draw):
    V = draw(st.integers(1, 30))
    d = draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6))
    ids = draw(hnp.arrays(np.int64, shape, elements=st.integers(0, V - 1)))
    grad_out = draw(hnp.arrays(dtype, shape + (d,), elements=st.floats(-1e3, 1e3, width=32)))
    padding_idx = draw(st.one_of(st.none(), st.integers(-V, V - 1)))
    return ids, grad_out, V, padding_idx


@settings(max_examples=200, deadline=None)
@given(backward_case())
def test_backward_equals_torch_autograd(case):
    ids, grad_out, V, padding_idx = case
    ids_before, g_before = ids.copy(), grad_out.copy()
    got = REF.embedding_backward(ids, grad_out, V, padding_idx=padding_idx)
    assert got.shape == (V, grad_out.shape[-1])
    assert got.dtype == grad_out.dtype
    assert_close(got, torch_grad(ids, grad_out, V, padding_idx), grad_out.dtype)
    np.testing.assert_array_equal(ids, ids_before)
    np.testing.assert_array_equal(grad_out, g_before)


@settings(max_examples=100, deadline=None)
@given(backward_case())
def test_backward_is_one_hot_transpose_times_upstream(case):
    """The law of the chapter: dL/dE = S^T G (padding aside)."""
    ids, grad_out, V, _ = case
    d = grad_out.shape[-1]
    S = (ids.reshape(-1, 1) == np.arange(V)).astype(np.float64)
    want = S.T @ grad_out.reshape(-1, d).astype(np.float64)
    assert_close(REF.embedding_backward(ids, grad_out, V), want, grad_out.dtype)


@settings(max_examples=100, deadline=None)
@given(backward_case())
def test_rows_form_equals_torch_sparse_gradient(case):
    ids, grad_out, V, _ = case
    rows, values = REF.embedding_backward_rows(ids, grad_out)
    want_rows, want_values = torch_sparse_grad(ids, grad_out, V)
    np.testing.assert_array_equal(rows, want_rows)
    assert values.dtype == grad_out.dtype and values.shape == (rows.size, grad_out.shape[-1])
    assert_close(values, want_values, grad_out.dtype)
    dense = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    dense[rows] = values
    assert_close(dense, REF.embedding_backward(ids, grad_out, V), grad_out.dtype)


EDGE_IDS = {
    "empty": np.array([], dtype=np.int64),
    "empty-2d": np.zeros((3, 0), dtype=np.int64),
    "0-d": np.array(4),
    "all-same": np.full(500, 2),
    "all-same-2d": np.full((16, 32), 5),
    "int32": np.array([[1, 5], [5, 0]], dtype=np.int32),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("padding_idx", [None, 0, 2, -1, -6])
@pytest.mark.parametrize("name", list(EDGE_IDS))
def test_edge_cases_match_torch(name, padding_idx, dtype):
    ids, V = EDGE_IDS[name], 6
    grad_out = np.random.default_rng(0).standard_normal(ids.shape + (3,)).astype(dtype)
    got = REF.embedding_backward(ids, grad_out, V, padding_idx=padding_idx)
    assert got.dtype == dtype
    assert_close(got, torch_grad(ids, grad_out, V, padding_idx), dtype)
    if padding_idx is not None:
        assert not np.any(got[padding_idx]), "the padding row must be exactly zero"


def test_float32_heavy_repetition_stays_within_the_dtype_tolerance():
    """Float32 sums of 4,096 rows in another order than torch's differ only in the last digits."""
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 3, size=4096)
    grad_out = rng.standard_normal((4096, 8)).astype(np.float32)
    got = REF.embedding_backward(ids, grad_out, 3)
    exact = REF.embedding_backward(ids, grad_out.astype(np.float64), 3)
    assert_close(got, torch_grad(ids, grad_out, 3), np.float32)
    assert_close(got, exact, np.float32)


def test_worked_examples_from_the_chapter():
    g = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [2.0, 1.0, 0.0]])
    np.testing.assert_array_equal(
        REF.embedding_backward(np.array([2, 0, 2]), g, 4),
        [[0.5, 0.5, 0.5], [0, 0, 0], [3.0, 1.0, -1.0], [0, 0, 0]],
    )
    # the loss is the sum of the looked-up vectors: every upstream row is ones
    np.testing.assert_array_equal(
        REF.embedding_backward(np.array([2, 0, 2]), np.ones((3, 2)), 4),
        [[1, 1], [0, 0], [2, 2], [0, 0]],
    )
    rows, values = REF.embedding_backward_rows(np.array([2, 0, 2]), g)
    np.testing.assert_array_equal(rows, [0, 2])
    np.testing.assert_array_equal(values, [[0.5, 0.5, 0.5], [3.0, 1.0, -1.0]])
