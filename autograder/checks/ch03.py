"""Chapter 3: the fancy-indexing trap. Hidden checks for its exercise, a lazy sparse Adam step.

``sparse_adam_step_(E, m, v, ids, grad_out, t, lr, betas, eps)`` returns None and changes three
of its arguments, so every case grades E, m and v after the call (``output=("args", (0, 1, 2))``);
a change to ids or grad_out is reported as a modified input. Whether it returned None is checked
in one test cell.

Each classic mistake is modelled as a variant of the rule (:func:`_adam` with one thing wrong),
and a wrong answer is named when every array it left behind equals either the reference's or the
mistake's. Messages name the arrays and rows that differ; they print expected values only for
cases :func:`~.compare.shown` allows (the small worked examples the visible tests also show).
"""

from __future__ import annotations

import numpy as np

from .data import distinct as _distinct
from .data import grads as _grads
from .data import ids as _ids
from .data import table as _table
from .data import zipf as _zipf
from .framework import Case, checks_for, common_problems, differing_rows, fmt, shown, tolerance
from .framework import close as _close_to

A = "03_fancy_indexing_trap"
STEP = "sparse_adam_step_"
NAMES = ["E", "m", "v", "ids", "grad_out", "t", "lr", "betas", "eps"]
GRADED = ("E", "m", "v")
check = checks_for(A)


def step(label, E, m, v, ids, grad_out, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, **meta):
    """A case calling sparse_adam_step_ with every argument given positionally."""
    return Case(
        label,
        (E, m, v, ids, grad_out, t, lr, betas, eps),
        output=("args", (0, 1, 2)),
        meta={"arg_names": NAMES, **meta},
    )


# ------------------------------------------------------------------------------------------
# The rule, and the classic mistakes as variants of it (float64 inside, the case's dtype out)
# ------------------------------------------------------------------------------------------
DEFAULTS = (1e-3, (0.9, 0.999), 1e-8)  # lr, betas, eps


def _parts(case):
    E, m, v, ids, g, t, lr, betas, eps = (*case.args, *DEFAULTS[len(case.args) - 6 :])
    flat = np.asarray(ids).reshape(-1).astype(np.int64)
    d = np.shape(E)[1]
    g = np.asarray(g, dtype=np.float64).reshape(flat.size, d)
    arrays = [np.array(a, dtype=np.float64) for a in (E, m, v)]
    return arrays, flat, g, int(t), float(lr), betas, float(eps)


def _coalesced(flat, g, how):
    """(rows, one gradient per row) for each write the variant makes, in order."""
    if how == "per_occurrence":
        return [(flat[n : n + 1], g[n : n + 1]) for n in range(flat.size)]
    rows, slot = np.unique(flat, return_inverse=True)
    if how == "last":  # m[ids] = ...: numpy keeps the last write of each repeated row
        last = np.zeros(rows.size, dtype=np.int64)
        last[slot.reshape(-1)] = np.arange(flat.size)
        return [(rows, g[last])]
    sums = np.zeros((rows.size, g.shape[1]))
    np.add.at(sums, slot.reshape(-1), g)
    if how == "mean":
        sums /= np.bincount(slot.reshape(-1))[:, None]
    return [(rows, sums)]


def _adam(case, how="sum", lazy=True, bias=True, eps_mode="plain", dt=0, first_t1=False):
    """E, m, v after the step, with one thing changed from SparseAdam's rule."""
    (E, m, v), flat, g, t, lr, (b1, b2), eps = _parts(case)
    dtype = np.asarray(case.args[0]).dtype
    if flat.size == 0:
        return [a.astype(dtype) for a in (E, m, v)]
    t = t + dt
    for rows, gr in _coalesced(flat, g, how):
        if not lazy:  # dense Adam: every row's moments decay, every row moves
            dense = np.zeros_like(E)
            dense[rows] = gr
            rows, gr = np.arange(E.shape[0]), dense
        fresh = np.all(m[rows] == 0, axis=1) & np.all(v[rows] == 0, axis=1)
        m[rows] = b1 * m[rows] + (1 - b1) * gr
        v[rows] = b2 * v[rows] + (1 - b2) * gr * gr
        tr = np.where(fresh, 1, t)[:, None] if first_t1 else np.full((rows.size, 1), t)
        c1, c2 = (1 - b1**tr, 1 - b2**tr) if bias else (1.0, 1.0)
        if eps_mode == "inside":
            denom = np.sqrt(v[rows] + eps)
        elif eps_mode == "corrected":
            denom = np.sqrt(v[rows]) + eps * np.sqrt(c2)
        else:
            denom = np.sqrt(v[rows]) + eps
        E[rows] -= lr * np.sqrt(c2) / c1 * m[rows] / denom
    return [a.astype(dtype) for a in (E, m, v)]


