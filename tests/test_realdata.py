"""coursekit/realdata.py: the web2 data set (pin, split, encoding) and, at reduced size, every
experiment the chapters run on it."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from coursekit import realdata as rd

LOG_V = math.log(rd.V)


@pytest.fixture(scope="module")
def small():
    """1,000 training words and 300 validation words: seconds, not minutes."""
    return rd.load_data(n_train=1000, n_val=300)


# --- the data set ---------------------------------------------------------------------------


def test_chapters_names_the_pages_that_train_on_the_data():
    """realdata.CHAPTERS, which the capstone's page glues into its first paragraph (its notebook
    runs where the other pages are not beside it), is the list of pages before the capstone
    that import this module."""
    book = Path(__file__).resolve().parents[1] / "book"
    pages = sorted(book.glob("0[0-7]_*.md"))
    assert len(pages) >= 7, f"expected the chapter pages in {book}"
    uses = tuple(
        int(f.name[:2])
        for f in pages
        if re.search(r"^from coursekit import .*\brealdata\b", f.read_text("utf-8"), re.M)
    )
    assert rd.CHAPTERS == uses, f"realdata.CHAPTERS is {rd.CHAPTERS}, the pages import it: {uses}"


def test_word_list_is_pinned_and_clean():
    words = rd.load_words()
    assert len(words) == rd.WEB2_COUNT
    assert list(words) == sorted(words) and len(set(words)) == len(words)
    assert set("".join(words)) == set(rd.ALPHABET[1:])
    assert rd.ALPHABET[0] == "." and rd.V == 27


def test_a_changed_word_list_is_refused(monkeypatch):
    import english_words

    real = english_words.get_english_words_set
    monkeypatch.setattr(
        english_words, "get_english_words_set", lambda *a, **k: real(*a, **k) - {"zythum"}
    )
    rd.load_words.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="changed"):
            rd.load_words()
    finally:
        monkeypatch.undo()
        rd.load_words.cache_clear()
    assert len(rd.load_words()) == rd.WEB2_COUNT


def test_split_sizes_disjoint_and_fixed_by_seed():
    words = rd.load_words()
    train, val = rd.split_words(words, 5000, 800, seed=0)
    assert len(train) == 5000 and len(val) == 800 and not set(train) & set(val)
    assert rd.split_words(words, 5000, 800, seed=0) == (train, val)
    assert rd.split_words(words, 5000, 800, seed=1)[0] != train
    small_train, same_val = rd.split_words(words, 300, 800, seed=0)
    assert same_val == val and small_train == train[:300]  # one validation set for every size
    with pytest.raises(ValueError):
        rd.split_words(words, len(words), 1)


def test_encode_pads_with_the_boundary_token_and_ends_every_word():
    X, Y = rd.encode(["cat", "a"], context=3)
    assert X.tolist() == [[0, 0, 0], [0, 0, 3], [0, 3, 1], [3, 1, 20], [0, 0, 0], [0, 0, 1]]
    assert Y.tolist() == [3, 1, 20, 0, 1, 0]
    X1, Y1 = rd.encode(["ab"], context=1)
    assert X1.tolist() == [[0], [1], [2]] and Y1.tolist() == [1, 2, 0]


def test_load_data_sizes(small):
    rows = sum(len(w) + 1 for w in small.train_words)
    assert small.X_train.shape == (rows, 3) and small.Y_train.shape == (rows,)
    assert len(small.train_words) == 1000 and len(small.val_words) == 300
    assert small.X_val.dtype == torch.int64 and int(small.X_val.max()) < rd.V
    assert rd.unigram_loss(small) < LOG_V


def test_a_test_split_is_disjoint_and_leaves_the_other_splits_alone(small):
    """n_test takes its words from just before the validation words: the training and
    validation words of every chapter's default call are the same with or without it."""
    with_test = rd.load_data(n_train=1000, n_val=300, n_test=200)
    assert with_test.train_words == small.train_words and with_test.val_words == small.val_words
    assert len(with_test.test_words) == 200 and len(small.test_words) == 0
    assert not set(with_test.test_words) & (set(small.train_words) | set(small.val_words))
    assert with_test.X_test.shape == (sum(len(w) + 1 for w in with_test.test_words), 3)
    assert small.X_test.shape == (0, 3) and small.Y_test.shape == (0,)
    assert rd.unigram_loss(with_test, test=True) != rd.unigram_loss(with_test)
    with pytest.raises(ValueError):
        rd.load_data(n_train=rd.WEB2_COUNT - 300, n_val=300, n_test=1)


# --- the model ------------------------------------------------------------------------------


@pytest.mark.parametrize("d,hidden,tied", [(4, 7, False), (5, None, True), (3, 0, False)])
def test_parameter_counts(d, hidden, tied):
    context = 1 if hidden == 0 else 3
    p = rd.init_model(d, context=context, hidden=hidden, tied=tied, seed=0)
    V = rd.V
    if hidden == 0:
        want = V * d + V + V * d  # E, c, U
    elif tied:
        want = V * d + d * 3 * d + d + V
    else:
        want = V * d + hidden * 3 * d + hidden + V + V * hidden
    assert rd.n_params(p) == want
    assert ("U" in p) == (not tied)


