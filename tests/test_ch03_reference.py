"""Chapter 3: the reference lazy sparse Adam step agrees with torch.optim.SparseAdam.

The table is an nn.Embedding(sparse=True); each step's upstream gradient is grad_out, so the
gradient torch's optimizer sees is the uncoalesced sparse tensor (ids, grad_out) and SparseAdam
coalesces it itself. E, Adam's first moment m (exp_avg) and second moment v (exp_avg_sq) are
compared after every step. Grading never imports torch: this file is where the reference is
pinned to PyTorch's rule.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.checks import reference
from autograder.checks.compare import tolerance

REF = reference.load("03_fancy_indexing_trap")


class TorchSparseAdam:
    """torch.optim.SparseAdam on an nn.Embedding(sparse=True) holding a copy of E."""

    def __init__(self, E, lr, betas, eps):
        self.layer = torch.nn.Embedding.from_pretrained(
            torch.from_numpy(E.copy()), freeze=False, sparse=True
        )
        self.opt = torch.optim.SparseAdam(self.layer.parameters(), lr=lr, betas=betas, eps=eps)

    def step(self, ids, grad_out):
        self.opt.zero_grad()
        out = self.layer(torch.from_numpy(np.asarray(ids, dtype=np.int64)))
        out.backward(torch.from_numpy(grad_out))
        self.opt.step()

    def state(self):
        w = self.layer.weight
        st = self.opt.state[w]
        if not st:  # torch creates the moments on the first step
            zeros = np.zeros(tuple(w.shape), dtype=w.detach().numpy().dtype)
            return w.detach().numpy(), zeros, zeros
        return w.detach().numpy(), st["exp_avg"].numpy(), st["exp_avg_sq"].numpy()


def assert_close(got, want, dtype, what):
    rtol, atol = tolerance(dtype)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


def run_both(E, steps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    """Run the reference and torch over the same steps, comparing E, m and v after each."""
    ours = TorchSparseAdam(E, lr, betas, eps)
    table, m, v = E.copy(), np.zeros_like(E), np.zeros_like(E)
    for t, (ids, grad_out) in enumerate(steps, start=1):
        before = (table.copy(), m.copy(), v.copy())
        ids_before, g_before = ids.copy(), grad_out.copy()
        assert REF.sparse_adam_step_(table, m, v, ids, grad_out, t, lr, betas, eps) is None
        ours.step(ids, grad_out)
        for name, got, want in zip("Emv", (table, m, v), ours.state(), strict=True):
            assert got.dtype == E.dtype, name
            assert_close(got, want, E.dtype, f"{name} after step {t}")
        np.testing.assert_array_equal(ids, ids_before)
        np.testing.assert_array_equal(grad_out, g_before)
        untouched = np.setdiff1d(np.arange(E.shape[0]), np.ravel(ids))
        for name, old, new in zip("Emv", before, (table, m, v), strict=True):
            np.testing.assert_array_equal(new[untouched], old[untouched], err_msg=name)  # lazy
    return table, m, v


@st.composite
def adam_run(draw):
    V = draw(st.integers(1, 12))
    d = draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    E = draw(hnp.arrays(dtype, (V, d), elements=st.floats(-10, 10, width=32)))
    # Gradients are multiples of 1/8: their coalesced sums are exact in any order of summation,
    # so an exactly cancelling sum is 0 for torch and for us alike (Adam's first step moves a
    # coordinate by about lr * sign(g), which would turn rounding noise of a near-zero sum into
    # a full step in either direction).
    eighths = st.integers(-64, 64).map(lambda k: k / 8)
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
        ids = draw(hnp.arrays(np.int64, shape, elements=st.integers(0, V - 1)))
        steps.append((ids, draw(hnp.arrays(dtype, shape + (d,), elements=eighths))))
    lr = draw(st.sampled_from([1e-3, 0.01, 0.5]))
    betas = draw(st.sampled_from([(0.9, 0.999), (0.5, 0.9), (0.0, 0.99)]))
    eps = draw(st.sampled_from([1e-8, 1e-3, 0.5]))
    return E, steps, lr, betas, eps


@settings(max_examples=150, deadline=None)
@given(adam_run())
def test_steps_equal_torch_sparse_adam(run):
    E, steps, lr, betas, eps = run
    run_both(E, steps, lr, betas, eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_batches_with_repeats_over_several_steps(dtype):
    """(B, T) ids from a small vocabulary (many repeats), standard normal gradients, 6 steps."""
    rng = np.random.default_rng(7)
    E = rng.standard_normal((20, 5)).astype(dtype)
    steps = []
    for _ in range(6):
        ids = rng.integers(0, 20, size=(4, 8))
        steps.append((ids, rng.standard_normal((4, 8, 5)).astype(dtype)))
    run_both(E, steps, lr=0.01)


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
    first = np.array([0, 3, 3])
    steps = [(first, rng.standard_normal((3, 3)).astype(dtype))]
    steps.append((ids, rng.standard_normal(ids.shape + (3,)).astype(dtype)))
    run_both(E, steps, lr=0.01)


def test_a_touched_row_whose_gradients_cancel_still_decays():
    """torch's coalesce keeps an index whose summed gradient is 0: its moments decay."""
    E = np.ones((3, 2))
    steps = [(np.array([1]), np.ones((1, 2))), (np.array([1, 1]), np.array([[1.0, 2], [-1, -2]]))]
    table, m, v = run_both(E, steps, lr=0.1)
    np.testing.assert_allclose(m[1], 0.9 * 0.1)
    np.testing.assert_allclose(v[1], 0.999 * 0.001)
    assert not np.array_equal(table[1], np.ones(2) - 0.1)  # the row moved again at step 2


def test_coalescing_is_not_per_occurrence():
    """Applying Adam once per occurrence of a repeated id gives a different table."""
    E = np.zeros((2, 1))
    ids, g = np.array([0, 0]), np.array([[1.0], [3.0]])
    table, m, v = E.copy(), np.zeros_like(E), np.zeros_like(E)
    REF.sparse_adam_step_(table, m, v, ids, g, 1, lr=0.1)
    once = (E.copy(), np.zeros_like(E), np.zeros_like(E))
    for n in range(2):
        REF.sparse_adam_step_(*once, ids[n : n + 1], g[n : n + 1], 1, lr=0.1)
    np.testing.assert_allclose(m[0], 0.1 * 4.0)
    assert not np.allclose(once[1], m) and not np.allclose(once[0], table)