def _repeats(case):
    flat = np.asarray(case.args[3]).reshape(-1)
    return flat.size != np.unique(flat).size


def _variant(when=None, **how):
    def model(case):
        if when is not None and not when(case):
            return None
        return _adam(case, **how)

    return model


def _unchanged(case):
    flat = np.asarray(case.args[3]).reshape(-1)
    return None if flat.size == 0 else [np.array(a) for a in case.args[:3]]


PER_OCCURRENCE = (
    "a repeated id was given one Adam update per occurrence: SparseAdam sums a row's gradients "
    "first (coalesces them) and updates its moments and the row once with the sum. Adam is not "
    "linear in g (it squares g and divides by sqrt(v)), so k small steps are not one step with "
    "the summed gradient: this is the fancy-indexing trap in a new form"
)
LAST_WRITE = (
    "only one occurrence of a repeated id reached m and v: `m[ids] = b1 * m[ids] + (1 - b1) * g` "
    "writes each repeated row once, keeping the last occurrence's gradient (the fancy-indexing "
    "trap). Sum the gradients per row first (np.add.at, np.unique + bincount), then update the "
    "distinct rows"
)
NOT_IN_PLACE = (
    "the caller's arrays did not change: sparse_adam_step_ must update E, m and v in place. "
    "`E = E - ...`, `m = b1 * m + ...` or a converted copy (`E.astype(np.float64)`, "
    "`np.asarray(E, dtype=np.float64)` on a float32 table) make new arrays and only rebind the "
    "local name; write into the arrays instead (E[rows] -= ..., m[rows] = ...) and keep their dtype"
)

MISTAKES = [
    ("per_occurrence", PER_OCCURRENCE, _variant(_repeats, how="per_occurrence")),
    ("last_write", LAST_WRITE, _variant(_repeats, how="last")),
    (
        "averaged",
        "repeated ids were averaged: a row's gradient is the sum of its occurrences' gradients, "
        "not their mean",
        _variant(_repeats, how="mean"),
    ),
    ("not_in_place", NOT_IN_PLACE, _unchanged),
    (
        "dense",
        "rows that ids does not touch changed (dense Adam): SparseAdam is lazy, so the moments "
        "of untouched rows do not decay and those rows do not move; update only the rows in ids",
        _variant(lazy=False),
    ),
    (
        "no_bias_correction",
        "the bias correction is missing: the step size is lr * sqrt(1 - b2**t) / (1 - b1**t), "
        "not lr (m and v start at zero, so early moments are too small without it)",
        _variant(bias=False),
    ),
    (
        "eps_inside",
        "eps went inside the square root: the denominator is sqrt(v) + eps, not sqrt(v + eps)",
        _variant(eps_mode="inside"),
    ),
    (
        "eps_corrected",
        "eps was bias-corrected (m_hat / (sqrt(v_hat) + eps), torch.optim.Adam's form): "
        "SparseAdam folds both corrections into the step size and adds eps to the uncorrected "
        "sqrt(v), so the update is step_size * m / (sqrt(v) + eps)",
        _variant(eps_mode="corrected"),
    ),
    (
        "t_plus_one",
        "the step number is off by one (t + 1 used): the caller passes this step's number, 1 for "
        "the first step; do not add 1 to it",
        _variant(dt=1),
    ),
    (
        "t_minus_one",
        "the step number is off by one (t - 1 used): the caller passes this step's number, 1 for "
        "the first step, and the bias corrections use it as it is",
        _variant(lambda c: c.args[5] > 1, dt=-1),
    ),
    (
        "per_row_t",
        "a row touched for the first time was bias-corrected as if t were 1: a step counter per "
        "row. SparseAdam keeps one step counter per table (the t you are given), even for rows "
        "whose moments are still zero",
        _variant(first_t1=True),
    ),
]


