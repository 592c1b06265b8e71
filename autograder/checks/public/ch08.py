"""The capstone's public judges and mistake models (pasted into the released notebook).

Exercises 1 to 3's functions get compact judges of their own here (a released notebook holds one
chapter's public module only), naming their key mistakes; ``train_step_`` gets two: the loss it
returns, and the E, m and v it leaves (``output=("args", (0, 1, 2))``), with or without a padding
row (``padding_idx``, as nn.Embedding's: that row and its moments never change).

Every mistake is modelled from the case and the expected values, never by running the rule: the
summed gradient of a touched row (g_hat) is read back from the expected first moment,
g_hat = (m1 - b1 * m0) / (1 - b1), and the expected step is D = E0 - E1, so a mistake in t or lr
scales D and a mistake in the gradient changes m1 and v1 by what it does to g_hat. The
per-position gradients G = dL/dH (``meta["G"]``, what the given model_grads returns), the sum of
the padding positions' rows of G (``meta["g_pad"]``) and the loss after the update
(``meta["loss_after"]``) come with the case where a model needs them.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..compare import close, differing_rows, expected, fmt, shown
from ..judges import (
    EPS_CORRECTED,
    EPS_INSIDE_SQRT,
    RETURNED_NONE,
    ROWS_NOT_COALESCED,
    ROWS_UNSORTED,
    WRONG_DTYPE,
    Diagnosis,
    Mistake,
    array_judge,
    common_problems,
    eps_moved_factor,
    explains,
    in_place_problem,
    mistake_id,
    row_ids_problem,
)
from ..visible import make_expect

FWD, ROWS, ADAM, STEP = (
    "embedding_forward",
    "embedding_backward_rows",
    "sparse_adam_step_",
    "train_step_",
)
TIED = "train_step_tied_"
GIVEN = {STEP: "model_grads", TIED: "tied_model_grads"}  # the given function each step calls
GRADED = ("E", "m", "v")
B1, B2, EPS, LR = 0.9, 0.999, 1e-8, 1e-3  # sparse_adam_step_'s defaults


def _tol(dtype):
    return (1e-6, 1e-6) if np.dtype(dtype) == np.float64 else (2e-4, 2e-5)


def near(got, want, dtype):
    """close, with the tolerance of a whole Adam step."""
    return close(got, want, dtype, tol=_tol(dtype))


def _step_size(lr, t, b1=B1, b2=B2):
    """lr * sqrt(1 - b2**t) / (1 - b1**t): the step size SparseAdam uses at step t."""
    return lr * np.sqrt(1 - b2**t) / (1 - b1**t)


# ------------------------------------------------------------------------------------------
# Exercises 1 and 2
# ------------------------------------------------------------------------------------------
def _flattened(case, want):
    E, ids = case.args
    return want.reshape(-1, np.shape(E)[1]) if np.ndim(ids) != 1 else None


def _flat(ids):
    return np.asarray(ids).reshape(-1).astype(np.int64)


def _rows_models(case, w_rows, w_vals):
    """values as the classic mistakes give them, from the expected rows and values: one
    occurrence of a repeated id kept (``values[slot] += g``), or the rows averaged."""
    ids, g = _flat(case.args[0]), np.asarray(case.args[1])
    if ids.size == np.unique(ids).size:
        return {}
    g = g.reshape(ids.size, g.shape[-1])
    slot = np.searchsorted(w_rows, ids)
    counts = np.bincount(slot, minlength=w_rows.size)[:, None]
    last = np.zeros(w_vals.shape)
    last[slot] = g
    return {OVERWRITE: last, AVERAGED: w_vals / np.maximum(counts, 1)}


TRAP = (
    "repeated ids overwrote each other instead of accumulating: an id that occurs k times must "
    "receive the sum of its k gradients, but values[slot] += g (or dE[ids] += g) keeps only one of "
    "them, because numpy reads all rows first and writes each repeated row once. Accumulate with "
    "a loop over positions, np.add.at, or np.bincount"
)

FLATTENED = Mistake(
    "flattened",
    "embedding_forward lost the shape of ids: the result must have shape ids.shape + "
    "(d,); keep ids' shape (no reshape(-1) or ravel) or reshape the result back",
    _flattened,
)
OVERWRITE = Mistake("trap-overwrite", TRAP)
AVERAGED = Mistake(
    "averaged",
    "repeated ids were averaged instead of summed: an id that occurs k times gets the "
    "sum of its k gradients, not their mean",
)
forward_judge = array_judge(FWD, mistakes=[FLATTENED])


def rows_judge(case, got, want):
    """(rows, values) of embedding_backward_rows: exercise 2's Part B, compactly."""
    problem = common_problems(case, got, want, ROWS)
    if problem or want.error_type is not None:
        return problem
    problem = row_ids_problem(case, got, want, ROWS)
    if problem:
        return problem
    (rows, vals), (w_rows, w_vals) = got.values, want.values
    if vals.shape != w_vals.shape:
        return f"values should have shape (len(rows), d) = {w_vals.shape} for {case.label}; got {vals.shape}."
    if not close(vals, w_vals, w_vals.dtype):
        for mistake, alt in _rows_models(case, w_rows, w_vals).items():
            if close(vals, alt, w_vals.dtype):
                return mistake.on(case)
        bad = differing_rows(vals, w_vals, w_vals.dtype)
        k = bad[0] if bad else 0
        return (
            f"values are wrong for {case.label} at rows {bad} of values: values[{k}] (id "
            f"{rows[k]}) is {fmt(vals[k])}{expected(case, fmt(w_vals[k]), ', expected ')}."
        )
    if vals.dtype != w_vals.dtype:
        return WRONG_DTYPE.said(
            f"{ROWS} returned values of dtype {vals.dtype} for {case.label}; expected "
            f"{w_vals.dtype} (grad_out's dtype: np.zeros is float64 unless given dtype=)."
        )
    return None


