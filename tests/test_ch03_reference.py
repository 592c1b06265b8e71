"""Chapter 3: the reference sparse SGD step agrees with PyTorch (autograd + torch.optim.SGD)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.checks import reference
from autograder.checks.framework import tolerance

REF = reference.load("03_fancy_indexing_trap")


def torch_sgd_step(E, ids, grad_out, lr, sparse):
    """The table after one torch.optim.SGD step whose upstream gradient is grad_out."""
    layer = torch.nn.Embedding.from_pretrained(
        torch.from_numpy(E.copy()), freeze=False, sparse=sparse
    )
    opt = torch.optim.SGD(layer.parameters(), lr=lr)
    layer(torch.from_numpy(np.asarray(ids, dtype=np.int64))).backward(torch.from_numpy(grad_out))
    opt.step()
    return layer.weight.detach().numpy()


def assert_close(got, want, dtype):
    rtol, atol = tolerance(dtype)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale)


@st.composite
def update_case(draw):
    V = draw(st.integers(1, 25))
    d = draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    E = draw(hnp.arrays(dtype, (V, d), elements=st.floats(-100, 100, width=32)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6))
    ids = draw(hnp.arrays(np.int64, shape, elements=st.integers(0, V - 1)))
    grad_out = draw(hnp.arrays(dtype, shape + (d,), elements=st.floats(-100, 100, width=32)))
    lr = draw(st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0]))
    return E, ids, grad_out, lr


@settings(max_examples=200, deadline=None)
@given(update_case(), st.booleans())
def test_update_equals_torch_sgd(case, sparse):
    E, ids, grad_out, lr = case
    want = torch_sgd_step(E, ids, grad_out, lr, sparse)
    ids_before, g_before = ids.copy(), grad_out.copy()
    table = E.copy()
    assert REF.sparse_sgd_update_(table, ids, grad_out, lr) is None
    assert table.dtype == E.dtype
    assert_close(table, want, E.dtype)
    np.testing.assert_array_equal(ids, ids_before)
    np.testing.assert_array_equal(grad_out, g_before)
    untouched = np.setdiff1d(np.arange(E.shape[0]), ids.ravel())
    np.testing.assert_array_equal(table[untouched], E[untouched])  # bit for bit


EDGE_IDS = {
    "empty": np.array([], dtype=np.int64),
    "empty-2d": np.zeros((2, 0), dtype=np.int64),
    "0-d": np.array(3),
    "all-same": np.full(700, 1),
    "all-same-2d": np.full((20, 30), 4),
    "uint8": np.array([[0, 5], [5, 5]], dtype=np.uint8),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(EDGE_IDS))
def test_edge_cases_match_torch(name, dtype):
    ids = EDGE_IDS[name]
    rng = np.random.default_rng(0)
    E = rng.standard_normal((6, 3)).astype(dtype)
    grad_out = rng.standard_normal(ids.shape + (3,)).astype(dtype)
    table = E.copy()
    REF.sparse_sgd_update_(table, ids, grad_out, 0.01)
    assert_close(table, torch_sgd_step(E, ids, grad_out, 0.01, sparse=False), dtype)


def test_the_trap_is_what_the_reference_avoids():
    """On the worked example the buffered update keeps one write; the reference keeps both."""
    g = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [2.0, 1.0, 0.0]])
    ids = np.array([2, 0, 2])
    trap = np.zeros((4, 3))
    trap[ids] += g
    np.testing.assert_array_equal(trap[2], [2.0, 1.0, 0.0])
    table = np.zeros((4, 3))
    REF.sparse_sgd_update_(table, ids, g, 1.0)
    np.testing.assert_array_equal(table, [[-0.5] * 3, [0.0] * 3, [-3.0, -1.0, 1.0], [0.0] * 3])
    # torch has the same trap (index_put_ without accumulate) and the same fixes
    G = torch.zeros(4, 3)
    G[torch.from_numpy(ids)] += torch.from_numpy(g).float()
    assert G[2].tolist() == [2.0, 1.0, 0.0]
    fixed = torch.zeros(4, 3).index_add_(0, torch.from_numpy(ids), torch.from_numpy(g).float())
    np.testing.assert_array_equal(-fixed.numpy(), table)


def test_embedding_backward_of_chapter_2_drives_the_same_step():
    """E - lr * embedding_backward(...) equals the in-place sparse step (the dense way)."""
    backward = reference.load("02_sparse_backward").embedding_backward
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 30, size=(8, 16))
    grad_out = rng.standard_normal((8, 16, 5))
    E = rng.standard_normal((30, 5))
    table = E.copy()
    REF.sparse_sgd_update_(table, ids, grad_out, 0.1)
    np.testing.assert_allclose(table, E - 0.1 * backward(ids, grad_out, 30), rtol=1e-12, atol=1e-12)
