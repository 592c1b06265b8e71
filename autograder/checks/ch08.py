"""The capstone: one training step of the character model's table with the student's own code.

``train_step_(E, m, v, params, X, Y, t, lr, padding_idx=None)`` looks up the rows of ``X`` with
the student's ``embedding_forward``, gets the loss and G = dL/dH from the given ``model_grads``,
backpropagates into the table in row-sparse form with ``embedding_backward_rows`` and updates it
with ``sparse_adam_step_``, leaving the padding row (and its moments) alone, as
nn.Embedding(sparse=True, padding_idx=...) + SparseAdam do: it returns the loss and changes E, m
and v in place. The checks grade the loss it returns (``output="return"``) and the arrays it
leaves (``output=("args", (0, 1, 2))``), on small synthetic models with fixed seeds (no data is
loaded while grading). Exercises 1 to 3's functions are graded
again briefly.

The judges are public (:mod:`.public.ch08`, pasted into the released notebook for the visible
tests): compact ones for exercises 1 to 3, and the step's, whose classic mistakes (one Adam
update per occurrence, t left at 1, every row updated, ...) are modelled from the expected
arrays. A case carries what those models need besides: dL/dH at the lookup (``meta["G"]``) and,
for the loss, the loss after the reference's step (``meta["loss_after"]``), and with a padding
row, the sum of its positions' rows of G (``meta["g_pad"]``); an arrays case also asks for the
student's own sparse_adam_step_ on the reference's touched rows and summed gradients
(``meta["companion"]``), so that a mistake of Part A's costs test_adam alone
(:func:`.public.ch08.inherited`). Messages name the
mistake and the rows that differ, never the reference's values for a hidden case.
"""

from __future__ import annotations

import numpy as np

from . import reference
from .data import adam_case, adam_state, forward_case, zero_moments
from .data import distinct as _distinct
from .data import grads as _grads
from .data import ids as _ids
from .data import table as _table
from .data import zipf as _zipf
from .framework import Case, checks_for
from .public.ch08 import (
    TIED_NAMES,
    adam_judge,
    forward_judge,
    loss_judge,
    rows_judge,
    tied_adam_judge,
    tied_loss_judge,
    tied_padding_judge,
    tied_paths_judge,
    tied_repeated_judge,
    update_judge,
    wired_update_judge,
)

A = "08_capstone"
STEP = "train_step_"
NAMES = ["E", "m", "v", "params", "X", "Y", "t", "lr", "padding_idx"]
check = checks_for(A)


# ------------------------------------------------------------------------------------------
# Inputs: a small character model of the real one's shape, and a batch for it
# ------------------------------------------------------------------------------------------
def model(V, d, seed, context=3, hidden=5, dtype=np.float64):
    """(E, params): a (V, d) table and the fixed layers after the lookup, every draw seeded."""
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((V, d))
    params = {
        "W": rng.standard_normal((hidden, context * d)) / np.sqrt(context),
        "b": 0.1 * rng.standard_normal(hidden),
        "U": rng.standard_normal((V, hidden)) / np.sqrt(hidden),
        "c": 0.1 * rng.standard_normal(V),
    }
    return E.astype(dtype), {k: a.astype(dtype) for k, a in params.items()}


def moments(V, d, seed, dtype=np.float64, fresh=()):
    """Adam's m and v as after some earlier steps (v > 0); zero for the ``fresh`` rows."""
    rng = np.random.default_rng(seed)
    m = 0.1 * rng.standard_normal((V, d))
    v = 0.01 * rng.random((V, d)) + 1e-4
    m[list(fresh)] = 0.0
    v[list(fresh)] = 0.0
    return m.astype(dtype), v.astype(dtype)


def batch(X, V, seed):
    """(X, Y) with targets drawn uniformly from [0, V)."""
    return np.asarray(X, dtype=np.int64), _ids(np.shape(X)[0], V, seed)