# ------------------------------------------------------------------------------------------
# A step of Adam, as its expected arrays say (exercise 3 and the training step)
# ------------------------------------------------------------------------------------------
class _Step:
    """E, m, v before (the case) and after (the expected values) a lazy Adam step, float64;
    ``flat`` and ``g``: the ids and the per-position gradients, when known."""

    pad = None  # the padding row (a training step's), or None
    g_pad = None  # the sum of the padding positions' rows of G, when known

    def __init__(self, before, after, flat, g, t, lr):
        self.E0, self.m0, self.v0 = (np.array(a, dtype=np.float64) for a in before)
        self.E1, self.m1, self.v1 = (np.array(a, dtype=np.float64) for a in after)
        self.flat, self.t, self.lr = flat, int(t), float(lr)
        self.g = None if g is None else np.asarray(g, dtype=np.float64).reshape(flat.size, -1)
        self.rows, self.counts = np.unique(flat, return_counts=True)
        self.g_hat = (self.m1 - B1 * self.m0) / (1 - B1)  # each row's summed gradient
        self.D = self.E0 - self.E1

    def scaled(self, factor):
        return [self.E0 - self.D * factor, self.m1, self.v1]

    def with_v(self, v):
        """[E, m, v] when the second moment is v (m as expected): each row's step scales by
        (sqrt(v1) + eps) / (sqrt(v) + eps)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            factor = (np.sqrt(self.v1) + EPS) / (np.sqrt(v) + EPS)
        return [self.E0 - self.D * np.where(np.isfinite(factor), factor, 1.0), self.m1, v]

    def eps_moved(self, kind):
        """[E, m, v] when eps sits elsewhere in the denominator (exercise 3's models, the same
        judges.eps_moved_factor)."""
        return self.scaled(eps_moved_factor(self.v1, EPS, B2, self.t, kind))

    def sum_of_squares(self):
        """v from the sum of a repeated row's squared gradients instead of the square of the sum."""
        v = self.v1.copy()
        for i, k in zip(self.rows, self.counts, strict=True):
            if k > 1:
                v[i] += (1 - B2) * ((self.g[self.flat == i] ** 2).sum(0) - self.g_hat[i] ** 2)
        return self.with_v(v)

    def moments_with(self, gradient_of):
        """[None, m, v] when row i's gradient is gradient_of(i) instead of the sum."""
        m, v = self.m1.copy(), self.v1.copy()
        for i in self.rows:
            gi = gradient_of(i)
            m[i] += (1 - B1) * (gi - self.g_hat[i])
            v[i] += (1 - B2) * (gi**2 - self.g_hat[i] ** 2)
        return [None, m, v]

    def per_occurrence(self):
        """k updates for an id that occurs k times, one per occurrence (E not predicted)."""
        m, v = self.m1.copy(), self.v1.copy()
        for i, k in zip(self.rows, self.counts, strict=True):
            gs, later = self.g[self.flat == i], np.arange(k - 1, -1, -1)[:, None]
            m[i] += (B1**k - B1) * self.m0[i] + (1 - B1) * ((B1**later * gs).sum(0) - self.g_hat[i])
            v[i] += (B2**k - B2) * self.v0[i] + (1 - B2) * (
                (B2**later * gs * gs).sum(0) - self.g_hat[i] ** 2
            )
        return [None, m, v]

    def padding_trained(self):
        """[None, m, v] when the padding row takes its Adam step like any other row."""
        if self.pad is None or self.g_pad is None:
            return None
        p, g = self.pad, self.g_pad
        m, v = self.m1.copy(), self.v1.copy()
        m[p] = B1 * self.m0[p] + (1 - B1) * g
        v[p] = B2 * self.v0[p] + (1 - B2) * g * g
        return [None, m, v]

    def padding_zeroed(self):
        """[None, m, v] when the padding row stays in the step with a zero gradient: its
        moments decay (and the row moves by what is left of m)."""
        p = self.pad
        if p is None or not (self.m0[p].any() or self.v0[p].any()):
            return None
        m, v = self.m1.copy(), self.v1.copy()
        m[p], v[p] = B1 * self.m0[p], B2 * self.v0[p]
        return [None, m, v]

    def dense(self):
        """The rows not touched decay their moments too (E not predicted)."""
        untouched = np.setdiff1d(np.arange(self.E0.shape[0]), self.rows)
        m, v = self.m1.copy(), self.v1.copy()
        m[untouched] *= B1
        v[untouched] *= B2
        return [None, m, v]


def _named(case, got, want, dtype, mistakes, steps, match=None):
    """The first mistake whose model explains the wrong arrays (judges.explains). The models of
    this module's step mistakes take the step (a _Step), not (case, want)."""
    if steps is None:
        return None
    match = match or near
    for m in mistakes:
        for model in m.models():
            alt = model(steps)
            if alt is not None and explains(got, want, alt, lambda a, b: match(a, b, dtype)):
                return m.on(case)
    return None


def _repeated(s):
    return bool((s.counts > 1).any())


def _kept(got, want, steps, dtype, match=near):
    """The names of the arrays the caller still holds as they were (a copy updated, a name
    rebound), where every other one is right: [] when none is, or another is wrong."""
    if steps is None:
        return []
    kept = []
    for name, g, w, b in zip(GRADED, got, want, (steps.E0, steps.m0, steps.v0), strict=True):
        if match(g, w, dtype):
            continue
        if not match(g, b, dtype):
            return []
        kept.append(name)
    return kept


IN_PLACE_SPARSE = "E[rows] -= ..., m[rows] = ..."  # how Part B's step writes in place


def kept_text(fname, kept, case, how=IN_PLACE_SPARSE, note="", end=""):
    """The message for arrays the caller's copy of which did not change (the others did);
    ``how``: the in-place writes to suggest; ``note``: added in the parenthesis; ``end``: a
    sentence to add."""
    others = [n for n in GRADED if n not in kept]
    said = " and ".join(kept)
    note = f"; {note}" if note else ""
    return (
        f"{said} did not change ({' and '.join(others)} did) for {case.label}: {fname} must "
        f"update the caller's arrays in place (no copies, no rebinding: {how}, not "
        f"E = E.copy() or m = b1 * m + ...{note}).{end}"
    )


def _unchanged_problem(case, got, want, steps, unchanged, kept_message, match):
    """The caller's arrays as they were: all of them (``unchanged``), or some while the others
    are right (``kept_message(case, kept, steps)``, the text); None otherwise."""
    if steps is None:
        return None
    dtype = want.values[0].dtype
    before = (steps.E0, steps.m0, steps.v0)
    if all(match(g, a, dtype) for g, a in zip(got.values, before, strict=True)):
        return unchanged.on(case)
    kept = _kept(got.values, want.values, steps, dtype, match)
    return unchanged.said(kept_message(case, kept, steps)) if kept else None


def _arrays_judge(
    fname, ids_name, parts, mistakes, unchanged, hint="", match=None, kept_message=None
):
    """Judge a function that changes E, m and v in place (arguments 0, 1, 2); ``hint`` ends
    the message of a difference no model names; ``match(a, b, dtype)``: how a mistake's
    prediction, and the arrays as they were, are compared (default: ``near``);
    ``kept_message(case, names, steps)``: the message for some arrays left as they were while
    the others are right (default: kept_text's)."""
    kept_message = kept_message or (lambda case, names, steps: kept_text(fname, names, case))

    def judge(case, got, want):
        problem = common_problems(case, got, want, fname)
        if problem or want.error_type is not None:
            return problem
        dtype = want.values[0].dtype
        problem = in_place_problem(case, got, want, fname, GRADED)
        if problem:
            return problem
        if all(near(g, w, dtype) for g, w in zip(got.values, want.values, strict=True)):
            return None
        steps = parts(case, want.values)
        problem = _unchanged_problem(case, got, want, steps, unchanged, kept_message, match or near)
        if problem:
            return problem
        named = _named(case, got.values, want.values, dtype, mistakes, steps, match)
        if named:
            return named
        touched = set() if steps is None else set(steps.flat.tolist())
        dense = getattr(steps, "every_row", False)  # a dense step moves untouched rows too
        pad = None if steps is None else steps.pad
        for k in (1, 2, 0):  # m and v first: E's step is computed from them
            name, g, w = GRADED[k], got.values[k], want.values[k]
            if not np.all(np.isfinite(g.astype(np.float64))):
                return f"{fname} left NaN or inf in {name} for {case.label}; the expected values are finite."
            if not near(g, w, dtype):
                rows = differing_rows(g, w, dtype, tol=_tol(dtype))
                text = f"{fname} left wrong values in {name} for {case.label}: rows {rows} differ"
                if pad in rows:
                    text += f" (row {pad} is the padding row: it and its moments never change)"
                elif rows and not dense and not touched.intersection(rows):
                    text += f" and none of them is in {ids_name} (rows it does not touch must not change)"
                if shown(case) and rows:
                    text += f"; {name}[{rows[0]}] is {fmt(g[rows[0]])}, expected {fmt(w[rows[0]])}"
                return text + "." + hint
        return None

    return judge


