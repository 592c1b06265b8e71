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