def test_logits_follow_the_formula():
    p = rd.init_model(6, hidden=5, seed=3)
    X = torch.tensor([[0, 3, 1], [7, 7, 7]])
    for n in range(2):
        h = torch.cat([p["E"][i] for i in X[n]])
        z = p["U"] @ torch.tanh(p["W"] @ h + p["b"]) + p["c"]
        assert torch.allclose(rd.logits(p, X)[n], z, atol=1e-6)
    tied = rd.init_model(6, tied=True, seed=3)
    a = torch.tanh(tied["E"][X].flatten(1) @ tied["W"].T + tied["b"])
    assert torch.allclose(rd.logits(tied, X), a @ tied["E"].T + tied["c"], atol=1e-6)


def test_adam_step_matches_torch_optim():
    gen = torch.Generator().manual_seed(0)
    w_mine = torch.randn(4, 3, generator=gen)
    w_torch = w_mine.clone().requires_grad_(True)
    opt, state = torch.optim.Adam([w_torch], lr=0.05), {}
    for _ in range(5):
        g = torch.randn(4, 3, generator=gen)
        rd.adam_step([w_mine], [g], state, lr=0.05)
        w_torch.grad = g.clone()
        opt.step()
    assert torch.allclose(w_mine, w_torch.detach(), atol=1e-6)


def test_training_learns_and_is_deterministic(small):
    runs = []
    for _ in range(2):
        p = rd.init_model(8, hidden=32, seed=0)
        start = rd.loss(p, small.X_val, small.Y_val)
        train_losses, val = rd.train_adam(p, small, steps=150, eval_every=50, seed=0)
        runs.append((train_losses, val, p["E"].clone()))
    train_losses, val, E = runs[0]
    assert [s for s, _ in val] == [50, 100, 150]
    assert val[-1][1] < rd.unigram_loss(small) < LOG_V < start + 0.5
    assert np.array_equal(train_losses, runs[1][0]) and torch.equal(E, runs[1][2])


def test_the_test_split_is_read_only_for_the_kept_model_and_the_last():
    """train_adam(test=True) changes neither training nor the validation losses; it gives the
    test loss of the model at the first lowest validation loss (the one a run stopped there
    ends with) and of the last, and None at every other evaluation."""
    data = rd.load_data(n_train=300, n_val=300, n_test=200)  # a wide model overfits 300 words
    p, q = rd.init_model(32, hidden=64, seed=0), rd.init_model(32, hidden=64, seed=0)
    losses_p, val = rd.train_adam(p, data, steps=200, eval_every=20, seed=0)
    losses_q, both = rd.train_adam(q, data, steps=200, eval_every=20, seed=0, test=True)
    assert np.array_equal(losses_p, losses_q) and [t[:2] for t in both] == val
    i = int(np.argmin([v for _, v in val]))
    assert i < len(val) - 1, "expected this run to overfit, so that the kept model is not the last"
    assert [j for j, t in enumerate(both) if t[2] is not None] == [i, len(val) - 1]
    assert both[-1][2] == rd.loss(q, data.X_test, data.Y_test)
    stopped = rd.init_model(32, hidden=64, seed=0)
    rd.train_adam(stopped, data, steps=both[i][0], seed=0)  # the same batches, stopped there
    assert both[i][2] == pytest.approx(rd.loss(stopped, data.X_test, data.Y_test), abs=1e-6)
    with pytest.raises(ValueError, match="n_test"):
        rd.train_adam(p, rd.load_data(n_train=300, n_val=300), steps=1, test=True)


def test_keys_train_only_the_parameters_named():
    data = rd.load_data(n_train=1000, n_val=300)
    p, q = rd.init_model(6, hidden=16, seed=0), rd.init_model(6, hidden=16, seed=0)
    assert np.array_equal(
        rd.train_adam(p, data, steps=5, seed=0)[0],
        rd.train_adam(q, data, steps=5, seed=0, keys=list(q))[0],
    )
    frozen = rd.init_model(6, hidden=16, seed=0)
    start = {k: t.clone() for k, t in frozen.items()}
    rd.train_adam(frozen, data, steps=5, seed=0, keys=["W", "b"])
    assert {k for k in start if not torch.equal(start[k], frozen[k])} == {"W", "b"}


def test_the_trained_table_groups_the_vowels():
    data = rd.load_data()  # chapter 1's run, shortened
    p = rd.init_model(d=10, hidden=64, seed=0)
    before = rd.vowel_neighbour_share(p["E"])
    rd.train_adam(p, data, steps=300, seed=0)
    assert rd.vowel_neighbour_share(p["E"]) >= before + 0.4
    xy = rd.pca2(p["E"])
    assert xy.shape == (rd.V, 2) and np.allclose(xy.mean(axis=0), 0, atol=1e-9)