PER_OCCURRENCE = (
    "a repeated id was given one Adam update per occurrence: SparseAdam sums a row's gradients "
    "first (coalesces them) and updates the row once with the sum; Adam is not linear in g, so "
    "k small steps are not one step with the summed gradient (the fancy-indexing trap of chapter 3)"
)


ONLY_M = (
    "only m was bias-corrected: the step size is lr * sqrt(1 - b2**t) / (1 - b1**t), not "
    "lr / (1 - b1**t); v starts at zero too, and its correction sqrt(1 - b2**t) is missing"
)


def _only_m(s):
    """The factor on each step when the step size is lr / (1 - b1**t) (no sqrt(1 - b2**t))."""
    return s.lr / (1 - B1**s.t) / _step_size(s.lr, s.t)


def _adam_parts(case, want):
    names = ["E", "m", "v", "ids", "grad_out", "t", "lr", "betas", "eps"]
    a = {"lr": LR, "betas": (B1, B2), "eps": EPS, **dict(zip(names, case.args, strict=False))}
    a.update(case.kwargs)
    flat = _flat(a["ids"])
    if flat.size == 0 or tuple(a["betas"]) != (B1, B2) or a["eps"] != EPS:
        return None  # this compact judge models the default betas and eps only
    return _Step([a["E"], a["m"], a["v"]], want, flat, a["grad_out"], a["t"], a["lr"])


T_MINUS_ONE = "the step number is off by one (t - 1 used): t is this step's number, 1 for the first"
ADAM_MISTAKES = [
    Mistake(
        "per-occurrence", PER_OCCURRENCE, lambda s: s.per_occurrence() if _repeated(s) else None
    ),
    Mistake(
        "last-write",
        "only one occurrence of a repeated id reached m and v: `m[ids] = ...` writes each "
        "repeated row once (the fancy-indexing trap). Sum the gradients per row first",
        lambda s: s.moments_with(lambda i: s.g[s.flat == i][-1]) if _repeated(s) else None,
    ),
    Mistake(
        "dense-adam",
        "rows that ids does not touch changed (dense Adam): SparseAdam is lazy, their moments "
        "do not decay and they do not move",
        lambda s: s.dense(),
    ),
    Mistake(
        "sum-of-squares",
        "v was built from the sum of the squares of a repeated id's gradients: v takes the square "
        "of the summed gradient, (g_1 + g_2 + ...)**2, not g_1**2 + g_2**2 + ...",
        lambda s: s.sum_of_squares() if _repeated(s) else None,
    ),
    Mistake(
        "no-bias-correction",
        "the bias correction is missing: the step size is lr * sqrt(1 - b2**t) / (1 - b1**t)",
        lambda s: s.scaled(s.lr / _step_size(s.lr, s.t)),
    ),
    Mistake("only-m-corrected", ONLY_M, lambda s: s.scaled(_only_m(s)) if B1**s.t > 1e-4 else None),
    Mistake(
        "t-plus-one",
        "the step number is off by one (t + 1 used): t is this step's number, 1 for the first",
        lambda s: s.scaled(_step_size(s.lr, s.t + 1) / _step_size(s.lr, s.t)),
    ),
    Mistake(
        "t-minus-one",
        T_MINUS_ONE,
        lambda s: s.scaled(_step_size(s.lr, s.t - 1) / _step_size(s.lr, s.t)) if s.t > 1 else None,
    ),
]
ADAM_MISTAKES += [
    EPS_INSIDE_SQRT.also(lambda s: s.eps_moved("inside")),
    EPS_CORRECTED.also(lambda s: s.eps_moved("corrected")),
]
ADAM_NOT_IN_PLACE = Mistake(
    "not-in-place",
    "the caller's arrays did not change: sparse_adam_step_ must update E, m and v in place "
    "(E[rows] -= ..., m[rows] = ...), not rebind new arrays to the names",
)

_adam_values = _arrays_judge(ADAM, "ids", _adam_parts, ADAM_MISTAKES, ADAM_NOT_IN_PLACE)


def adam_judge(case, got, want):
    if got.error_type == "ZeroDivisionError":
        return next(m for m in ADAM_MISTAKES if m.name == "t-minus-one").said(
            f"{ADAM} raised ZeroDivisionError for {case.label}: 1 - b1**t is 0 only at t = 0, so "
            f"{T_MINUS_ONE}"
        )
    return _adam_values(case, got, want)


# ------------------------------------------------------------------------------------------
# The training step
# ------------------------------------------------------------------------------------------
def _train_parts(case, want):
    given = dict(
        zip(["E", "m", "v", "params", "X", "Y", "t", "lr", "padding_idx"], case.args, strict=False)
    )
    given = {"lr": LR, "padding_idx": None, **given, **case.kwargs}
    E, m, v, X, t, lr = (given[k] for k in ("E", "m", "v", "X", "t", "lr"))
    padding_idx = given["padding_idx"]
    flat, G = _flat(X), case.meta.get("G")
    if padding_idx is None:
        return _Step([E, m, v], want, flat, G, t, lr)
    pad = int(padding_idx) % np.shape(E)[0]
    keep = flat != pad  # the padding positions take no part in the step
    if G is not None:
        G = np.asarray(G).reshape(flat.size, -1)[keep]
    s = _Step([E, m, v], want, flat[keep], G, t, lr)
    s.pad = pad
    if "g_pad" in case.meta:
        s.g_pad = np.asarray(case.meta["g_pad"], dtype=np.float64)
    return s


def _known(s):
    return s.g is not None and _repeated(s)


def _summed_per_occurrence(s):
    """Each row's summed gradient passed once per occurrence: row i gets k_i * g_hat_i."""
    if not _repeated(s):
        return None
    k = dict(zip(s.rows.tolist(), s.counts.tolist(), strict=True))
    return s.moments_with(lambda i: k[i] * s.g_hat[i])