# ------------------------------------------------------------------------------------------
# The judge
# ------------------------------------------------------------------------------------------
def _tol(dtype):
    """float32: the framework's tolerance. float64: rtol = atol scale = 1e-6, looser than the
    framework's 1e-9, so that a mistake whose effect scales with eps (1e-8 by default) costs the
    cell that tests eps, not every cell; every other modelled mistake moves values far more."""
    return tolerance(dtype) if np.dtype(dtype) != np.float64 else (1e-6, 1e-6)


def close(got, want, dtype):
    return _close_to(got, want, dtype, tol=_tol(dtype))


def _error_hint(case, got):
    """An exception that usually has one cause."""
    ids = np.asarray(case.args[3])
    err = got.error or ""
    if got.error_type == "ZeroDivisionError" and case.args[5] == 1:
        return (
            f"{STEP} divided by zero for {case.label}: at the first step (t = 1), 1 - b1**t is "
            "1 - b1, not 0; a zero there means the step number is off by one (t - 1 used). The "
            "caller passes 1 for the first step"
        )
    if ids.size == 0 and ("size 0" in err or "zero-size" in err):
        return (
            f"{STEP} raised {got.error_type} for {case.label}: {err}. With no ids there is no "
            "step: reshape with the width (grad_out.reshape(-1, d), d = E.shape[1]), or return "
            "early when ids is empty"
        )
    if ids.ndim != 1 and ids.size:
        return (
            f"{STEP} raised {got.error_type} for {case.label} (ids of shape {ids.shape}): it "
            "works only for 1-D ids. ids can have any shape: flatten ids to (N,) and grad_out "
            f"to (N, d) first (reshape). The error was: {err}"
        )
    return None


def _named(case, got, want, dtype):
    """The message of the first modelled mistake that explains every wrong array."""
    wrong = [not close(g, w, dtype) for g, w in zip(got, want, strict=True)]
    for _name, message, model in MISTAKES:
        alt = model(case)
        if alt is None:
            continue
        explains = any(
            bad and not close(a, w, dtype) and close(g, a, dtype)
            for bad, g, a, w in zip(wrong, got, alt, want, strict=True)
        )
        fits = all(
            not bad or (g.shape == a.shape and close(g, a, dtype))
            for bad, g, a in zip(wrong, got, alt, strict=True)
        )
        if explains and fits:
            return f"{message} (for {case.label})"
    return None


def _where(case, name, g, w, dtype):
    rows = differing_rows(g, w, dtype, tol=_tol(dtype))
    touched = set(np.asarray(case.args[3]).reshape(-1).tolist())
    untouched = [r for r in rows if r not in touched]
    text = f"{STEP} left wrong values in {name} for {case.label}: rows {rows} differ"
    if untouched and len(untouched) == len(rows):
        text += " and none of them is in ids (rows that ids does not touch must not change)"
    if shown(case) and rows:
        r = rows[0]
        text += f"; {name}[{r}] is {fmt(g[r])}, expected {fmt(w[r])}"
    return text + "."


def adam_judge(case, got, want):
    """Problems with the call, then shapes and dtypes, then values (a named mistake first)."""
    hint = _error_hint(case, got) if got.error_type not in (None, "NotImplementedError") else None
    problem = hint or common_problems(case, got, want, STEP)
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
    named = _named(case, got.values, want.values, dtype)
    if named:
        return named
    for name, g, w in zip(GRADED, got.values, want.values, strict=True):
        if not np.all(np.isfinite(g.astype(np.float64))) and np.all(np.isfinite(w)):
            return f"{STEP} left NaN or inf in {name} for {case.label}; the expected values are finite."
        if not close(g, w, dtype):
            return _where(case, name, g, w, dtype)
    return None


def in_place_judge(case, got, want):
    msg = adam_judge(case, got, want)
    if msg:
        return msg
    if not got.returned_none:
        return (
            f"{STEP} returned something for {case.label}; it should return None. It updates E, m "
            "and v in place, so there is nothing to return (like list.sort(), or PyTorch's "
            "optimizer.step(), which changes the parameters and its state)."
        )
    return None


# ------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------
WORKED_G = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5], [2.0, 1.0, 0.0]])


def zeros3(V, d, dtype=np.float64):
    return tuple(np.zeros((V, d), dtype=dtype) for _ in range(3))


def state(V, d, seed, dtype=np.float64, fresh=()):
    """E, m, v as after some earlier steps: random moments (v > 0), zero for the ``fresh`` rows
    (never touched before)."""
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((V, d))
    m = 0.1 * rng.standard_normal((V, d))
    v = 0.01 * rng.random((V, d)) + 1e-4
    m[list(fresh)] = 0.0
    v[list(fresh)] = 0.0
    return tuple(a.astype(dtype) for a in (E, m, v))