def train(label, E, m, v, params, X, Y, t, lr=1e-2, *, graded="arrays", padding_idx=None, **meta):
    """A case calling train_step_ with E to lr positionally (and padding_idx=, when given);
    grades the loss it returns (graded="loss") or the E, m, v it leaves (graded="arrays")."""
    output = "return" if graded == "loss" else ("args", (0, 1, 2))
    kwargs = {} if padding_idx is None else {"padding_idx": padding_idx}
    ref = reference.load(A)
    meta["G"] = ref.model_grads(E[X], params, X, Y)[1]  # dL/dH: lets a judge model the trap
    if padding_idx is not None:  # the padding row's would-be gradient: names padding-moved
        meta["g_pad"] = meta["G"][X == padding_idx % E.shape[0]].sum(axis=0)
    if graded == "loss":  # the loss after the reference's step: names that mistake
        after = [np.array(a) for a in (E, m, v)]
        ref.train_step_(*after, params, X, Y, t, lr, **kwargs)
        meta["loss_after"] = ref.model_grads(after[0][X], params, X, Y)[0]
    if graded != "loss":  # the student's own sparse_adam_step_ on the reference's rows and sums
        rows, values = ref.embedding_backward_rows(X, meta["G"])
        if padding_idx is not None:  # the padding row left out, as the reference leaves it
            keep = rows != padding_idx % E.shape[0]
            rows, values = rows[keep], values[keep]
        call = (np.array(E), np.array(m), np.array(v), rows, values, t, lr)
        meta["companion"] = ("sparse_adam_step_", [call], ("args", (0, 1, 2)))
    return Case(
        label,
        (E, m, v, params, X, Y, t, lr),
        kwargs,
        output=output,
        meta={"arg_names": NAMES, **meta},
    )


def fresh_case(label, V, d, seed, X, t=1, lr=1e-2, dtype=np.float64, **kw):
    """A case from zero moments (the first step, or step t of a table never touched before)."""
    E, params = model(V, d, seed, dtype=dtype)
    Xb, Y = batch(X, V, seed + 1)
    zeros = np.zeros((V, d), dtype=dtype)
    return train(label, E, zeros, zeros.copy(), params, Xb, Y, t, lr, **kw)


def state_case(label, V, d, seed, X, t, lr=1e-2, dtype=np.float64, fresh=(), **kw):
    """A case in the middle of training: moments from earlier steps (every row's but the
    ``fresh`` ones, the padding row's included: a table trained before it had padding)."""
    E, params = model(V, d, seed, dtype=dtype)
    Xb, Y = batch(X, V, seed + 1)
    m, v = moments(V, d, seed + 2, dtype, fresh)
    return train(label, E, m, v, params, Xb, Y, t, lr, **kw)


# ------------------------------------------------------------------------------------------
# Exercises 1 to 3, briefly
# ------------------------------------------------------------------------------------------
@check("test_forward", "embedding_forward", forward_judge)
def forward():
    """embedding_forward: each id is replaced by its row, ids of any shape, the table's dtype"""
    E = _table(27, 4, 800)
    ids2 = _ids((16, 3), 27, 801)
    return [
        forward_case("a batch of contexts, ids of shape (16, 3)", E, ids2),
        forward_case("one id repeated", E, np.full(7, 5)),
        forward_case("a float32 table", _table(9, 3, 802, np.float32), _ids((2, 3), 9, 803)),
        forward_case("empty ids", E, np.zeros((0, 3), dtype=np.int64)),
    ]


def rows_case(label, ids, grad_out, **meta):
    """A case calling embedding_backward_rows(ids, grad_out)."""
    return Case(label, (ids, grad_out), meta={"arg_names": ["ids", "grad_out"], **meta})


@check("test_backward_rows", "embedding_backward_rows", rows_judge)
def backward_rows():
    """embedding_backward_rows: sorted distinct rows, each with the sum of its gradients"""
    z = _zipf(60, 27, 810)
    ids2 = _ids((16, 3), 27, 811)
    return [
        rows_case("60 Zipf ids (a few repeat often)", z, _grads(z, 4, 812)),
        rows_case("a batch of contexts, ids of shape (16, 3)", ids2, _grads(ids2, 4, 813)),
        rows_case("float32 gradients", ids2, _grads(ids2, 2, 814, np.float32)),
        rows_case(
            "ids [5, 1, 5, 3] (first occurrences unsorted)",
            (i := np.array([5, 1, 5, 3])),
            _grads(i, 2, 815),
        ),
        rows_case("empty ids", np.zeros((0, 3), dtype=np.int64), np.zeros((0, 3, 2))),
    ]