FROM_PART_A = (
    "If your Part A sparse_adam_step_ makes it (its own test cell, test_adam, names the same "
    "mistake), fix it there and this cell follows: train_step_ only hands it the rows, values, "
    "t and lr."
)
IN_STEP = (
    "Your own sparse_adam_step_ gets this step right on the same rows and summed gradients, so "
    "the mistake is in train_step_ itself (an update written there, or what it hands the step)."
)
# the step mistakes Part A can make too: the pointer their message ends with, by whether the
# student's own sparse_adam_step_ gets the case right (False: it may not, or it could not be run)
PART_A_TOO = {
    k: {False: FROM_PART_A, True: IN_STEP}
    for k in (
        "step-no-bias-correction",
        "step-only-m-corrected",
        "step-eps-inside-sqrt",
        "step-eps-corrected",
    )
}
TRAIN_T_MINUS_ONE = (
    "the step number was passed on off by one (t - 1): train_step_ is given this step's "
    "number, 1 for the first step; hand it to sparse_adam_step_ as it is (at t = 1, t - 1 = 0 "
    "makes 1 - b1**t zero)"
)
PADDING_MOVED = Mistake(
    "padding-moved",
    "the padding row trained: nn.Embedding(padding_idx=p) gives row p no gradient and SparseAdam "
    "never sees it, so that row of E, m and v must stay exactly as it was. Leave it out of the "
    "rows you hand sparse_adam_step_ (and mind the edge cases of padding_idx: 0 is a valid "
    "padding id, and a negative one counts from the end, row V + padding_idx)",
    lambda s: s.padding_trained(),
)
PADDING_ZEROED = Mistake(
    "padding-moments-decayed",
    "the padding row's moments changed: it was handed to the Adam step with a zero gradient, and "
    "Adam still decays m and v (and moves the row by what is left of m). SparseAdam never sees "
    "the padding row: leave it out of the update altogether",
    lambda s: s.padding_zeroed(),
)
TRAIN_MISTAKES = [
    PADDING_MOVED,
    PADDING_ZEROED,
    Mistake(
        "step-per-occurrence",
        "a repeated id got one Adam update per occurrence (sparse_adam_step_ called once per "
        "position of X): the fancy-indexing trap of chapter 3. Sum a row's gradients first "
        "(embedding_backward_rows does it) and give each touched row one update with the sum",
        lambda s: s.per_occurrence() if _known(s) else None,
    ),
    Mistake(
        "summed-rows-per-occurrence",
        "a row that occurs k times in X got k times its gradient: the values of "
        "embedding_backward_rows(X, G) are already summed over X, and handing them to the step "
        "once per occurrence of the row (one per position of X) sums them again. Each touched "
        "row goes to sparse_adam_step_ once, with its one summed gradient",
        _summed_per_occurrence,
    ),
    Mistake(
        "step-trap-overwrite",
        "repeated ids overwrote each other in the table's gradient: only one occurrence of a "
        "repeated id reached it. A fancy-indexed `+=` (values[slot] += G in train_step_ or in "
        "your embedding_backward_rows, dE[X] += G) writes each repeated row once; a repeated id "
        "must receive the sum of all its rows of G (np.add.at, as in exercise 2)",
        lambda s: s.moments_with(lambda i: s.g[s.flat == i][-1]) if _known(s) else None,
    ),
    Mistake(
        "step-dense",
        "rows that X does not touch changed: the update was applied to every row of the table "
        "(with a zero gradient, Adam still decays their moments and moves them). SparseAdam "
        "updates only the rows the batch looked up: hand sparse_adam_step_ those rows alone",
        lambda s: s.dense(),
    ),
    Mistake(
        "step-no-bias-correction",
        "the bias correction is missing: the step size is lr * sqrt(1 - b2**t) / (1 - b1**t), "
        "not lr",
        lambda s: s.scaled(s.lr / _step_size(s.lr, s.t)),
    ),
    Mistake(
        "t-not-passed",
        "the step number was not passed on: the update used t = 1 (the bias corrections of the "
        "first step) at a later step. Call sparse_adam_step_ with the t you were given",
        lambda s: s.scaled(_step_size(s.lr, 1) / _step_size(s.lr, s.t)) if s.t != 1 else None,
    ),
    Mistake(
        "step-t-plus-one",
        "the step number is off by one (t + 1 used): the caller passes this step's number, 1 "
        "for the first step; pass it to sparse_adam_step_ as it is",
        lambda s: s.scaled(_step_size(s.lr, s.t + 1) / _step_size(s.lr, s.t)),
    ),
    Mistake(
        "step-t-minus-one",
        TRAIN_T_MINUS_ONE,
        lambda s: s.scaled(_step_size(s.lr, s.t - 1) / _step_size(s.lr, s.t)) if s.t > 1 else None,
    ),
    Mistake(
        "step-only-m-corrected",
        ONLY_M,
        lambda s: s.scaled(_only_m(s)) if B1**s.t > 1e-4 else None,
    ),
    Mistake(
        "lr-not-passed",
        "the learning rate was not passed on: the update used sparse_adam_step_'s default "
        "lr = 1e-3 instead of the lr train_step_ was given",
        lambda s: s.scaled(LR / s.lr) if s.lr != LR else None,
    ),
]
TRAIN_MISTAKES += [
    Mistake(
        "step-eps-inside-sqrt",
        EPS_INSIDE_SQRT.message,
        lambda s: s.eps_moved("inside"),
    ),
    Mistake(
        "step-eps-corrected",
        EPS_CORRECTED.message,
        lambda s: s.eps_moved("corrected"),
    ),
]
T_MINUS_STEP = next(m for m in TRAIN_MISTAKES if m.name == "step-t-minus-one")
STEP_NOT_IN_PLACE = Mistake(
    "step-not-in-place",
    f"E, m and v did not change: {STEP} must update the caller's arrays in place (no copies, "
    "no rebinding; sparse_adam_step_ does, if you hand it the caller's arrays)",
)
UNNAMED_HINT = (
    " train_step_ updates the table with your Part A sparse_adam_step_: if its own test cell "
    "(test_adam) fails too, the difference may come from there, so fix Part A first."
)
_update_values = _arrays_judge(
    STEP, "X", _train_parts, TRAIN_MISTAKES, STEP_NOT_IN_PLACE, hint=UNNAMED_HINT
)
LOSS_AFTER = Mistake("loss-after-update", "the loss after the update, not before it")


def _step_error(case, got):
    """train_step_ raising ZeroDivisionError at t = 1: t - 1 passed on to sparse_adam_step_."""
    t = (case.args + (None,) * 8)[6]
    if got.error_type == "ZeroDivisionError" and t == 1:
        return T_MINUS_STEP.said(
            f"{STEP} raised ZeroDivisionError for {case.label} (t = 1): {TRAIN_T_MINUS_ONE}. "
            f"The error was: {got.error}"
        )
    return None


