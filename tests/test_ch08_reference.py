"""The capstone: the reference numpy training step of the table equals PyTorch's.

PyTorch's side is the real-data model of coursekit/realdata.py: an ``nn.Embedding(sparse=True)``
looks the rows up, ``realdata.logits`` runs the layers after the lookup (fixed, as in the
exercise), autograd computes the sparse gradient of the table and ``torch.optim.SparseAdam``
updates it. The reference ``train_step_`` (its own lookup, the given ``model_grads``, its own
row-sparse backward and lazy sparse Adam) must give the same losses, the same table and the same
moments after every one of several steps, in float64 and in float32 (to float32 rounding),
including batches where one id repeats a lot and a padding row (``nn.Embedding(padding_idx=...)``,
0 or negative, declared in the middle of training so that its moments are not zero).
Grading never imports torch: this file is where the capstone is pinned to PyTorch.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.checks import ch08, reference
from coursekit import realdata

REF = reference.load("08_capstone")


def torch_run(E, params, batches, lr, pads=None):
    """Losses, the final table and SparseAdam's (exp_avg, exp_avg_sq), in E's dtype; step s
    runs with nn.Embedding's padding_idx = pads[s] (None: no padding row)."""
    layer = torch.nn.Embedding.from_pretrained(
        torch.from_numpy(E.copy()), freeze=False, sparse=True
    )
    opt = torch.optim.SparseAdam(layer.parameters(), lr=lr)
    p = {k: torch.from_numpy(a) for k, a in params.items()}
    losses = []
    for s, (X, Y) in enumerate(batches):
        pad = None if pads is None else pads[s]
        layer.padding_idx = None if pad is None else pad % E.shape[0]  # as the constructor does
        X, Y = torch.from_numpy(X), torch.from_numpy(Y)
        out = torch.nn.functional.cross_entropy(realdata.logits(p, X, H=layer(X)), Y)
        opt.zero_grad()
        out.backward()
        opt.step()
        losses.append(out.item())
    st = opt.state[layer.weight]
    return losses, layer.weight.detach().numpy(), st["exp_avg"].numpy(), st["exp_avg_sq"].numpy()


def numpy_run(E, params, batches, lr, pads=None):
    E = E.copy()
    m, v = np.zeros_like(E), np.zeros_like(E)
    pads = pads or [None] * len(batches)
    losses = [
        REF.train_step_(E, m, v, params, X, Y, t, lr, padding_idx=pads[t - 1])
        for t, (X, Y) in enumerate(batches, 1)
    ]
    return losses, E, m, v


