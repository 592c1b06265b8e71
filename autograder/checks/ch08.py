"""The capstone: one training step of the character model's table with the student's own code.

``train_step_(E, m, v, params, X, Y, t, lr)`` looks up the rows of ``X`` with the student's
``embedding_forward``, gets the loss and G = dL/dH from the given ``model_grads``, backpropagates
into the table with ``embedding_backward`` and updates it with ``sparse_adam_step_``: it returns
the loss and changes E, m and v in place. Two checks grade it: the loss it returns
(``output="return"``) and the arrays it leaves (``output=("args", (0, 1, 2))``), on small synthetic
models with fixed seeds (no data is loaded while grading). Exercises 1 to 3's functions are graded
again briefly, with their chapters' judges.

Each classic mistake of the step is modelled by running the reference's own pieces in the wrong
way (one Adam update per occurrence, t left at 1, every row updated, ...); messages name the
mistake and the rows that differ, never the reference's values for a hidden case.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import ch01, ch02, ch03, reference
from .data import distinct as _distinct
from .data import grads as _grads
from .data import ids as _ids
from .data import table as _table
from .data import zipf as _zipf
from .framework import Case, checks_for, common_problems, differing_rows, fmt, shown
from .framework import close as _close

A = "08_capstone"
STEP = "train_step_"
NAMES = ["E", "m", "v", "params", "X", "Y", "t", "lr"]
GRADED = ("E", "m", "v")
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


def train(label, E, m, v, params, X, Y, t, lr=1e-2, *, graded="arrays", **meta):
    """A case calling train_step_ with every argument positionally; grades the loss it returns
    (graded="loss") or the E, m, v it leaves (graded="arrays")."""
    output = "return" if graded == "loss" else ("args", (0, 1, 2))
    return Case(
        label, (E, m, v, params, X, Y, t, lr), output=output, meta={"arg_names": NAMES, **meta}
    )


def fresh_case(label, V, d, seed, X, t=1, lr=1e-2, dtype=np.float64, **kw):
    """A case from zero moments (the first step, or step t of a table never touched before)."""
    E, params = model(V, d, seed, dtype=dtype)
    Xb, Y = batch(X, V, seed + 1)
    zeros = np.zeros((V, d), dtype=dtype)
    return train(label, E, zeros, zeros.copy(), params, Xb, Y, t, lr, **kw)


def state_case(label, V, d, seed, X, t, lr=1e-2, dtype=np.float64, fresh=(), **kw):
    """A case in the middle of training: moments from earlier steps."""
    E, params = model(V, d, seed, dtype=dtype)
    Xb, Y = batch(X, V, seed + 1)
    m, v = moments(V, d, seed + 2, dtype, fresh)
    return train(label, E, m, v, params, Xb, Y, t, lr, **kw)


# ------------------------------------------------------------------------------------------
# The classic mistakes of the step, modelled with the reference's own pieces
# ------------------------------------------------------------------------------------------
def _step(case, how="right", after=False):
    """E, m, v after the step (and the loss) as the variant ``how`` computes them."""
    ref = reference.load(A)
    E, m, v, params, X, Y, t, lr = case.args
    E, m, v = (np.array(a) for a in (E, m, v))
    V = E.shape[0]
    loss, G = ref.model_grads(E[X], params, X, Y)
    flat, Gf = X.reshape(-1), G.reshape(X.size, -1)
    if how == "per_occurrence":
        for n in range(flat.size):
            ref.sparse_adam_step_(E, m, v, flat[n : n + 1], Gf[n : n + 1], t, lr)
    elif how == "all_rows":
        dE = ref.embedding_backward(X, G, V)
        ref.sparse_adam_step_(E, m, v, np.arange(V), dE, t, lr)
    elif how == "last_write":  # dE[X] += G: numpy keeps one occurrence of a repeated id
        dE = np.zeros_like(E)
        dE[flat] += Gf
        rows = np.unique(flat)
        ref.sparse_adam_step_(E, m, v, rows, dE[rows], t, lr)
    else:
        t = {"t_one": 1, "t_plus_one": t + 1}.get(how, t)
        lr = 1e-3 if how == "default_lr" else lr
        ref.sparse_adam_step_(E, m, v, flat, Gf, t, lr)
    if after:
        return ref.model_grads(E[X], params, X, Y)[0]
    return [E, m, v], loss


def _repeats(case):
    X = case.args[4]
    return X.size != np.unique(X).size


def _variant(how, when=None):
    def arrays(case):
        if when is not None and not when(case):
            return None
        return _step(case, how)[0]

    return arrays


MISTAKES = [
    (
        "per_occurrence",
        "a repeated id got one Adam update per occurrence (sparse_adam_step_ called once per "
        "position of X): the fancy-indexing trap of chapter 3. Sum a row's gradients first "
        "(embedding_backward does it) and give each touched row one update with the sum",
        _variant("per_occurrence", _repeats),
    ),
    (
        "last_write",
        "only one occurrence of a repeated id reached the table's gradient: `dE[X] += G` (in "
        "train_step_, or in your embedding_backward) writes each repeated row once. A repeated "
        "id must receive the sum of all its rows of G (np.add.at, as in exercise 2)",
        _variant("last_write", _repeats),
    ),
    (
        "all_rows",
        "rows that X does not touch changed: the update was applied to every row of the table "
        "(with a zero gradient, Adam still decays their moments and moves them). Pass only the "
        "rows that occur in X (np.unique(X)) and their gradients to sparse_adam_step_",
        _variant("all_rows"),
    ),
    (
        "t_one",
        "the step number was not passed on: the update used t = 1 (the bias corrections of the "
        "first step) at a later step. Call sparse_adam_step_ with the t you were given",
        _variant("t_one", lambda c: c.args[6] != 1),
    ),
    (
        "t_plus_one",
        "the step number is off by one (t + 1 used): the caller passes this step's number, 1 "
        "for the first step; pass it to sparse_adam_step_ as it is",
        _variant("t_plus_one"),
    ),
    (
        "default_lr",
        "the learning rate was not passed on: the update used sparse_adam_step_'s default "
        "lr = 1e-3 instead of the lr train_step_ was given",
        _variant("default_lr", lambda c: c.args[7] != 1e-3),
    ),
]


# ------------------------------------------------------------------------------------------
# Judges
# ------------------------------------------------------------------------------------------
def _tol(dtype):
    return (1e-6, 1e-6) if np.dtype(dtype) == np.float64 else (2e-4, 2e-5)


def close(got, want, dtype):
    return _close(got, want, dtype, tol=_tol(dtype))


def _named(case, got, dtype):
    for _name, message, variant in MISTAKES:
        alt = variant(case)
        if alt is not None and all(
            g.shape == a.shape and close(g, a, dtype) for g, a in zip(got, alt, strict=True)
        ):
            return f"{message} (for {case.label})"
    return None


def _where(case, name, g, w, dtype):
    rows = differing_rows(g, w, dtype, tol=_tol(dtype))
    touched = set(np.asarray(case.args[4]).reshape(-1).tolist())
    text = f"{STEP} left wrong values in {name} for {case.label}: rows {rows} differ"
    if rows and not touched.intersection(rows):
        text += " and none of them is in X (rows that X does not touch must not change)"
    if shown(case) and rows:
        text += f"; {name}[{rows[0]}] is {fmt(g[rows[0]])}, expected {fmt(w[rows[0]])}"
    return text + "."


def update_judge(case, got, want):
    """Problems with the call, then shapes and dtypes, then values (a named mistake first)."""
    problem = common_problems(case, got, want, STEP)
    if problem or want.error_type is not None:
        return problem
    dtype = want.values[0].dtype
    for name, g, w in zip(GRADED, got.values, want.values, strict=True):
        if g.shape != w.shape or g.dtype != w.dtype:
            return (
                f"{STEP} changed {name} from {w.dtype} {w.shape} to {g.dtype} {g.shape} for "
                f"{case.label}: update the caller's arrays in place, keeping their shape and dtype."
            )
    if all(close(g, w, dtype) for g, w in zip(got.values, want.values, strict=True)):
        return None
    if all(close(g, np.asarray(a), dtype) for g, a in zip(got.values, case.args[:3], strict=True)):
        return (
            f"the caller's E, m and v did not change for {case.label}: {STEP} must update them "
            "in place (sparse_adam_step_ does, if you hand it the caller's arrays, not copies)."
        )
    named = _named(case, got.values, dtype)
    if named:
        return named
    for name, g, w in zip(GRADED, got.values, want.values, strict=True):
        if not np.all(np.isfinite(g.astype(np.float64))):
            return f"{STEP} left NaN or inf in {name} for {case.label}; the expected values are finite."
        if not close(g, w, dtype):
            return _where(case, name, g, w, dtype)
    return None


def loss_judge(case, got, want):
    """The loss before the update, returned as one float (E, m, v may change: they are the
    step's outputs, graded by the other two checks)."""
    got = dataclasses.replace(got, modified=[i for i in got.modified if i > 2])
    if got.returned_none and got.error_type is None:
        return f"{STEP} returned None for {case.label}. Did you forget the return statement?"
    problem = common_problems(case, got, want, STEP)
    if problem or want.error_type is not None:
        return problem
    if got.is_tuple or got.value is None or got.value.size != 1:
        return f"{STEP} should return the loss (one float) for {case.label}, got {', '.join(got.types)}."
    g, w = float(got.value.reshape(())), float(want.value.reshape(()))
    if np.isclose(g, w, rtol=1e-5, atol=1e-6):
        return None
    if np.isclose(g, _step(case, after=True), rtol=1e-5, atol=1e-6):
        return (
            f"{STEP} returned the loss after the update for {case.label}: return the loss that "
            "model_grads computed before the table changed (the loss of this batch at this step)."
        )
    shown_w = f", expected {w:.6f}" if shown(case) else ""
    return f"{STEP} returned the loss {g:.6f} for {case.label}{shown_w}, which is not right."


# ------------------------------------------------------------------------------------------
# Exercises 1 to 3, briefly
# ------------------------------------------------------------------------------------------
@check("test_forward", "embedding_forward", ch01.forward_judge)
def forward():
    """embedding_forward: each id is replaced by its row, ids of any shape, the table's dtype"""
    E = _table(27, 4, 800)
    ids2 = _ids((16, 3), 27, 801)
    return [
        ch01.fwd("a batch of contexts, ids of shape (16, 3)", E, ids2),
        ch01.fwd("one id repeated", E, np.full(7, 5)),
        ch01.fwd("a float32 table", _table(9, 3, 802, np.float32), _ids((2, 3), 9, 803)),
        ch01.fwd("empty ids", E, np.zeros((0, 3), dtype=np.int64)),
    ]


@check("test_backward", "embedding_backward", ch02.backward_judge)
def backward():
    """embedding_backward: a repeated id receives the sum of its rows; ids of any shape"""
    z = _zipf(60, 27, 810)
    ids2 = _ids((16, 3), 27, 811)
    return [
        ch02.bwd("60 Zipf ids (a few repeat often)", z, _grads(z, 4, 812), 27),
        ch02.bwd("a batch of contexts, ids of shape (16, 3)", ids2, _grads(ids2, 4, 813), 27),
        ch02.bwd("float32 gradients", ids2, _grads(ids2, 2, 814, np.float32), 27),
    ]


@check("test_adam", "sparse_adam_step_", ch03.adam_judge)
def adam():
    """sparse_adam_step_: one lazy Adam update per touched row, with its summed gradient"""
    z = _zipf(40, 27, 820)
    ids2 = _ids((8, 3), 27, 821)
    return [
        ch03.step(
            "40 Zipf ids from zero moments, t = 1",
            *ch03.zeros3(27, 4),
            z,
            _grads(z, 4, 822),
            1,
            0.01,
        ),
        ch03.step(
            "ids of shape (8, 3), t = 7",
            *ch03.state(27, 4, 823),
            ids2,
            _grads(ids2, 4, 824),
            7,
            0.05,
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
        state_case("step 200 of a table in training", 15, 2, 844, _ids((6, 3), 15, 845), 200, 0.01),
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


@check("test_train_step_repeated", STEP, update_judge)
def train_step_repeated():
    """train_step_: an id repeated in the batch gets one update with its summed gradient"""
    boundary = np.zeros((8, 3), dtype=np.int64)
    boundary[:, 2] = _ids(8, 27, 850)  # word starts: the boundary token 0 fills the context
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