def step_companion(case, want=None):
    """The call of the student's own sparse_adam_step_ a train_step_ arrays case asks for
    (Outcome.companion: the E, m and v it leaves): (E, m, v, rows, values, t, lr), the rows the
    batch touches (the padding row left out, as the reference leaves it) and their summed
    gradients, from ``meta["G"]`` (dL/dH at the lookup) or else read back from the expected first
    moment; None for a loss case, or where neither is known."""
    if case.output == "return":
        return None
    names = ["E", "m", "v", "params", "X", "Y", "t", "lr", "padding_idx"]
    given = {"lr": LR, "padding_idx": None, **dict(zip(names, case.args, strict=False))}
    given.update(case.kwargs)
    E, m, v, X, t, lr = (given[k] for k in ("E", "m", "v", "X", "t", "lr"))
    flat, E = _flat(X), np.asarray(E)
    keep = np.ones(flat.size, dtype=bool)
    if given["padding_idx"] is not None:
        keep = flat != int(given["padding_idx"]) % E.shape[0]
    rows = np.unique(flat[keep])
    G = case.meta.get("G")
    if G is not None:
        G = np.asarray(G, dtype=np.float64).reshape(flat.size, -1)[keep]
        values = np.zeros((rows.size, G.shape[1]))
        np.add.at(values, np.searchsorted(rows, flat[keep]), G)
    elif want is not None and want.error_type is None and len(want.values) == 3:
        m1, m0 = want.values[1].astype(np.float64), np.asarray(m, dtype=np.float64)
        values = ((m1 - B1 * m0) / (1 - B1))[rows]
    else:
        return None
    return (ADAM, [(E, m, v, rows, values.astype(E.dtype), t, lr)], ("args", (0, 1, 2)))


def _own_step(got):
    """The E, m, v the student's own sparse_adam_step_ left on the companion call, or None."""
    own = (got.companion or [None])[0]
    if not own or len(own) != 3:
        return None
    return [np.asarray(f, dtype=np.float64).reshape(sh) for _, _, sh, f in own]


def inherited(case, got, want) -> bool:
    """train_step_ left the E, m and v that the student's own sparse_adam_step_ leaves on the
    case's touched rows and summed gradients (got.companion): train_step_ is right for its own
    Part A, and what differs from the expected step is Part A's, charged once, by test_adam. A
    train_step_ wrong in its own right (an inline step, the padding row, ...) differs from that."""
    own = _own_step(got)
    if own is None or got.error_type is not None or got.modified or len(got.values) != 3:
        return False
    dtype = want.values[0].dtype
    return all(
        g.dtype == w.dtype and g.shape == o.shape and near(g, o, dtype)
        for g, o, w in zip(got.values, own, want.values, strict=True)
    )


def _part_a_right(got, want) -> bool:
    """The student's own sparse_adam_step_ gives the expected step on the case's rows."""
    own = _own_step(got)
    dtype = want.values[0].dtype if want.values else np.float64
    return own is not None and all(
        o.shape == w.shape and near(o, w, dtype) for o, w in zip(own, want.values, strict=True)
    )


def update_judge(case, got, want):
    """The E, m and v train_step_ leaves (output ("args", (0, 1, 2))); passes when they are what
    the student's own sparse_adam_step_ gives on the case (:func:`inherited`)."""
    message = _step_error(case, got) or _update_values(case, got, want)
    if not message or want.error_type is not None:
        return message
    if inherited(case, got, want):
        return None
    mistake = getattr(message, "mistake", "")
    if mistake in PART_A_TOO:
        own = _part_a_right(got, want)
        stop = "" if str(message).rstrip().endswith(".") else "."
        return Diagnosis(f"{message}{stop} {PART_A_TOO[mistake][own]}", mistake)
    return message


def loss_judge(case, got, want, fname=STEP, error=None):
    """The loss before the update, returned as one float (E, m, v may change: they are the
    step's outputs, graded by the other checks); ``error`` names an exception, by the case."""
    got = dataclasses.replace(got, modified=[i for i in got.modified if i > 2])
    problem = (error or _step_error)(case, got)
    if problem:
        return problem
    if got.returned_none and got.error_type is None:
        return RETURNED_NONE.said(
            f"{fname} returned None for {case.label}. Did you forget the return statement?"
        )
    problem = common_problems(case, got, want, fname)
    if problem or want.error_type is not None:
        return problem
    if got.is_tuple or got.value is None or got.value.size != 1:
        return f"{fname} should return the loss (one float) for {case.label}, got {', '.join(got.types)}."
    g, w = float(got.value.reshape(())), float(want.value.reshape(()))
    if np.isclose(g, w, rtol=1e-5, atol=1e-6):
        return None
    after = case.meta.get("loss_after")
    if after is not None and np.isclose(g, after, rtol=1e-5, atol=1e-6):
        return LOSS_AFTER.said(
            f"{fname} returned the loss after the update for {case.label}: return the loss that "
            f"{GIVEN[fname]} computed before the table changed (the loss of this batch at this step)."
        )
    shown_w = f", expected {w:.6f}" if shown(case) else ""
    return f"{fname} returned the loss {g:.6f} for {case.label}{shown_w}, which is not right."


# Wiring slips of train_step_ (what it hands sparse_adam_step_): test_train_step_update charges
# them; the repeated-id and padding cells judge the rest of the step as run at the student's own
# lr and t (each model is the reference's step at that lr or t), so one slip costs one cell.
WIRING = {"lr-not-passed", "t-not-passed", "step-t-plus-one", "step-t-minus-one", "step-dense"}
# The repeated-id mistakes: the repeated cell names and charges them. The padding cell's batches
# repeat ids besides the padding id too, so there such a mistake passes while the padding row,
# and its moments, stay as they were (what the padding cell grades).
REPEATED = {"step-per-occurrence", "summed-rows-per-occurrence", "step-trap-overwrite"}


def _padding_kept(case, got, want):
    """A padding case whose padding row (of E, m and v) the student left as it was."""
    s = _train_parts(case, want.values)
    if s is None or s.pad is None:
        return False
    p, dtype = s.pad, want.values[0].dtype
    before = (s.E0[p], s.m0[p], s.v0[p])
    return all(near(g[p], b, dtype) for g, b in zip(got.values, before, strict=True))


def wired_update_judge(case, got, want):
    """update_judge for the repeated-id and padding cells: a wiring slip (WIRING) that the update
    cell names and charges passes here, except a dense step that moved the padding row (that is
    a padding failure too, and the message says so); in a padding case, so does a repeated-id
    mistake (REPEATED) that left the padding row alone."""
    message = update_judge(case, got, want)
    mistake = getattr(message, "mistake", None)
    if mistake in REPEATED and _padding_kept(case, got, want):
        return None
    if mistake not in WIRING:
        return message
    if mistake == "step-dense":
        s = _train_parts(case, want.values)
        if s is not None and s.pad is not None and not _padding_kept(case, got, want):
            return message.__class__(
                f"{message} The dense step also moved the padding row {s.pad} (or its moments), "
                "which must never change: that is this cell's failure too.",
                mistake,
            )
    return None


def train_step_judge(case, got, want):
    """The loss (output "return") or the arrays it changes (output ("args", (0, 1, 2)))."""
    return (loss_judge if case.output == "return" else update_judge)(case, got, want)


