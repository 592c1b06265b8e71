"""Chapter 1: the reference solutions agree with PyTorch, the outside oracle."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.checks import reference

REF = reference.load("01_one_hot_lookup")


@st.composite
def table_and_ids(draw):
    V = draw(st.integers(1, 40))
    d = draw(st.integers(1, 6))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    E = draw(hnp.arrays(dtype, (V, d), elements=st.floats(-1e3, 1e3, width=32)))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    ids = draw(hnp.arrays(np.int64, shape, elements=st.integers(0, V - 1)))
    return E, ids


@settings(max_examples=150, deadline=None)
@given(table_and_ids())
def test_forward_equals_torch_embedding(case):
    E, ids = case
    E_before, ids_before = E.copy(), ids.copy()
    out = REF.embedding_forward(E, ids)
    want = F.embedding(torch.from_numpy(ids), torch.from_numpy(E)).numpy()
    assert out.shape == ids.shape + (E.shape[1],)
    assert out.dtype == E.dtype
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(E, E_before)
    np.testing.assert_array_equal(ids, ids_before)


@settings(max_examples=100, deadline=None)
@given(table_and_ids())
def test_one_hot_matches_torch_and_reproduces_lookup(case):
    E, ids = case
    V = E.shape[0]
    oh = REF.one_hot(ids, V)
    assert oh.dtype == np.float64 and oh.shape == ids.shape + (V,)
    np.testing.assert_array_equal(oh, F.one_hot(torch.from_numpy(ids), V).numpy())
    np.testing.assert_allclose(oh @ E.astype(np.float64), REF.embedding_forward(E, ids))


@pytest.mark.parametrize(
    "ids",
    [np.array(3), np.array([], dtype=np.int64), np.zeros((2, 0), dtype=np.int64), np.full(500, 4)],
    ids=["0-d", "empty", "empty-2d", "all-same"],
)
def test_forward_edge_cases_match_torch(ids):
    E = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    want = F.embedding(torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(E)).numpy()
    np.testing.assert_array_equal(REF.embedding_forward(E, ids), want)


def test_worked_example_from_the_chapter():
    E = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0], [-1.0, 1.0]])
    np.testing.assert_array_equal(
        REF.embedding_forward(E, np.array([2, 0, 2])), [[2.0, 3.0], [1.0, 0.0], [2.0, 3.0]]
    )


# ------------------------------------------------------------------------------------------
# lookup_costs and predicted_ratio: the chapter's counts, PyTorch's flop counter, the timing
# ------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)  # FlopCounterMode is slow to enter
@given(
    shape=st.lists(st.integers(1, 5), min_size=0, max_size=3).map(tuple),
    V=st.integers(1, 30),
    d=st.integers(1, 6),
)
def test_costs_are_the_bytes_torch_moves_and_the_flops_it_counts(shape, V, d):
    """The gather: its rows out, read and written, and its int64 ids; the product: its float32
    one-hot and table read, its result written; flops as PyTorch's FlopCounterMode counts them."""
    from torch.utils.flop_counter import FlopCounterMode

    E = torch.randn(V, d)
    ids = torch.randint(0, V, shape)
    X = F.one_hot(ids.reshape(-1), V).to(E.dtype)  # (N, V) float32, built outside the call
    with FlopCounterMode(display=False) as gather_count:
        rows = E[ids]
    with FlopCounterMode(display=False) as product_count:
        out = X @ E
    want = (
        2 * rows.nbytes + ids.nbytes,
        gather_count.get_total_flops(),
        X.nbytes + E.nbytes + out.nbytes,
        product_count.get_total_flops(),
    )
    got = REF.lookup_costs(shape, V, d)
    assert got == want and all(type(c) is int for c in got)


@settings(max_examples=60, deadline=None)
@given(
    N=st.integers(1, 10**6),
    V=st.integers(1, 300_000),
    d=st.integers(1, 16_384),
    machine=st.tuples(st.floats(1e8, 1e13), st.floats(1e9, 1e16), st.floats(0.0, 1e-3)),
)
def test_costs_and_ratio_are_what_the_timing_cell_predicts(N, V, d, machine):
    """The counts are coursekit.timing's (what the timing cell and chapter 1 use), and the ratio
    is its prediction, max(bytes / bandwidth, flops / rate) + overhead, product over gather."""
    from coursekit import timing

    gather, product = timing.gather_cost(N, V, d), timing.matmul_cost(N, V, d)
    costs = REF.lookup_costs((N,), V, d)
    assert costs == (gather.moved, gather.flops, product.moved, product.flops)
    bandwidth, rate, overhead = machine
    cal = {"bandwidth": bandwidth, "rates": {product.shape: rate}, "overhead": overhead}
    want = timing.predict(product, cal) / timing.predict(gather, cal)
    assert REF.predicted_ratio(costs, bandwidth, rate, overhead) == pytest.approx(want, rel=1e-12)


def test_costs_of_the_chapters_llama_batch():
    """The page's example: a (32, 512) batch into Llama 3's table, exact beyond 2**32."""
    gb, gf, pb, pf = REF.lookup_costs((32, 512), 128_256, 4096)
    assert (gb, gf) == (8 * 16384 * 4096 + 8 * 16384, 0)
    assert (
        pf == 2 * 32 * 512 * 128_256 * 4096 and pf // 2 // (32 * 512 * 4096) == 128_256
    )  # V madds a copy
    assert pb == 4 * (16384 * 128_256 + 128_256 * 4096 + 16384 * 4096)
