"""Chapter 7: the reference table_cost agrees with PyTorch's own parameter counts and Adam's real
memory, and suggest_dim's graded values are safely away from rounding ties."""

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from autograder.checks import ch07, reference

REF = reference.load("07_choosing_d")


class Tables(torch.nn.Module):
    """An input table and an output layer as PyTorch would build them (optionally factorized,
    optionally tied: the output layer then *is* the input table)."""

    def __init__(self, V, d, tied, m=None, device="meta"):
        super().__init__()

        def table():
            if m is None:
                return torch.nn.Embedding(V, d, device=device)
            return torch.nn.Sequential(
                torch.nn.Embedding(V, m, device=device),
                torch.nn.Linear(m, d, bias=False, device=device),
            )

        self.input = table()
        self.output = self.input if tied else table()


def _torch_params(V, d, tied, m=None):
    # Module.parameters() yields a shared (tied) parameter once.
    return sum(p.numel() for p in Tables(V, d, tied, m).parameters())


def test_examples_from_the_issue():
    assert REF.table_cost(128256, 4096, True) == (525336576, 8405385216)
    assert REF.table_cost(30000, 4096, True, 128) == (4364288, 69828608)
    assert all(type(x) is int for x in REF.table_cost(128256, 4096, True))


@settings(max_examples=150, deadline=None)
@given(
    V=st.integers(1, 300_000),
    d=st.integers(1, 16_384),
    tied=st.booleans(),
    m=st.one_of(st.none(), st.integers(1, 1024)),
)
def test_params_equal_torch_parameter_count(V, d, tied, m):
    params, nbytes = REF.table_cost(V, d, tied, m)
    assert params == _torch_params(V, d, tied, m)
    assert nbytes == 16 * params
    assert type(params) is int and type(nbytes) is int


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("m", [None, 3])
def test_bytes_equal_adam_training_memory(tied, m):
    """One Adam step on real float32 tensors: weight + grad + exp_avg + exp_avg_sq bytes."""
    model = Tables(50, 8, tied, m, device="cpu")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = torch.arange(50)
    h = model.input(ids)
    logits = h @ (model.output.weight if m is None else model.output[1](model.output[0].weight)).T
    logits.sum().backward()
    opt.step()
    total = 0
    for p in model.parameters():
        state = opt.state[p]
        total += p.nbytes + p.grad.nbytes + state["exp_avg"].nbytes + state["exp_avg_sq"].nbytes
    assert total == REF.table_cost(50, 8, tied, m)[1]


def test_huge_tables_are_exact():
    params, nbytes = REF.table_cost(256000, 16384, False)
    assert params == 2 * 256000 * 16384 > 2**32 and nbytes == 16 * params > 2**36


def test_numbers_from_the_chapter():
    llama_in, _ = REF.table_cost(128256, 4096, True)
    assert REF.table_cost(128256, 4096, False)[0] > 10**9  # over a billion in the two tables
    gpt3, _ = REF.table_cost(50257, 12288, True)
    assert gpt3 > llama_in and round(100 * gpt3 / 175e9, 2) == 0.35
    albert, _ = REF.table_cost(30000, 4096, True, 128)
    assert (30000 * 128, 128 * 4096) == (3_840_000, 524_288) and round(albert / 1e6, 1) == 4.4
    assert round(REF.table_cost(30000, 4096, True)[0] / 1e6) == 123
    assert round(REF.table_cost(128256, 4096, True)[1] / 1e9, 1) == 8.4
    tf, fastai = REF.suggest_dim(10_000, "tf"), REF.suggest_dim(10_000, "fastai")
    assert (tf, fastai) == (10, 278) and round(fastai / tf) == 28


def _fractions(V):
    """The fractional parts of both rules' raw values, computed three ways."""
    out = []
    for p, c in [(0.25, 1.0), (0.56, 1.6)]:
        for raw in (c * V**p, c * math.exp(p * math.log(V)), float(c * np.power(float(V), p))):
            out.append(raw % 1.0)
    return out


@pytest.mark.parametrize("V", sorted(set(ch07.TF_VS) | set(ch07.FASTAI_VS)))
def test_graded_vocabularies_are_far_from_rounding_ties(V):
    assert all(abs(f - 0.5) > 1e-3 for f in _fractions(V))