# ------------------------------------------------------------------------------------------
# Part C: the tied table (one dense torch.optim.Adam step on the sum of two paths' gradients)
# ------------------------------------------------------------------------------------------
class _TiedStep(_Step):
    """E, m, v before and after one torch.optim.Adam step of a tied table (every row steps),
    float64. g_hat: every row's gradient, read back from the expected m; g_in: the lookup's
    part (``meta["G"]``, the per-position rows, summed into their ids); g_out = g_hat - g_in:
    the output projection's part. A model gives [E or None, m, v] for one slip."""

    every_row = True  # a dense step: rows the batch does not look up change too
    pad_row = None  # padding_idx as a row (exclude_padding), or None

    def __init__(self, before, after, flat, g, t, lr):
        super().__init__(before, after, flat, g, t, lr)
        self.g_in = np.zeros_like(self.g_hat)
        if self.g is not None:
            np.add.at(self.g_in, flat, self.g)
        self.g_out = self.g_hat - self.g_in
        self.untouched = np.setdiff1d(np.arange(self.E0.shape[0]), self.rows)

    def with_gradient(self, g, rows=None, m0=None, v0=None, rule=None):
        """[E, m, v] after one Adam step with the (V, d) gradient g on ``rows`` (None: every
        row), from m0 and v0 (default: the case's); E by ``rule`` ("adam": torch.optim.Adam's,
        "sparse": SparseAdam's), or None (not predicted)."""
        m = (self.m0 if m0 is None else m0).copy()
        v = (self.v0 if v0 is None else v0).copy()
        r = slice(None) if rows is None else rows
        m[r] = B1 * m[r] + (1 - B1) * g[r]
        v[r] = B2 * v[r] + (1 - B2) * g[r] ** 2
        if rule is None:
            return [None, m, v]
        E, t = self.E0.copy(), self.t
        if rule == "adam":
            E[r] -= self.lr / (1 - B1**t) * m[r] / (np.sqrt(v[r] / (1 - B2**t)) + EPS)
        else:
            E[r] -= _step_size(self.lr, t) * m[r] / (np.sqrt(v[r]) + EPS)
        return [E, m, v]

    def gradient_model(self, g):
        return None if self.g is None else self.with_gradient(g, rule="adam")

    def adam_E(self, t=None, lr=None, m=None, v=None):
        """E after torch.optim.Adam's rule at step t with lr (default: the case's), from the
        moments m and v (default: the expected ones)."""
        t, lr = self.t if t is None else t, self.lr if lr is None else lr
        m, v = self.m1 if m is None else m, self.v1 if v is None else v
        return self.E0 - lr / (1 - B1**t) * m / (np.sqrt(v / (1 - B2**t)) + EPS)

    def stepped(self, E):
        """[E, m, v]: a slip in E's step alone (the gradient, m and v, right)."""
        return [E, self.m1, self.v1]

    def averaged(self):
        """A repeated id's rows of G averaged, not summed (then the output path)."""
        if self.g is None or not _repeated(self):
            return None
        counts = np.bincount(self.flat, minlength=self.E0.shape[0])[:, None]
        return self.gradient_model(self.g_out + self.g_in / np.maximum(counts, 1))

    def either_or(self):
        """The looked-up rows get the lookup's part alone, the others the output's alone."""
        if self.g is None or self.untouched.size == 0:
            return None  # every row looked up: that is tied-input-path-only
        g = self.g_out.copy()
        g[self.rows] = self.g_in[self.rows]
        return self.gradient_model(g)

    def overwritten(self):
        """dE[X] += G: each repeated id keeps the last of its rows of G (then the output path)."""
        if self.g is None or not _repeated(self):
            return None
        last, g = np.zeros_like(self.g_hat), self.g.copy()
        if self.pad_row is not None:
            g[self.flat == self.pad_row] = 0.0  # the padding positions left out
        last[self.flat] = g  # numpy writes each repeated row once: the last one
        return self.with_gradient(self.g_out + last)

    def lazy(self):
        """The right gradient, but only the looked-up rows step: the others keep m and v."""
        if self.untouched.size == 0:
            return None
        m, v, u = self.m1.copy(), self.v1.copy(), self.untouched
        m[u], v[u] = self.m0[u], self.v0[u]
        return [None, m, v]  # E not predicted: the touched rows may take SparseAdam's rule

    def two_steps(self):
        """Two Adam steps, one per path (either order, or the lookup's lazily on its rows
        first): m and v whatever t each used."""
        if self.g is None:
            return None
        out = []
        for first, rows, second in (
            (self.g_in, None, self.g_out),
            (self.g_out, None, self.g_in),
            (self.g_in, self.rows, self.g_out),
        ):
            _, m, v = self.with_gradient(first, rows)
            out.append(self.with_gradient(second, None, m, v))
        return out

    def sparse_rule(self):
        """SparseAdam's update on every row: step_size * m / (sqrt(v) + eps), eps added to the
        uncorrected sqrt(v), from the expected m and v."""
        E = self.E0 - _step_size(self.lr, self.t) * self.m1 / (np.sqrt(self.v1) + EPS)
        return [E, self.m1, self.v1]

    def untied(self):
        """Part B's step: the lookup's gradient alone, a lazy step on its rows."""
        return None if self.g is None else self.with_gradient(self.g_in, self.rows, rule="sparse")

    def exclude_padding(self, pad):
        """padding_idx = pad: the lookup's part leaves out the padding positions' rows of G
        (nn.Embedding's rule); g_lookup_pad, what they would have added to row pad."""
        self.pad_row = pad
        self.g_lookup_pad = np.zeros(self.g_hat.shape[1])
        if self.g is not None:
            self.g_lookup_pad = self.g[self.flat == pad].sum(axis=0)
            self.g_in[pad] -= self.g_lookup_pad
            self.g_out = self.g_hat - self.g_in

    def padding_frozen(self):
        """Part B's rule: the padding row, its m and its v left as they were."""
        p = self.pad_row
        if p is None:
            return None
        E, m, v = self.E1.copy(), self.m1.copy(), self.v1.copy()
        E[p], m[p], v[p] = self.E0[p], self.m0[p], self.v0[p]
        return [E, m, v]

    def padding_no_gradient(self):
        """The padding row given no gradient at all (its output part dropped too): its moments
        decay and it moves by what is left of m."""
        p = self.pad_row
        if p is None or not (self.m0[p].any() or self.v0[p].any()):
            return None  # from zero moments that is the frozen row
        g = self.g_hat.copy()
        g[p] = 0.0
        return self.with_gradient(g, rule="adam")

    def padding_lookup_kept(self):
        """padding_idx ignored: the padding positions' rows of G added to the padding row."""
        p = self.pad_row
        if p is None or self.g is None or not (self.flat == p).any():
            return None
        g = self.g_hat.copy()
        g[p] += self.g_lookup_pad
        return self.with_gradient(g, rule="adam")


def _each(model):
    """A Mistake model that gives several predictions (a list of [E, m, v]) as one tuple of
    models, each taking the step."""
    return tuple(lambda s, k=k: (model(s) or [None] * 3)[k] for k in range(3))


TIED_NAMES = ["E", "m", "v", "params", "X", "Y", "t", "lr", "padding_idx"]


def _tied_parts(case, want):
    given = {"lr": 1e-2, "padding_idx": None, **dict(zip(TIED_NAMES, case.args, strict=False))}
    given.update(case.kwargs)
    E, m, v, X, t, lr = (given[k] for k in ("E", "m", "v", "X", "t", "lr"))
    s = _TiedStep([E, m, v], want, _flat(X), case.meta.get("G"), t, lr)
    if given["padding_idx"] is not None:
        s.exclude_padding(int(given["padding_idx"]) % np.shape(E)[0])
    return s