@check("test_adam", "sparse_adam_step_", adam_judge)
def adam():
    """sparse_adam_step_: one lazy Adam update per touched row, with its summed gradient"""
    z = _zipf(40, 27, 820)
    ids2 = _ids((8, 3), 27, 821)
    return [
        adam_case(
            "40 Zipf ids from zero moments, t = 1",
            *zero_moments(27, 4),
            z,
            _grads(z, 4, 822),
            1,
            0.01,
        ),
        adam_case(
            "ids of shape (8, 3), t = 7",
            *adam_state(27, 4, 823),
            ids2,
            _grads(ids2, 4, 824),
            7,
            0.05,
        ),
        adam_case(
            "gradients of order 1e-4 from zero moments, t = 1 (eps = 1e-8 matters)",
            *zero_moments(27, 4),
            ids2,
            1e-4 * _grads(ids2, 4, 825),
            1,
            0.01,
        ),
    ]


# ------------------------------------------------------------------------------------------
# The training step
# ------------------------------------------------------------------------------------------
@check("test_train_step_loss", STEP, loss_judge)
def train_step_loss():
    """train_step_: returns the loss of the batch before the update, as a float"""
    X = _ids((12, 3), 10, 830)
    return [
        fresh_case("the first step (12 contexts, V = 10)", 10, 3, 831, X, graded="loss"),
        state_case("step 9 of a table in training", 10, 3, 832, X, 9, 0.1, graded="loss"),
        fresh_case("a float32 model", 10, 3, 833, X, dtype=np.float32, graded="loss"),
    ]


@check("test_train_step_update", STEP, update_judge)
def train_step_update():
    """train_step_: the rows in X take one sparse Adam step at step t with lr; other rows stay"""
    return [
        fresh_case("the first step, distinct ids", 12, 3, 840, _distinct((3, 3), 12, 841), lr=0.1),
        state_case(
            "step 5, distinct ids, moments of earlier steps",
            12,
            3,
            842,
            _distinct((3, 3), 12, 843),
            5,
            0.05,
        ),
        state_case(
            "step 200 of a table in training", 15, 2, 844, _distinct((4, 3), 15, 845), 200, 0.01
        ),
        state_case(
            "step 3, some rows never touched before",
            12,
            3,
            846,
            _distinct((2, 3), 12, 847),
            3,
            0.1,
            fresh=(0, 1, 2, 3),
        ),
        fresh_case(
            "step 4 of a table never touched before", 12, 2, 848, _distinct((2, 3), 12, 849), t=4
        ),
    ]


def _word_starts(seed):
    """8 contexts of 3 at word starts: the boundary id 0 in the first two places, one id last."""
    boundary = np.zeros((8, 3), dtype=np.int64)
    boundary[:, 2] = _ids(8, 27, seed)
    return boundary


@check("test_train_step_repeated", STEP, wired_update_judge)
def train_step_repeated():
    """train_step_: an id repeated in the batch gets one update with its summed gradient"""
    boundary = _word_starts(850)  # the boundary token 0 fills the context
    return [
        fresh_case("word starts: id 0 fills most of the context", 27, 3, 851, boundary, lr=0.05),
        state_case(
            "32 contexts of Zipf ids, step 6",
            27,
            3,
            852,
            _zipf(96, 27, 853).reshape(32, 3),
            6,
            0.02,
        ),
        fresh_case(
            "a float32 model, 16 contexts",
            10,
            4,
            854,
            _ids((16, 3), 10, 855),
            dtype=np.float32,
            lr=0.1,
        ),
    ]


def _padding_batches():
    """Contexts with a padding id: word starts padded with id 0, and Zipf ids whose most
    frequent id is the last row (padding_idx = -1)."""
    boundary = _word_starts(860)  # the boundary token 0 pads the context
    boundary[4:, 1] = _ids(4, 27, 861)
    last = _zipf(36, 12, 862).reshape(12, 3)[:, ::-1] % 12  # id 0 (the most frequent) ...
    last = np.where(last == 0, 11, last)  # ... becomes id 11, the last row
    few = np.concatenate([np.zeros((6, 2), np.int64), _ids((6, 1), 10, 870)], axis=1)
    return boundary, last, few