def _batches(V, seed, steps=6, B=16, repeated=False):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        X = rng.integers(0, V, size=(B, 3))
        if repeated:
            X[: B // 2] = 0  # word starts: the boundary token fills the context
        out.append((X.astype(np.int64), rng.integers(0, V, size=B).astype(np.int64)))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("repeated", [False, True])
def test_reference_train_steps_equal_nn_embedding_with_sparse_adam(seed, repeated):
    V, d = 27, 4
    E, params = ch08.model(V, d, 900 + seed, hidden=8)
    batches = _batches(V, 910 + seed, repeated=repeated)
    ours, theirs = numpy_run(E, params, batches, 0.05), torch_run(E, params, batches, 0.05)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    for a, b in zip(ours[1:], theirs[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    V=st.integers(2, 12),
    d=st.integers(1, 4),
    B=st.integers(1, 10),
    pad=st.integers(-12, 11),
    before=st.integers(0, 3),
    after=st.integers(1, 3),
    lr=st.sampled_from([0.01, 0.05, 0.2]),
    seed=st.integers(0, 2**16),
)
def test_padding_row_never_moves_as_in_nn_embedding_padding_idx(
    V, d, B, pad, before, after, lr, seed
):
    """``before`` steps without a padding row (every row gets moments), then ``after`` with
    padding_idx = pad (in [-V, V)): our steps equal nn.Embedding(padding_idx) + SparseAdam's, and
    the padding row of E, m and v stays as it was when padding started."""
    pad = pad % (2 * V) - V  # any id in [-V, V), negative ones too
    E, params = ch08.model(V, d, seed, hidden=5)
    rng = np.random.default_rng(seed + 1)
    batches = []
    for _ in range(before + after):
        X = rng.integers(0, V, size=(B, 3))
        X[: (B + 1) // 2, 0] = pad % V  # the padding id occurs in every batch, repeated
        batches.append((X.astype(np.int64), rng.integers(0, V, size=B).astype(np.int64)))
    pads = [None] * before + [pad] * after
    ours, theirs = numpy_run(E, params, batches, lr, pads), torch_run(E, params, batches, lr, pads)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    for a, b in zip(ours[1:], theirs[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    at_start = numpy_run(E, params, batches[:before], lr)[1:]
    for a, b in zip(ours[1:], at_start, strict=True):
        assert np.array_equal(a[pad], b[pad])


@pytest.mark.parametrize("pad", [None, 0])
def test_float32_steps_coincide_with_pytorch_float32_to_rounding(pad):
    """A float32 table stays float32 and follows PyTorch's float32 run to float32 rounding (the
    tolerance the float32 checks grade with), the losses to a few float32 steps."""
    V, d = 27, 4
    E, params = ch08.model(V, d, 940, hidden=8, dtype=np.float32)
    batches = _batches(V, 941, steps=8, repeated=True)
    pads = [pad] * len(batches)
    ours, theirs = (
        numpy_run(E, params, batches, 0.05, pads),
        torch_run(E, params, batches, 0.05, pads),
    )
    assert all(a.dtype == np.float32 for a in ours[1:])
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-6)
    for a, b in zip(ours[1:], theirs[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def test_model_grads_is_autograd_of_the_layers_after_the_lookup():
    V, d = 11, 3
    E, params = ch08.model(V, d, 920, hidden=6)
    X, Y = _batches(V, 921, steps=1, B=10)[0]
    H = torch.from_numpy(E[X]).requires_grad_(True)
    p = {k: torch.from_numpy(a) for k, a in params.items()}
    out = torch.nn.functional.cross_entropy(
        realdata.logits(p, torch.from_numpy(X), H=H), torch.from_numpy(Y)
    )
    out.backward()
    loss, G = REF.model_grads(E[X], params, X, Y)
    assert np.isclose(loss, out.item(), rtol=1e-12)
    np.testing.assert_allclose(G, H.grad.numpy(), rtol=1e-9, atol=1e-14)


def test_untouched_rows_keep_table_and_moments():
    """A row that never occurs keeps its value and zero moments, as SparseAdam's lazy rule says."""
    V, d = 27, 4
    E, params = ch08.model(V, d, 930, hidden=8)
    batches = [(X % 20, Y) for X, Y in _batches(V, 931)]  # ids 20..26 never occur
    _, E1, m, v = numpy_run(E, params, batches, 0.05)
    assert np.array_equal(E1[20:], E[20:]) and not (m[20:].any() or v[20:].any())


def test_inlined_real_data_cell_does_nothing_under_nbgrader_without_importing_torch(tmp_path):
    """The released training cell is standalone and returns at once while nbgrader grades."""
    from autograder import release
    from tests.test_timing import run_cell_under_nbgrader

    source = "def train_step_(*args):\n    raise NotImplementedError()\n\n"
    proc = run_cell_under_nbgrader(
        tmp_path, source + release.inline_cell_source({"inline": "realdata"})
    )
    assert "skipped while grading" in proc.stdout and "ok None" in proc.stdout


def test_compare_matches_on_a_short_real_run(monkeypatch):
    """coursekit.capstone.compare with the reference train_step_: the two curves coincide."""
    import matplotlib

    matplotlib.use("Agg")
    from coursekit import capstone

    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setattr(capstone.plt, "show", lambda: None)
    out = capstone.compare(REF.train_step_, steps=20, batch=64)
    assert np.abs(out["yours"] - out["theirs"]).max() < 1e-4
    assert out["yours"][-1] < out["yours"][0]
    assert capstone.verdict(out["yours"], out["theirs"]).startswith("Your curve coincides")


def test_the_overlay_says_rounding_drift_or_a_wrong_step():
    """The capstone's verdict under the plot: within float32 rounding, a slow drift (another
    precision), or a curve that parts at a step (it names the step)."""
    from coursekit import capstone

    theirs = np.linspace(3.9, 2.3, 300)
    assert "coincides" in capstone.verdict(theirs + 4e-7, theirs)
    drift = capstone.verdict(theirs + np.linspace(0, 1e-4, 300), theirs)
    assert "stays within" in drift and "from step 31 on" in drift
    wrong = theirs.copy()
    wrong[2:] += 2e-4  # out of the rounding band at step 3, past CLOSE at step 6
    wrong[5:] += 0.02
    said = capstone.verdict(wrong, theirs)
    assert "rounding of nn.Embedding + SparseAdam's at step 3" in said and "at step 6 " in said
    assert "NaN" in capstone.verdict(np.full(300, np.nan), theirs)


# ------------------------------------------------------------------------------------------
# Part C: the tied table against a tied torch model with torch.optim.Adam
# ------------------------------------------------------------------------------------------
def tied_torch_logits(emb, p, X):
    """The tied model in torch: the lookup, the hidden layer, and F.linear with the table's own
    weight as the output projection."""
    H = emb(X)
    Z = torch.tanh(H.reshape(X.shape[0], -1) @ p["W"].T + p["b"])
    return torch.nn.functional.linear(Z, emb.weight, p["c"])


def tied_torch_run(E, params, batches, lr, m0=None, v0=None, t0=0, pad=None):
    """Losses, the final table and Adam's (exp_avg, exp_avg_sq) of a tied nn.Embedding trained by
    torch.optim.Adam (dense), from moments m0, v0 after t0 earlier steps (None: a fresh Adam);
    ``pad``: nn.Embedding's padding_idx."""
    weight = torch.from_numpy(E.copy())
    emb = torch.nn.Embedding.from_pretrained(weight, freeze=False, padding_idx=pad)
    opt = torch.optim.Adam(emb.parameters(), lr=lr)
    if m0 is not None:
        opt.state[emb.weight] = {
            "step": torch.tensor(float(t0)),
            "exp_avg": torch.from_numpy(m0.copy()),
            "exp_avg_sq": torch.from_numpy(v0.copy()),
        }
    p = {k: torch.from_numpy(a) for k, a in params.items()}
    losses = []
    for X, Y in batches:
        X, Y = torch.from_numpy(X), torch.from_numpy(Y)
        out = torch.nn.functional.cross_entropy(tied_torch_logits(emb, p, X), Y)
        opt.zero_grad()
        out.backward()
        opt.step()
        losses.append(out.item())
    st = opt.state[emb.weight]
    return losses, emb.weight.detach().numpy(), st["exp_avg"].numpy(), st["exp_avg_sq"].numpy()


def tied_numpy_run(E, params, batches, lr, m0=None, v0=None, t0=0, pad=None):
    E = E.copy()
    m = np.zeros_like(E) if m0 is None else m0.copy()
    v = np.zeros_like(E) if v0 is None else v0.copy()
    kwargs = {} if pad is None else {"padding_idx": pad}  # the old positional call, when None
    losses = [
        REF.train_step_tied_(E, m, v, params, X, Y, t, lr, **kwargs)
        for t, (X, Y) in enumerate(batches, t0 + 1)
    ]
    return losses, E, m, v


def _assert_same_run(ours, theirs, rtol=1e-9, atol=1e-12):
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    for a, b in zip(ours[1:], theirs[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("V,d", [(27, 4), (11, 3), (4, 6)])  # V != d both ways
@pytest.mark.parametrize("repeated", [False, True])
def test_reference_tied_steps_equal_a_tied_embedding_with_adam(seed, V, d, repeated):
    """Several steps of the reference train_step_tied_ from a fresh Adam: the same losses,
    table and moments as a tied nn.Embedding (its weight also F.linear's) with torch.optim.Adam."""
    E, params = ch08.tied_model(V, d, 950 + seed)
    batches = _batches(V, 960 + seed, repeated=repeated)
    ours, theirs = (
        tied_numpy_run(E, params, batches, 0.05),
        tied_torch_run(E, params, batches, 0.05),
    )
    _assert_same_run(ours, theirs)


@settings(max_examples=30, deadline=None)
@given(
    V=st.integers(2, 12),
    d=st.integers(1, 5),
    B=st.integers(1, 8),
    context=st.integers(1, 3),
    t0=st.integers(0, 50),
    lr=st.sampled_from([0.01, 0.05, 0.2]),
    scale=st.sampled_from([1.0, 1e-5]),
    seed=st.integers(0, 2**16),
)
def test_one_tied_step_from_any_adam_state_equals_torch(V, d, B, context, t0, lr, scale, seed):
    """One step at t = t0 + 1 from moments of earlier steps (fresh when t0 = 0), with ids that
    may repeat, any context length, and tables near zero (where eps counts): the reference
    equals torch.optim.Adam on the tied model."""
    E, params = ch08.tied_model(V, d, seed, context=context, scale=scale)
    rng = np.random.default_rng(seed + 1)
    X = rng.integers(0, V, size=(B, context)).astype(np.int64)
    X[: (B + 1) // 2, 0] = X[0, 0]  # one id repeated in every example
    Y = rng.integers(0, V, size=B).astype(np.int64)
    m0, v0 = (None, None) if t0 == 0 else ch08.moments(V, d, seed + 2)
    ours = tied_numpy_run(E, params, [(X, Y)], lr, m0, v0, t0)
    theirs = tied_torch_run(E, params, [(X, Y)], lr, m0, v0, t0)
    _assert_same_run(ours, theirs, atol=1e-14)


def test_tied_float32_steps_coincide_with_pytorch_float32_to_rounding():
    """A float32 tied table stays float32 and follows torch's float32 run to float32 rounding
    (within the tolerance the float32 checks grade with)."""
    V, d = 27, 4
    E, params = ch08.tied_model(V, d, 970, dtype=np.float32)
    batches = _batches(V, 971, steps=8, repeated=True)
    ours, theirs = (
        tied_numpy_run(E, params, batches, 0.05),
        tied_torch_run(E, params, batches, 0.05),
    )
    assert all(a.dtype == np.float32 for a in ours[1:])
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-6)
    for a, b in zip(ours[1:], theirs[1:], strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def _padded_batch(V, B, context, pad, seed):
    """A batch whose first column is the padding id (word starts) and whose other ids may be
    it too."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, V, size=(B, context)).astype(np.int64)
    X[:, 0] = pad % V
    return X, rng.integers(0, V, size=B).astype(np.int64)


@settings(max_examples=30, deadline=None)
@given(
    V=st.integers(2, 12),
    d=st.integers(1, 5),
    B=st.integers(1, 8),
    context=st.integers(1, 3),
    t0=st.integers(1, 50),
    lr=st.sampled_from([0.01, 0.05, 0.2]),
    negative=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_tied_step_with_padding_idx_equals_torch(V, d, B, context, t0, lr, negative, seed):
    """padding_idx (0 to V - 1, or negative) with padding ids in X and moments of earlier steps
    in every row, the padding row's included: the reference equals a tied
    nn.Embedding(padding_idx=...) with torch.optim.Adam, losses, table and moments."""
    rng = np.random.default_rng(seed)
    pad = int(rng.integers(0, V)) - (V if negative else 0)
    E, params = ch08.tied_model(V, d, seed, context=context)
    batches = [_padded_batch(V, B, context, pad, seed + 1)]
    m0, v0 = ch08.moments(V, d, seed + 2)
    assert m0[pad].any() and v0[pad].any()
    ours = tied_numpy_run(E, params, batches, lr, m0, v0, t0, pad=pad)
    theirs = tied_torch_run(E, params, batches, lr, m0, v0, t0, pad=pad)
    _assert_same_run(ours, theirs, atol=1e-14)


@pytest.mark.parametrize("pad", [0, -1, 3])
def test_tied_padding_float32_and_several_steps_follow_torch(pad):
    """Several float32 steps with padding_idx from moments in every row: torch's run to float32
    rounding; and in float64 the padding row does move (its gradient is the output part)."""
    V, d = 12, 4
    batches = [_padded_batch(V, 16, 3, pad, 990 + k) for k in range(5)]
    for dtype, tol in (
        (np.float64, {"rtol": 1e-9, "atol": 1e-12}),
        (np.float32, {"rtol": 2e-5, "atol": 1e-6}),
    ):
        E, params = ch08.tied_model(V, d, 985, dtype=dtype)
        m0, v0 = ch08.moments(V, d, 986, dtype)
        ours = tied_numpy_run(E, params, batches, 0.05, m0, v0, 4, pad=pad)
        theirs = tied_torch_run(E, params, batches, 0.05, m0, v0, 4, pad=pad)
        assert all(a.dtype == dtype for a in ours[1:])
        np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-6)
        for a, b in zip(ours[1:], theirs[1:], strict=True):
            np.testing.assert_allclose(a, b, **tol)
        assert np.abs(ours[1][pad] - E[pad]).min() > 1e-4  # the padding row trained
        ignored = tied_numpy_run(E, params, batches, 0.05, m0, v0, 4)  # padding_idx ignored
        assert np.abs(ignored[1] - ours[1]).max() > 1e-4  # padding_idx matters here


def test_tied_model_grads_is_autograd_of_the_layers_between_the_two_uses_of_E():
    """G = dL/dH (the lookup's upstream gradient, E held fixed in the logits), Z and dS =
    dL/dlogits, as autograd gives them; and dS.T @ Z + the rows of G summed per id is autograd's
    gradient of the tied weight (the two paths, as train_step_tied_ must merge them)."""
    V, d = 9, 4
    E, params = ch08.tied_model(V, d, 980)
    X, Y = _batches(V, 981, steps=1, B=10, repeated=True)[0]
    W = torch.from_numpy(E.copy()).requires_grad_(True)
    H = W[torch.from_numpy(X)].detach().requires_grad_(True)  # the lookup, cut from W
    p = {k: torch.from_numpy(a) for k, a in params.items()}
    Z = torch.tanh(H.reshape(len(X), -1) @ p["W"].T + p["b"])
    logits = torch.nn.functional.linear(Z, W, p["c"])
    logits.retain_grad()
    out = torch.nn.functional.cross_entropy(logits, torch.from_numpy(Y))
    out.backward()
    loss, G, Z_np, dS = REF.tied_model_grads(E[X], E, params, Y)
    assert np.isclose(loss, out.item(), rtol=1e-12)
    np.testing.assert_allclose(G, H.grad.numpy(), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(Z_np, Z.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(dS, logits.grad.numpy(), rtol=1e-9, atol=1e-15)
    emb = torch.nn.Embedding.from_pretrained(torch.from_numpy(E.copy()), freeze=False)
    torch.nn.functional.cross_entropy(
        tied_torch_logits(emb, p, torch.from_numpy(X)), torch.from_numpy(Y)
    ).backward()
    merged = dS.T @ Z_np
    np.add.at(merged, X.ravel(), G.reshape(X.size, -1))
    np.testing.assert_allclose(merged, emb.weight.grad.numpy(), rtol=1e-9, atol=1e-15)
    assert (np.abs(dS.T @ Z_np) > 0).all()  # the output path reaches every row, looked up or not


def test_where_eps_sits_matters_for_a_table_near_zero():
    """SparseAdam's rule on every row (Part A's sparse_adam_step_ on np.arange(V)) is not
    torch.optim.Adam's step: on an ordinary table the first step already differs by more than
    the float64 grading tolerance (1e-6 of the table's scale), and on the graded table near zero
    by far more, a large part of the step itself: what the eps placement's check rests on."""

    def sparse_rule_run(E, params, X, Y, lr):
        E, m, v = E.copy(), np.zeros_like(E), np.zeros_like(E)
        _, G, Z, dS = REF.tied_model_grads(E[X], E, params, Y)
        dE = dS.T @ Z
        np.add.at(dE, X.ravel(), G.reshape(X.size, -1))
        REF.sparse_adam_step_(E, m, v, np.arange(len(E)), dE, 1, lr)
        return E

    gaps = {}
    for scale in (1.0, 1e-5):
        E, params = ch08.tied_model(10, 3, 902, scale=scale)
        X, Y = ch08.batch(np.random.default_rng(903).integers(0, 10, (4, 3)), 10, 903)
        E_adam = tied_numpy_run(E, params, [(X, Y)], 0.1)[1]
        gaps[scale] = np.abs(sparse_rule_run(E, params, X, Y, 0.1) - E_adam).max()
    assert gaps[1.0] > 1e-5 and gaps[1e-5] > 1e-3 and gaps[1e-5] > 100 * gaps[1.0]


def test_the_verdict_reads_the_final_table_too():
    """Given the final tables' largest difference, the verdict tells a table that matches under a
    loss that parted (the loss taken after the update) and a loss that coincides over a table that
    does not (a small change in the update) from the other cases; ``who`` and ``hint`` fit it to
    the curve it judges."""
    from coursekit import capstone

    theirs = np.linspace(3.9, 2.3, 300)
    same = capstone.verdict(theirs + 4e-7, theirs, 5e-7)
    assert same.startswith("Your curve coincides") and "differ by at most 5.0e-07." in same
    nearly = capstone.verdict(theirs + 4e-7, theirs, 3e-5)
    assert "differ by at most 3.0e-05, more than 1e-05" in nearly and "eps" in nearly
    after = capstone.verdict(theirs + 0.1, theirs, 0.0)
    assert "the table matches and the loss does not" in after and "after the update" in after
    wrong = capstone.verdict(theirs + 0.1, theirs, 0.04)
    assert "differ by at most 4.0e-02" in wrong and wrong.endswith(capstone.STEP_HINT)
    assert "after the update" not in wrong and "largest gap 1.0e-01" in wrong
    page = capstone.verdict(theirs + 0.1, theirs, who="The dense curve", hint="it is dense.")
    assert page.startswith("The dense curve leaves") and page.endswith(": it is dense.")
    kinds = [
        capstone.outcome(g, t)
        for g, t in [(1e-6, 1e-6), (1e-6, 1e-4), (1e-4, None), (0.1, 0.0), (0.1, 0.1), (0.1, None)]
    ]
    assert kinds == ["coincide", "table", "drift", "after", "parted", "parted"]


def _numpy_mistake(E, params, batches, lr, mistake):
    """The mistakes that the page's table makes with SparseAdam, written as a student's numpy
    train_step_ would make them, with the reference's own functions: (losses, final table)."""
    E, losses = E.copy(), []
    m, v = np.zeros_like(E), np.zeros_like(E)
    for t, (X, Y) in enumerate(batches, start=1):
        loss, G = REF.model_grads(REF.embedding_forward(E, X), params, X, Y)
        rows, values = REF.embedding_backward_rows(X, G)
        if mistake == "per occurrence":
            for n, i in enumerate(X.reshape(-1)):
                REF.sparse_adam_step_(
                    E, m, v, np.array([i]), G.reshape(X.size, -1)[n : n + 1], t, lr
                )
        else:
            if mistake == "trap":
                rows, slot = np.unique(X, return_inverse=True)
                values = np.zeros((rows.size, E.shape[1]))
                values[slot.reshape(-1)] += G.reshape(X.size, -1)
            if mistake == "dense":
                rows, values = np.arange(E.shape[0]), np.eye(E.shape[0])[:, rows] @ values
            step, rate = (1 if mistake == "t = 1" else t), (1e-3 if mistake == "lr" else lr)
            REF.sparse_adam_step_(E, m, v, rows, values, step, rate)
        if mistake == "after":
            loss = REF.model_grads(REF.embedding_forward(E, X), params, X, Y)[0]
        losses.append(loss)
    return np.array(losses), E


@pytest.mark.parametrize(
    "mistake", [None, "per occurrence", "trap", "t = 1", "lr", "after", "dense"]
)
def test_the_pages_mistakes_are_the_graded_ones(mistake):
    """coursekit.capstone.mistaken_run, which makes the page's table of mistakes with SparseAdam,
    makes each one as a numpy train_step_ built from the reference's functions makes it (float64,
    ids that repeat, rows that stay untouched)."""
    from coursekit import capstone

    V, d = 12, 3
    E, params = ch08.model(V, d, 940, hidden=5)
    batches = [(X % 9, Y) for X, Y in _batches(V, 941, steps=5, repeated=True)]  # 9..11 unused
    want, E_want = _numpy_mistake(E, params, batches, 0.05, mistake)
    p = {k: torch.from_numpy(a) for k, a in params.items()}

    def loss_of(H, X, Y):
        return torch.nn.functional.cross_entropy(realdata.logits(p, X, H=H), Y)

    tb = [(torch.from_numpy(X), torch.from_numpy(Y)) for X, Y in batches]
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        got, E_got = capstone.mistaken_run(torch.from_numpy(E), tb, loss_of, 0.05, mistake)
    finally:
        torch.set_default_dtype(before)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(E_got, E_want, rtol=0, atol=1e-12)
    if mistake is not None:  # and the mistake matters on these batches
        right = _numpy_mistake(E, params, batches, 0.05, None)
        assert np.abs(right[1] - E_want).max() > 1e-6 or np.abs(right[0] - want).max() > 1e-6


def test_dense_adam_eps_is_sparse_adams_with_eps_scaled():
    """The page's 'eps' mistake (SparseAdam with eps * sqrt(1 - b2 ** t)) is torch.optim.Adam's
    eps placement: on a batch that touches every row, it equals torch.optim.Adam step for step."""
    from coursekit import capstone

    torch.manual_seed(0)
    E, W = torch.randn(4, 3, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64)
    tb = [(torch.tensor([0, 1, 2, 3, 1]), torch.tensor([0, 1, 1, 0, 1])) for _ in range(4)]

    def loss_of(H, X, Y):
        return torch.nn.functional.cross_entropy(H @ W.T, Y)

    P = E.clone().requires_grad_()
    opt = torch.optim.Adam([P], lr=0.1, eps=1e-3)  # a large eps, so that its place matters
    for X, Y in tb:
        opt.zero_grad()
        loss_of(P[X], X, Y).backward()
        opt.step()
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        _, E_eps = capstone.mistaken_run(E, tb, loss_of, 0.1, "eps", eps=1e-3)
        _, E_lazy = capstone.mistaken_run(E, tb, loss_of, 0.1, None, eps=1e-3)
    finally:
        torch.set_default_dtype(before)
    np.testing.assert_allclose(E_eps, P.detach().numpy(), rtol=0, atol=1e-12)
    assert np.abs(E_lazy - P.detach().numpy()).max() > 1e-6