TWO_PATHS = (
    "dL/dE of a tied table has two parts, and both must be in the step: the lookup's (the rows "
    "of G, summed into the ids of X that produced them) and the output projection's (the "
    "logits are Z @ E.T, so every row of E gets a gradient from dS and Z, looked up or not)"
)
TIED_INPUT_ONLY = Mistake(
    "tied-input-path-only",
    "only the lookup's gradient reached the step; the output projection's is missing. " + TWO_PATHS,
    lambda s: s.gradient_model(s.g_in),
)
TIED_OUTPUT_ONLY = Mistake(
    "tied-output-path-only",
    "only the output projection's gradient reached the step; the lookup's (G, from "
    "tied_model_grads) is missing. " + TWO_PATHS,
    lambda s: s.gradient_model(s.g_out),
)
TIED_TRANSPOSED = Mistake(
    "tied-output-transposed",
    "the output projection's gradient has the wrong layout: it is a (V, d) array whose row i "
    "collects what the logit of id i did over the batch, and Z.T @ dS is its transpose, (d, V); "
    "reshaping that to (V, d) scrambles the entries instead of transposing them (and with "
    "V == d it would even fit as it is). Work out which product of dS (B, V) and Z (B, d) has "
    "shape (V, d)",
    lambda s: s.gradient_model(s.g_in + s.g_out.T.reshape(s.g_out.shape)),
)
TIED_TRAP = Mistake(
    "tied-trap-overwrite",
    "repeated ids overwrote each other in the lookup's part of the gradient: dE[X] += G (or "
    "a fancy-indexed += of any kind) writes each repeated row once, so an id that occurs k "
    "times got one of its k rows of G, not their sum. Accumulate with np.add.at, np.bincount, a "
    "one-hot matrix or a loop (chapters 2 and 3)",
    lambda s: s.overwritten(),
)
TIED_LAZY = Mistake(
    "tied-lazy-step",
    "only the rows X looks up took an Adam step (a lazy, SparseAdam-style step): in a tied "
    "model the output projection gives every row of E a gradient, so torch.optim.Adam steps "
    "every row of E, m and v, and the rows X does not touch change too",
    lambda s: s.lazy(),
)
TIED_TWO_STEPS = Mistake(
    "tied-two-steps",
    "Adam stepped twice, once per path (or t advanced between the paths): the two parts of "
    "dL/dE are summed into one gradient first, then the table takes ONE Adam step at this t. "
    "Adam is not linear in g: two steps with the parts are not one step with their sum",
    _each(lambda s: s.two_steps()),
)
TIED_SPARSE_RULE = Mistake(
    "tied-sparseadam-eps",
    "SparseAdam's update rule was used: step_size * m / (sqrt(v) + eps) adds eps to the "
    "uncorrected sqrt(v). torch.optim.Adam adds it to the bias-corrected root: E -= lr / "
    "(1 - b1**t) * m / (sqrt(v / (1 - b2**t)) + eps). The two differ where sqrt(v) is "
    "small (a table near zero). Write Adam's rule, or call your sparse_adam_step_ with eps "
    "scaled to match",
    lambda s: s.sparse_rule(),
)
TIED_UNTIED = Mistake(
    "tied-untied-step",
    "this is Part B's step (the lookup's gradient alone, a lazy sparse Adam step on the rows "
    "X looks up): a tied table also gets the output projection's gradient, on every row, and "
    "takes torch.optim.Adam's dense step",
    lambda s: s.untied(),
)
TIED_AVERAGED = Mistake(
    "tied-averaged",
    "repeated ids were averaged in the lookup's part of the gradient: an id that occurs k times "
    "in X gets the sum of its k rows of G, not their mean (each use of a row adds its own "
    "contribution to dL/dE, as in chapter 2)",
    lambda s: s.averaged(),
)
TIED_EITHER_OR = Mistake(
    "tied-either-or",
    "each row got one path's part, not both: the rows X looks up got the lookup's part alone "
    "and the other rows the output projection's alone. " + TWO_PATHS + ": the two parts add, "
    "so a looked-up row gets its rows of G on top of its output part",
    lambda s: s.either_or(),
)
TIED_PADDING_LOOKUP = (
    "nn.Embedding(padding_idx=p) gives row p no gradient from the lookup (the positions of X "
    "that hold p add nothing to it through E[X]); in a tied model the same weight is also the "
    "output projection, and autograd still adds that path's gradient to row p"
)
TIED_PADDING_FROZEN = Mistake(
    "tied-padding-frozen",
    "the padding row, its m and its v did not change (Part B's rule). "
    + TIED_PADDING_LOOKUP
    + ", so row p has a gradient and torch.optim.Adam steps it like every other row",
    lambda s: s.padding_frozen(),
)
TIED_PADDING_NO_GRADIENT = Mistake(
    "tied-padding-output-dropped",
    "the padding row got no gradient at all (its moments only decayed): "
    + TIED_PADDING_LOOKUP
    + ". Leave out the lookup's part for the padding positions, not the row's output part",
    lambda s: s.padding_no_gradient(),
)
TIED_PADDING_KEPT = Mistake(
    "tied-padding-lookup-kept",
    "the rows of G at the padding positions of X were added to the padding row, as if "
    "padding_idx were None: "
    + TIED_PADDING_LOOKUP
    + ". Leave the padding positions out of the lookup's part (a mask before accumulating, "
    "or that row of it zeroed after)",
    lambda s: s.padding_lookup_kept(),
)
TIED_PADDING_MISTAKES = [TIED_PADDING_FROZEN, TIED_PADDING_NO_GRADIENT, TIED_PADDING_KEPT]
FLOAT64_COPY = "converting a float32 table to float64 makes a copy"
TIED_IN_PLACE = "E -= ..., m[:] = ..."  # how the dense step writes in place
TIED_NOT_IN_PLACE = Mistake(
    "tied-not-in-place",
    f"E, m and v did not change: {TIED} must update the caller's arrays in place (E -= ..., "
    "m *= b1, m += ..., or m[:] = ...; not m = b1 * m + ..., which binds a new array to the "
    f"name; {FLOAT64_COPY})",
)
# Slips in E's step alone (the gradient, m and v, right): the adam cell names and charges them.
TIED_STEP_SLIPS = [
    Mistake(
        "tied-t-not-passed",
        "the step number was not used: E moved with the bias corrections of the first step "
        "(t = 1) at a later step. torch.optim.Adam's corrections 1 - b1**t and 1 - b2**t take "
        "this step's t (hand it on if you call your sparse_adam_step_)",
        lambda s: s.stepped(s.adam_E(t=1)) if s.t != 1 else None,
    ),
    Mistake(
        "tied-t-plus-one",
        "the step number is off by one (t + 1 used): t is this step's number, 1 for the first; "
        "use it as it is in 1 - b1**t and 1 - b2**t",
        lambda s: s.stepped(s.adam_E(t=s.t + 1)),
    ),
    Mistake(
        "tied-lr-not-passed",
        f"the learning rate was not used: E moved by the step of lr = {LR:g} (the default of "
        f"sparse_adam_step_ and of torch.optim.Adam) instead of the lr {TIED} was given",
        lambda s: s.stepped(s.adam_E(lr=LR)) if s.lr != LR else None,
    ),
    Mistake(
        "tied-no-bias-correction",
        "the bias correction is missing: torch.optim.Adam divides m by 1 - b1**t and v by "
        "1 - b2**t, E -= lr / (1 - b1**t) * m / (sqrt(v / (1 - b2**t)) + eps)",
        lambda s: s.stepped(s.E0 - s.lr * s.m1 / (np.sqrt(s.v1) + EPS)),
    ),
    Mistake(
        "tied-step-before-moments",
        "E took its step with the old m and v: update m and v with this step's gradient first, "
        "then move E with the new ones (from zero moments the old ones give no step at all)",
        lambda s: s.stepped(s.adam_E(m=s.m0, v=s.v0)) if s.m0.any() else None,
    ),
]
TIED_MISTAKES = [
    TIED_INPUT_ONLY,  # before TIED_UNTIED: from zero moments they differ only by eps's place
    TIED_UNTIED,
    TIED_OUTPUT_ONLY,
    TIED_TRANSPOSED,
    TIED_EITHER_OR,
    TIED_TRAP,
    TIED_AVERAGED,
    TIED_LAZY,
    TIED_TWO_STEPS,
    TIED_SPARSE_RULE,
    *TIED_STEP_SLIPS,
    *TIED_PADDING_MISTAKES,
]