def test_graded_cases_cover_the_classic_mistakes():
    """Each rule has cases where truncating, rounding up and rounding differ, and fastai's cap
    is crossed between two graded V (39,000 -> 596, 40,000 -> 600)."""
    for _rule, vs, p, c in [("tf", ch07.TF_VS, 0.25, 1.0), ("fastai", ch07.FASTAI_VS, 0.56, 1.6)]:
        raws = [c * V**p for V in vs]
        assert any(r % 1 > 0.5 for r in raws) and any(0 < r % 1 < 0.5 for r in raws)
    assert REF.suggest_dim(39_000, "fastai") == 596 and REF.suggest_dim(40_000, "fastai") == 600


@settings(max_examples=300, deadline=None)
@given(V=st.integers(1, 10**9))
def test_suggest_dim_matches_numpy_away_from_ties(V):
    assume(all(abs(f - 0.5) > 1e-9 for f in _fractions(V)))
    assert REF.suggest_dim(V, "tf") == int(np.round(np.power(float(V), 0.25)))
    assert REF.suggest_dim(V, "fastai") == int(min(600, np.round(1.6 * np.power(float(V), 0.56))))
    assert type(REF.suggest_dim(V, "tf")) is int and type(REF.suggest_dim(V, "fastai")) is int


def test_unknown_rule_raises():
    with pytest.raises(ValueError):
        REF.suggest_dim(100, "sqrt")


# --------------------------------------------------------------------------------------------
# heldout_error and best_dim: torch's SVD, Eckart-Young, and well-posed graded cases
# --------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 12),
    m=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    offset=st.sampled_from([0.0, 3.5, -20.0]),
    data=st.data(),
)
def test_heldout_error_is_torchs_rank_d_fit(n, m, seed, offset, data):
    """The rank-d fit of M_train - mean by torch.linalg.svd, mean added back, scored on M_val;
    its training error is the dropped singular values' squares over n m (Eckart-Young)."""
    d = data.draw(st.integers(0, min(n, m)))
    rng = np.random.default_rng(seed)
    M_train, M_val = offset + rng.standard_normal((2, n, m))
    before = M_train.copy(), M_val.copy()
    A = torch.from_numpy(M_train)
    mu = A.mean()
    U, S, Vh = torch.linalg.svd(A - mu, full_matrices=False)
    fit = mu + (U[:, :d] * S[:d]) @ Vh[:d]
    want = torch.mean((fit - torch.from_numpy(M_val)) ** 2).item()
    assert math.isclose(REF.heldout_error(M_train, M_val, d), want, rel_tol=1e-9, abs_tol=1e-12)
    dropped = float((S[d:] ** 2).sum()) / (n * m)
    assert math.isclose(
        REF.heldout_error(M_train, M_train, d), dropped, rel_tol=1e-7, abs_tol=1e-12
    )
    assert np.array_equal(before[0], M_train) and np.array_equal(before[1], M_val)


@pytest.mark.parametrize("rank", [0, 1, 3, 6])
def test_ratings_split_has_the_rank_it_says(rank):
    """rank singular values of the centered matrix stand out above the noise's largest,
    sqrt(n) + sqrt(m) (the signal's run from 4 to 2 times it), and the rest lie below it."""
    n, m = 60, 40
    edge = math.sqrt(n) + math.sqrt(m)
    for M in REF.ratings_split(n, m, rank, 7):
        s = np.linalg.svd(M - 3.5, compute_uv=False)
        assert (s[:rank] > 1.8 * edge).all() and (s[rank:] < 1.1 * edge).all()


def test_graded_best_dims_are_unique_with_a_margin():
    """Every graded best_dim case has one minimum, at least 3% below the next d's error (so any
    correct method agrees), or is an exact tie at every d (the tie rule's cases), and the RANKED
    ones have it at the signal's rank."""
    for check in (ch07.best_dim_rank, ch07.best_dim_edges):
        for case in check.cases():
            M_train, M_val, max_d = case.args
            curve = np.array([REF.heldout_error(M_train, M_val, d) for d in range(max_d + 1)])
            best = int(np.argmin(curve))
            assert REF.best_dim(M_train, M_val, max_d) == best
            if case.meta.get("tie"):
                # an exact tie at every d: M_train is constant and its mean exact, so the
                # centered matrix is exactly 0 and every method predicts the mean, bit for bit
                assert not np.any(M_train - M_train.mean()), case.label
                assert np.all(curve == curve[0]), case.label
            elif max_d:
                assert np.sort(curve)[1] > 1.03 * curve[best], case.label
            assert np.allclose(case.meta["curve"], curve, rtol=1e-12)
    for n, m, rank, seed, noise, max_d in ch07.RANKED:
        M_train, M_val = REF.ratings_split(n, m, rank, seed, noise=noise)
        assert REF.best_dim(M_train, M_val, max_d) == rank