@check("test_train_step_padding", STEP, wired_update_judge)
def train_step_padding():
    """train_step_: the padding row and its moments never change; the other rows train as usual"""
    boundary, last, few = _padding_batches()
    unused = _distinct((3, 3), 12, 868) % 3  # ids 0 to 2 only
    fresh, state = "word starts, padding_idx = 0, the first step", "every row with moments"
    return [
        fresh_case(fresh, 27, 3, 863, boundary, lr=0.05, padding_idx=0),
        state_case(
            f"word starts, padding_idx = 0, step 7, {state}",
            27,
            3,
            864,
            boundary,
            7,
            0.02,
            padding_idx=0,
        ),
        state_case(
            f"padding_idx = -1 (row V - 1), step 4, {state}",
            12,
            3,
            865,
            last,
            4,
            0.05,
            padding_idx=-1,
        ),
        fresh_case(
            "padding_idx = 11 = V - 1, the first step", 12, 3, 866, last, lr=0.1, padding_idx=11
        ),
        state_case(
            "padding_idx = 3, an id the batch never uses",
            12,
            2,
            867,
            unused,
            5,
            0.05,
            padding_idx=3,
        ),
        state_case(
            "a float32 model, padding_idx = 0, step 3",
            10,
            4,
            869,
            few,
            3,
            0.1,
            dtype=np.float32,
            padding_idx=0,
        ),
    ]


# ------------------------------------------------------------------------------------------
# Part C: the tied table
# ------------------------------------------------------------------------------------------
TIED = "train_step_tied_"


def tied_model(V, d, seed, context=3, dtype=np.float64, scale=1.0):
    """(E, params) of a tied model: a (V, d) table, the hidden layer W (d, context * d), b (d,)
    and the output bias c (V,). ``scale`` shrinks E and b (a table near zero: eps matters)."""
    rng = np.random.default_rng(seed)
    E = scale * rng.standard_normal((V, d))
    params = {
        "W": rng.standard_normal((d, context * d)) / np.sqrt(context * d),
        "b": 0.1 * scale * rng.standard_normal(d),
        "c": 0.1 * rng.standard_normal(V),
    }
    return E.astype(dtype), {k: a.astype(dtype) for k, a in params.items()}


def tied(label, V, d, seed, X, t=1, lr=1e-2, *, graded="arrays", state=False, **kw):
    """A case calling train_step_tied_(E, m, v, params, X, Y, t, lr) (and padding_idx=, when
    given): from zero moments, or (``state``) from moments of earlier steps in every row;
    grades the loss it returns (graded="loss") or the E, m, v it leaves. meta: G = dL/dH at
    the lookup, and for a loss case the loss after the reference's step."""
    dtype = kw.pop("dtype", np.float64)
    pad = kw.pop("padding_idx", None)
    kwargs = {} if pad is None else {"padding_idx": pad}
    E, params = tied_model(V, d, seed, dtype=dtype, **kw)
    Xb, Y = batch(X, V, seed + 1)
    if state:
        m, v = moments(V, d, seed + 2, dtype)
    else:
        m, v = np.zeros((V, d), dtype), np.zeros((V, d), dtype)
    ref = reference.load(A)
    meta = {"G": ref.tied_model_grads(E[Xb], E, params, Y)[1]}
    if graded == "loss":
        after = [np.array(a) for a in (E, m, v)]
        ref.train_step_tied_(*after, params, Xb, Y, t, lr, **kwargs)
        meta["loss_after"] = ref.tied_model_grads(after[0][Xb], after[0], params, Y)[0]
    return Case(
        label,
        (E, m, v, params, Xb, Y, t, lr),
        kwargs,
        output="return" if graded == "loss" else ("args", (0, 1, 2)),
        meta={"arg_names": TIED_NAMES, **meta},
    )


@check("test_tied_loss", TIED, tied_loss_judge)
def tied_loss():
    """train_step_tied_: returns the loss of the batch before the update, as a float"""
    X = _ids((12, 3), 10, 880)
    return [
        tied("the first step (12 contexts, V = 10, d = 3)", 10, 3, 881, X, graded="loss"),
        tied("step 9 of a table in training", 10, 3, 882, X, 9, 0.1, graded="loss", state=True),
        tied("a float32 model", 10, 4, 883, X, dtype=np.float32, graded="loss"),
    ]