def near_relative(a, b, dtype):
    """near, relative to the larger of the two arrays: a table near zero has moments of order
    1e-7 and less, which the absolute part of near's tolerance cannot tell apart."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    s = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
    return near(a / s, b / s, dtype) if s > 0 else True


def _tied_kept(case, names, s):
    """kept_text for the dense step; E alone kept from zero moments may be E moved first."""
    end = ""
    if names == ["E"] and not s.m0.any():
        end = (
            " Or E took its step before m and v were updated: from zero moments that step is zero."
        )
    return kept_text(TIED, names, case, how=TIED_IN_PLACE, note=FLOAT64_COPY, end=end)


_tied_values = _arrays_judge(
    TIED,
    "X",
    _tied_parts,
    TIED_MISTAKES,
    TIED_NOT_IN_PLACE,
    match=near_relative,
    kept_message=_tied_kept,
)


def _tied_error(case, got):
    """A (d, V) array met a (V, d) one: the output gradient used untransposed."""
    if got.error_type != "ValueError" or not case.args:
        return None
    V, d = np.shape(case.args[0])
    if f"({d},{V})" not in (got.error or "").replace(" ", ""):
        return None
    return TIED_TRANSPOSED.said(
        f"{TIED} raised ValueError for {case.label}: a ({d}, {V}) array met a ({V}, {d}) one. "
        f"{TIED_TRANSPOSED.message}. The error was: {got.error}"
    )


def tied_arrays_judge(case, got, want):
    """The E, m and v train_step_tied_ leaves (output ("args", (0, 1, 2)))."""
    return _tied_error(case, got) or _tied_values(case, got, want)


def tied_loss_judge(case, got, want):
    return loss_judge(case, got, want, TIED, _tied_error)


def tied_judge(case, got, want):
    """The loss (output "return") or the arrays the tied step changes."""
    return (tied_loss_judge if case.output == "return" else tied_arrays_judge)(case, got, want)


# Each of Part C's arrays cells charges its own slips; a slip another cell charges passes here
# when the arrays are exactly what that one slip gives (a crash is no such output), so one slip
# costs one cell. The paths and repeated cells grade the gradient, read back from the m the
# student left (_gradient_right): a slip in E's step alone (TIED_STEP_SLIPS, E left as it was
# while m and v changed, any other) costs the adam cell only. TIED_UNTIED and a TIED_NOT_IN_PLACE
# that left m as it was are charged by every arrays cell.
TIED_CELLS = {
    "paths": {
        "tied-input-path-only",
        "tied-output-path-only",
        "tied-output-transposed",
        "tied-either-or",
    },
    "repeated": {"tied-trap-overwrite", "tied-averaged"},
    "adam": {
        "tied-lazy-step",
        "tied-two-steps",
        "tied-sparseadam-eps",
        *(m.name for m in TIED_STEP_SLIPS),
    },
    "padding": {m.name for m in TIED_PADDING_MISTAKES},
}


def _gradient_right(case, got, want):
    """The gradient read back from the m the student left, (m - b1 * m0) / (1 - b1), is the
    expected one, whatever E's step did (the arrays keep their shapes and dtypes)."""
    if got.error_type is not None or got.modified or len(got.values) != 3:
        return False
    if any(
        g.shape != w.shape or g.dtype != w.dtype
        for g, w in zip(got.values, want.values, strict=True)
    ):
        return False
    s = _tied_parts(case, want.values)
    g_hat = (np.asarray(got.values[1], dtype=np.float64) - B1 * s.m0) / (1 - B1)
    return near_relative(g_hat, s.g_hat, want.values[0].dtype)


def _tied_cell(cell):
    elsewhere = set().union(*TIED_CELLS.values()) - TIED_CELLS[cell]
    gradient_only = cell != "adam"

    def judge(case, got, want):
        message = tied_arrays_judge(case, got, want)
        if not message or got.error_type is not None:
            return message
        if mistake_id(message) in elsewhere:
            return None
        if gradient_only and _gradient_right(case, got, want):
            return None
        return message

    judge.__doc__ = f"train_step_tied_'s arrays, charging {sorted(TIED_CELLS[cell])}"
    return judge


tied_paths_judge, tied_repeated_judge, tied_adam_judge, tied_padding_judge = (
    _tied_cell(c) for c in ("paths", "repeated", "adam", "padding")
)


# Every mistake this chapter recognises (judges.COMMON besides): ids unique within the chapter.
MISTAKES = [FLATTENED, OVERWRITE, AVERAGED, ROWS_NOT_COALESCED, ROWS_UNSORTED, *ADAM_MISTAKES]
MISTAKES += [ADAM_NOT_IN_PLACE, *TRAIN_MISTAKES]
MISTAKES += [STEP_NOT_IN_PLACE, LOSS_AFTER, *TIED_MISTAKES, TIED_NOT_IN_PLACE]

JUDGES = {FWD: forward_judge, ROWS: rows_judge, ADAM: adam_judge, STEP: train_step_judge}
JUDGES[f"{STEP}:wired"] = wired_update_judge
JUDGES.update({TIED: tied_judge, f"{TIED}:paths": tied_paths_judge})
JUDGES.update({f"{TIED}:repeated": tied_repeated_judge, f"{TIED}:adam": tied_adam_judge})
JUDGES[f"{TIED}:padding"] = tied_padding_judge
STEP_COMPANIONS = {STEP: step_companion, f"{STEP}:wired": step_companion}
expect = make_expect(JUDGES, MISTAKES, STEP_COMPANIONS)