def worked():
    """The chapter's worked batch, as the visible test shows it: ids [2, 0, 2] into a zero (4, 3)
    table, t = 1, lr = 0.1."""
    return step(
        "the worked example (ids [2, 0, 2], t = 1, lr = 0.1)",
        *zeros3(4, 3),
        np.array([2, 0, 2]),
        WORKED_G.copy(),
        1,
        0.1,
        shown=True,
    )


# ------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------
@check("test_adam_in_place", STEP, in_place_judge)
def adam_in_place():
    """sparse_adam_step_: E, m and v change in place and the function returns None"""
    ids = _distinct(6, 15, 300)
    return [
        step(
            "ids [3, 1] from zero moments (t = 1, lr = 0.5)",
            *zeros3(4, 2),
            np.array([3, 1]),
            np.array([[1.0, -2.0], [3.0, 4.0]]),
            1,
            0.5,
            shown=True,
        ),
        step("6 distinct ids, t = 4", *state(15, 4, 301), ids, _grads(ids, 4, 302), 4, 0.01),
    ]


@check("test_adam_first_step", STEP, adam_judge)
def adam_first_step():
    """sparse_adam_step_: distinct ids, the first step from zero moments (and the defaults)"""
    ids = _distinct(30, 80, 310)
    few = _distinct(5, 9, 313)
    return [
        step(
            "ids [4, 0], t = 1, lr = 0.1",
            *zeros3(5, 2),
            np.array([4, 0]),
            np.array([[1.0, -1.0], [0.5, 2.0]]),
            1,
            0.1,
            shown=True,
        ),
        step("30 distinct ids, V = 80, d = 8", *zeros3(80, 8), ids, _grads(ids, 8, 311), 1, 0.05),
        Case(
            "5 distinct ids with the default lr, betas and eps",
            (_table(9, 3, 312), *zeros3(9, 3)[1:], few, _grads(few, 3, 314), 1),
            output=("args", (0, 1, 2)),
            meta={"arg_names": NAMES},
        ),
    ]


@check("test_adam_repeated", STEP, adam_judge)
def adam_repeated():
    """sparse_adam_step_: a repeated id gets one update with the sum of its gradients"""
    same = np.full(500, 3)
    zipf = _zipf(2000, 300, 320)
    ids2 = _ids((16, 32), 6, 321)
    cancel = np.array([1, 4, 1])
    return [
        worked(),
        step(
            "ids [2, 0, 2] into zero moments at t = 3",
            *zeros3(4, 3),
            np.array([2, 0, 2]),
            WORKED_G.copy(),
            3,
            0.01,
        ),
        step(
            "ids [1, 1, 1, 4, 1], t = 2",
            *zeros3(5, 2),
            np.array([1, 1, 1, 4, 1]),
            _grads(np.zeros(5), 2, 322),
            2,
            0.3,
        ),
        step("the same id 500 times", *zeros3(10, 4), same, _grads(same, 4, 323) + 0.5, 1, 0.01),
        step(
            "2,000 Zipf-distributed ids (the top id hundreds of times)",
            *state(300, 8, 324),
            zipf,
            _grads(zipf, 8, 325),
            9,
            0.05,
        ),
        step(
            "ids of shape (16, 32) drawn from V = 6", *zeros3(6, 3), ids2, _grads(ids2, 3, 326), 1
        ),
        step(
            "id 1 twice with gradients that cancel (its moments still decay)",
            *state(6, 2, 327),
            cancel,
            np.array([[1.0, -2.0], [0.5, 0.5], [-1.0, 2.0]]),
            5,
            0.1,
        ),
    ]


@check("test_adam_lazy", STEP, adam_judge)
def adam_lazy():
    """sparse_adam_step_: untouched rows of E, m and v stay exactly as they were (lazy Adam)"""
    ids = _distinct(8, 40, 330)
    new = np.array([0, 2, 5])
    rep = _ids(60, 12, 333)
    return [
        step(
            "8 distinct ids into a (40, 4) state, t = 6",
            *state(40, 4, 331),
            ids,
            _grads(ids, 4, 332),
            6,
            0.01,
        ),
        step(
            "rows 0, 2 and 5 touched for the first time at t = 5",
            *state(8, 3, 334, fresh=(0, 2, 5, 7)),
            new,
            _grads(new, 3, 335),
            5,
            0.1,
        ),
        step(
            "60 ids from V = 12, t = 20",
            *state(12, 3, 336, fresh=(1,)),
            rep,
            _grads(rep, 3, 337),
            20,
            0.05,
        ),
    ]