@check("test_tied_paths", TIED, tied_paths_judge)
def tied_paths():
    """train_step_tied_: both paths' gradients, the lookup's rows and the output projection's, in E"""
    return [
        tied(
            "the first step, distinct ids, V = 12, d = 3",
            12,
            3,
            884,
            _distinct((3, 3), 12, 885),
            lr=0.1,
        ),
        tied(
            "step 4, distinct ids, V = 9, d = 4, moments of earlier steps",
            9,
            4,
            886,
            _distinct((2, 3), 9, 887),
            4,
            0.05,
            state=True,
        ),
        tied("d > V: V = 4, d = 6, the first step", 4, 6, 888, _distinct((1, 3), 4, 889), lr=0.1),
        tied("V = 8, d = 5, step 2", 8, 5, 890, _distinct((2, 3), 8, 891), 2, 0.05),
    ]


@check("test_tied_repeated", TIED, tied_repeated_judge)
def tied_repeated():
    """train_step_tied_: an id repeated in X gets the sum of all its rows of G (plus its output part)"""
    boundary = _word_starts(892)  # the boundary token 0 fills the context
    return [
        tied("word starts: id 0 fills most of the context", 27, 3, 893, boundary, lr=0.05),
        tied(
            "32 contexts of Zipf ids, step 6",
            27,
            3,
            894,
            _zipf(96, 27, 895).reshape(32, 3),
            6,
            0.02,
            state=True,
        ),
        tied(
            "a float32 model, 16 contexts",
            10,
            4,
            896,
            _ids((16, 3), 10, 897),
            dtype=np.float32,
            lr=0.1,
        ),
    ]


@check("test_tied_adam", TIED, tied_adam_judge)
def tied_adam():
    """train_step_tied_: one torch.optim.Adam step at step t on every row of E, m and v"""
    return [
        tied(
            "step 5 of a table in training, moments in every row",
            15,
            3,
            898,
            _ids((4, 3), 15, 899),
            5,
            0.05,
            state=True,
        ),
        tied(
            "step 200 of a table in training",
            12,
            2,
            900,
            _ids((3, 3), 12, 901),
            200,
            0.01,
            state=True,
        ),
        tied(
            "a table near zero (entries of order 1e-5), the first step: eps matters",
            10,
            3,
            902,
            _ids((4, 3), 10, 903),
            lr=0.1,
            scale=1e-5,
        ),
        tied(
            "a table near zero, step 3 from zero moments",
            10,
            3,
            904,
            _ids((4, 3), 10, 905),
            3,
            0.1,
            scale=1e-5,
        ),
        tied(
            "a float32 model, step 3, moments in every row",
            12,
            4,
            906,
            _ids((4, 3), 12, 907),
            3,
            0.1,
            dtype=np.float32,
            state=True,
        ),
    ]


@check("test_tied_padding", TIED, tied_padding_judge)
def tied_padding():
    """train_step_tied_ with padding_idx: the padding positions left out of the lookup's part"""
    boundary, last, few = _padding_batches()
    unused = _distinct((3, 3), 12, 912) % 3  # ids 0 to 2 only
    state = "moments in every row"
    # (label, V, d, seed, X, t, lr, padding_idx, moments of earlier steps, dtype)
    cases = [
        ("word starts, padding_idx = 0, the first step", 27, 3, 908, boundary, 1, 0.05, 0, 0),
        (f"word starts, padding_idx = 0, step 7, {state}", 27, 3, 909, boundary, 7, 0.02, 0, 1),
        (f"padding_idx = -1 (row V - 1), step 4, {state}", 12, 3, 910, last, 4, 0.05, -1, 1),
        ("padding_idx = 11 = V - 1, the first step", 12, 3, 911, last, 1, 0.1, 11, 0),
        (
            f"padding_idx = 3, an id the batch never uses, step 5, {state}",
            12,
            2,
            913,
            unused,
            5,
            0.05,
            3,
            1,
        ),
        ("d > V: V = 4, d = 6, padding_idx = 0, step 3", 4, 6, 914, few % 4, 3, 0.1, 0, 1),
        (
            f"a float32 model, padding_idx = 0, step 3, {state}",
            10,
            4,
            915,
            few,
            3,
            0.1,
            0,
            1,
            np.float32,
        ),
    ]
    return [
        tied(*c[:7], padding_idx=c[7], state=bool(c[8]), dtype=(c[9:] or (np.float64,))[0])
        for c in cases
    ]