def test_nearest_and_pca_on_a_known_table():
    E = torch.zeros(rd.V, 3)
    E[:, 0] = 1.0
    E[1, 1] = E[5, 1] = 5.0  # 'a' and 'e' point the same way, away from the rest
    nn = rd.nearest(E, k=1)
    assert nn["a"] == "e" and nn["e"] == "a"
    xy = rd.pca2(E.double())
    assert np.allclose(np.linalg.norm(xy[1] - xy[5]), 0) and np.linalg.norm(xy[1] - xy[2]) > 4


# --- chapter 3: the trap --------------------------------------------------------------------


def test_the_trap_drops_repeated_writes():
    ids, G = torch.tensor([1, 1, 2]), torch.ones(3, 2)
    E_ok, E_trap = torch.zeros(4, 2), torch.zeros(4, 2)
    rd.update_index_add(E_ok, ids, G, lr=0.5)
    rd.update_trap(E_trap, ids, G, lr=0.5)
    assert E_ok[1].tolist() == [-1.0, -1.0] and E_trap[1].tolist() == [-0.5, -0.5]
    assert torch.equal(E_ok[2], E_trap[2]) and not E_ok[[0, 3]].any()


def test_correct_accumulation_beats_the_trap(small):
    final = {}
    for name, update in [("ok", rd.update_index_add), ("trap", rd.update_trap)]:
        p = rd.init_model(2, hidden=32, seed=0)
        losses, final[name] = rd.train_sgd(p, small, update, steps=200, lr=0.5, seed=0)
        assert len(losses) == 200
    assert final["ok"] < final["trap"] - 0.05
    with pytest.raises(ValueError):
        rd.train_sgd(rd.init_model(2, tied=True), small, rd.update_index_add, steps=1)


def test_train_sgd_hands_the_upstream_gradient_to_the_table_update(small):
    """The (ids, G) the table update receives are dL/dH of the looked-up rows, per position."""
    seen = []
    p = rd.init_model(3, hidden=4, seed=1)
    start = {k: t.clone() for k, t in p.items()}
    rd.train_sgd(p, small, lambda E, ids, G, lr: seen.append((ids, G)), steps=1, batch=8)
    rows = rd.batches(len(small.Y_train), 1, 8, seed=0)[0]
    X, Y = small.X_train[rows], small.Y_train[rows]
    E = start["E"].clone().requires_grad_(True)
    F.cross_entropy(rd.logits({**start, "E": E}, X), Y).backward()
    ids, G = seen[0]
    assert torch.equal(ids, X.reshape(-1))
    dE = torch.zeros_like(E).index_add_(0, ids, G)
    assert torch.allclose(dE, E.grad, atol=1e-6) and torch.equal(p["E"], start["E"])


# --- chapters 5, 6 and 7 --------------------------------------------------------------------


def test_tying_fails_bare_and_works_behind_a_hidden_layer():
    data_1, data_3 = rd.load_data(context=1), rd.load_data(context=3)
    val = {}
    for name, data, kw in [
        ("bare_u", data_1, dict(d=8, context=1, hidden=0)),
        ("bare_t", data_1, dict(d=8, context=1, hidden=0, tied=True)),
        ("hid_u", data_3, dict(d=8)),
        ("hid_t", data_3, dict(d=8, tied=True)),
    ]:
        p = rd.init_model(**kw, seed=0)
        val[name] = rd.train_adam(p, data, steps=250, seed=0)[1][-1][1]
    assert val["bare_t"] > val["bare_u"] + 0.2  # symmetric scores: the bare tied bigram fails
    assert val["hid_t"] < val["bare_u"] and abs(val["hid_t"] - val["hid_u"]) < 0.1


def test_initial_loss_is_log_V_at_small_scales_and_grows_with_the_scale(small):
    def initial(scale):
        p = rd.init_model(32, tied=True, scale=scale, seed=0)
        return rd.loss(p, small.X_val, small.Y_val)

    assert abs(initial(0.001) - LOG_V) < 0.01
    assert initial(0.02) < initial(0.3) < initial(1.0) < initial(3.0)
    assert initial(1.0) > 2 * LOG_V


def test_a_too_large_scale_still_lags_after_the_first_steps(small):
    final = {}
    for scale in [0.02, 1.0]:
        p = rd.init_model(32, tied=True, scale=scale, seed=0)
        final[scale] = rd.train_adam(p, small, steps=100, seed=0)[1][-1][1]
    assert final[0.02] < final[1.0] - 0.2


def test_a_wide_table_overfits_few_words():
    tiny = rd.load_data(n_train=200, n_val=300)
    val, train = {}, {}
    for d in [4, 64]:
        p = rd.init_model(d, hidden=64, seed=0)
        losses, v = rd.train_adam(p, tiny, steps=300, seed=0)
        val[d], train[d] = v[-1][1], losses[-20:].mean()
    assert train[64] < train[4] and val[64] > val[4]