@check("test_adam_bias_and_eps", STEP, adam_judge)
def adam_bias_and_eps():
    """sparse_adam_step_: the bias corrections use the table's t, eps is added to sqrt(v)"""
    ids = _distinct(10, 30, 340)
    return [
        step(
            "eps = 0.1 at t = 1 (eps is not bias-corrected)",
            *zeros3(30, 4),
            ids,
            _grads(ids, 4, 341),
            1,
            0.01,
            (0.9, 0.999),
            0.1,
        ),
        step(
            "t = 2, betas (0.5, 0.9)",
            *state(30, 4, 342),
            ids,
            _grads(ids, 4, 343),
            2,
            0.1,
            (0.5, 0.9),
        ),
        step("t = 1000", *state(30, 4, 344), ids, _grads(ids, 4, 345), 1000, 0.01),
        step(
            "eps = 1e-2 with small gradients, t = 3",
            *state(30, 4, 346),
            ids,
            0.01 * _grads(ids, 4, 347),
            3,
            0.01,
            (0.9, 0.999),
            0.01,
        ),
        step(
            "zero moments at t = 3 (the table's counter, not the row's)",
            *zeros3(30, 4),
            ids,
            _grads(ids, 4, 348),
            3,
            0.01,
        ),
    ]


@check("test_adam_shapes_and_edges", STEP, adam_judge)
def adam_shapes_and_edges():
    """sparse_adam_step_: ids of any shape (2-D, 3-D, 0-d, empty), V = 1, narrow integer ids"""
    ids2 = _ids((4, 5), 40, 350)
    ids3 = _ids((2, 3, 4), 30, 351)
    i32 = _distinct(5, 9, 352, np.int32)
    u8 = _ids(9, 200, 353).astype(np.uint8)
    return [
        step("ids of shape (4, 5)", *state(40, 3, 354), ids2, _grads(ids2, 3, 355), 3, 0.1),
        step("ids of shape (2, 3, 4)", *state(30, 2, 356), ids3, _grads(ids3, 2, 357), 2, 0.2),
        step("a 0-d id (np.array(4))", *state(6, 2, 358), np.array(4), np.array([1.0, -1.0]), 2),
        step(
            "ids of shape (1, 1)",
            *zeros3(6, 3),
            np.array([[2]]),
            _grads(np.zeros((1, 1)), 3, 359),
            1,
        ),
        step(
            "empty ids of shape (0,)",
            *state(3, 2, 360),
            np.array([], dtype=np.int64),
            np.zeros((0, 2)),
            4,
        ),
        step(
            "empty ids of shape (2, 0)",
            *state(4, 3, 361),
            np.zeros((2, 0), dtype=np.int64),
            np.zeros((2, 0, 3)),
            4,
        ),
        step(
            "a table with one row (V = 1)",
            *state(1, 3, 362),
            np.array([0, 0]),
            _grads(np.zeros(2), 3, 363),
            2,
            0.5,
        ),
        step("int32 ids", *state(9, 2, 364), i32, _grads(i32, 2, 365), 3, 0.1),
        step("uint8 ids", *state(200, 2, 366), u8, _grads(u8, 2, 367), 3, 0.1),
    ]


@check("test_adam_float32_and_inputs", STEP, adam_judge)
def adam_float32_and_inputs():
    """sparse_adam_step_: float32 arrays stay float32, and ids and grad_out are not modified"""
    ids = _ids(20, 25, 370)
    i2 = _ids((3, 4), 12, 371)
    return [
        step(
            "a float32 table",
            *state(25, 6, 372, np.float32),
            ids,
            _grads(ids, 6, 373, np.float32),
            3,
            0.01,
        ),
        step("a float64 table", *state(25, 6, 374), ids, _grads(ids, 6, 375), 3, 0.01),
        step(
            "a float32 table from zero moments, ids of shape (3, 4)",
            *zeros3(12, 3, np.float32),
            i2,
            _grads(i2, 3, 376, np.float32),
            1,
            0.1,
        ),
    ]
