"""Chapter 5's public judges and mistake models (pasted into the released notebook).

Both graded functions return a tuple (a loss and one or two gradient tables), which array_judge
does not handle: :func:`tuple_judge` compares each element (the loss within a tolerance relative
to its own size, each table with :func:`close`) and names the classic mistakes.

Every mistake is modelled from the case and the expected value, never from the reference. The
mistakes that concern the input path need one more expected part, which a case carries in
``meta["input_rows"]``: the (N, d) input-path rows, row n being what position n adds into
dE[x_n] (Delta W_out for the untied model, Delta E for the tied one). From them, the input path
is those rows added into their rows of the table, the output path is the expected dE minus it,
and repeated ids overwritten is each row keeping the last of its positions. A visible test
states these rows literally; the hidden checks compute them from the reference.
"""

from __future__ import annotations

import numpy as np

from ..compare import close, differing_rows, expected, fmt, shown, tolerance
from ..judges import (
    GLOBAL_MAX,
    TRANSPOSED,
    UNSTABLE_SOFTMAX,
    WRONG_DTYPE,
    Case,
    Diagnosis,
    Mistake,
    Outcome,
    common_problems,
    forgiving,
)
from ..visible import make_expect

UNTIED = "untied_bigram_loss_grad"
TIED = "tied_bigram_loss_grad"
UNTIED_NAMES = ["loss", "dE_in", "dW_out"]
TIED_NAMES = ["loss", "dE"]
# A visible test writes its expected values to 6 decimals; a shown case is compared at that
# precision (a hidden case at the dtype's own tolerance, against the reference).
SHOWN_TOL = (1e-5, 1e-5)


def _tol(case, dtype) -> tuple[float, float]:
    own = tolerance(dtype)
    return (max(own[0], SHOWN_TOL[0]), max(own[1], SHOWN_TOL[1])) if shown(case) else own


# --------------------------------------------------------------------------------------------
# Classic mistakes, modelled from the case and the expected value: model(case, want) -> values
# --------------------------------------------------------------------------------------------
def _rows_into_table(case, last_only: bool):
    """The input-path rows (meta["input_rows"]) put into a zero table at their ids x: added up
    (the input path), or with ``last_only`` each row keeping only its last position's row (what
    a buffered dE[x] += rows or dE[x] = rows does). None when the case has no such rows, or, for
    ``last_only``, when no id repeats (the mistake then gives the right answer)."""
    rows = case.meta.get("input_rows")
    if rows is None:
        return None
    x = np.asarray(case.args[-2]).reshape(-1).astype(np.int64)
    if last_only and np.unique(x).size == x.size:
        return None
    rows = np.asarray(rows, dtype=np.float64)
    out = np.zeros(case.args[0].shape, dtype=np.float64)
    for n, i in enumerate(x):
        out[i] = rows[n] if last_only else out[i] + rows[n]
    return out


def _output_only(case, want):
    """dE without the input path: the expected dE minus the input-path rows."""
    input_path = _rows_into_table(case, last_only=False)
    if input_path is None:
        return None
    return [want[0], np.asarray(want[1], dtype=np.float64) - input_path]


def _output_doubled(case, want):
    """dE with the output path counted twice (e.g. dW_out added twice, or the untied gradients
    summed and the output path added again): the expected dE plus the output path."""
    input_path = _rows_into_table(case, last_only=False)
    if input_path is None:
        return None
    want_dE = np.asarray(want[1], dtype=np.float64)
    return [want[0], 2.0 * want_dE - input_path]


def _input_only(case, want):
    input_path = _rows_into_table(case, last_only=False)
    return None if input_path is None else [want[0], input_path]


def _paths_averaged(case, want):
    """(dE_in + dW_out) / 2: the expected dE halved."""
    return [want[0], np.asarray(want[1], dtype=np.float64) / 2.0]


def _tied_overwritten(case, want):
    """The output path (expected dE minus the input path) plus the last-write input path."""
    last = _rows_into_table(case, last_only=True)
    if last is None:
        return None
    output_path = np.asarray(want[1], dtype=np.float64) - _rows_into_table(case, last_only=False)
    return [want[0], output_path + last]


def _untied_overwritten(case, want):
    last = _rows_into_table(case, last_only=True)
    return None if last is None else [want[0], last, want[2]]


def _swapped(case, want):
    """(loss, dW_out, dE_in): the two gradients returned in the wrong order (same shapes when
    E_in and W_out have the same shape)."""
    return [want[0], want[2], want[1]] if np.shape(want[1]) == np.shape(want[2]) else None


def _target_terms(case):
    """(into_input, into_output): the -onehot(y) term of Delta = (P - Y) / N, negated, on each
    path: row x_n gains W_out[y_n] / N (the input path) and row y_n gains E_in[x_n] / N (the
    output path), each as a zero-based (V, d) table in float64."""
    E_in = np.asarray(case.args[0], dtype=np.float64)
    W_out = np.asarray(case.args[1], dtype=np.float64) if len(case.args) == 4 else E_in
    x = np.asarray(case.args[-2]).reshape(-1).astype(np.int64)
    y = np.asarray(case.args[-1]).reshape(-1).astype(np.int64)
    N = len(x)
    into_input, into_output = np.zeros(E_in.shape), np.zeros(W_out.shape)
    np.add.at(into_input, x, W_out[y] / N)
    np.add.at(into_output, y, E_in[x] / N)
    return into_input, into_output


def _untied_no_target(case, want):
    """dlogits = P / N instead of (P - Y) / N: the expected gradients plus the target terms."""
    into_input, into_output = _target_terms(case)
    return [want[0], np.asarray(want[1], np.float64) + into_input, want[2] + into_output]


def _tied_no_target(case, want):
    into_input, into_output = _target_terms(case)
    return [want[0], np.asarray(want[1], np.float64) + into_input + into_output]


_NO_TARGET = (
    "the target's one-hot was not subtracted: dlogits is softmax(z) / N where (softmax(z) - "
    "onehot(y)) / N is due. The loss -log softmax(z)_y = logsumexp(z) - z_y has the gradient "
    "softmax(z) - onehot(y) in z: subtract 1 at each position's target, P[n, y_n] -= 1"
)


def _times_n(loss_too, grads_too):
    def model(case, want):
        N = len(case.args[-1])
        if N == 1:
            return None
        return [w * N if (grads_too if i else loss_too) else w for i, w in enumerate(want)]

    return model


def _not_averaged(prefix, which, loss_too, grads_too):
    return Mistake(
        f"{prefix}not-averaged",
        f"{which} N times too large: not averaged over N. The loss is the mean over the N "
        "positions, so the loss and every gradient term carry a factor 1/N",
        _times_n(loss_too, grads_too),
    )


def _averaging_mistakes(prefix, all_of_them, grads):
    return [
        _not_averaged(prefix, f"{all_of_them} are", True, True),
        _not_averaged(f"{prefix}loss-", "the loss is", True, False),
        _not_averaged(f"{prefix}grad-", grads, False, True),
    ]


TIED_MISTAKES = [
    Mistake(
        "output-path-only",
        "dE holds only the output path (Delta^T H, the table as output layer). The same table is "
        "also the input table: add the input path S^T (Delta E) for the rows that were looked up",
        _output_only,
    ),
    Mistake(
        "output-path-doubled",
        "dE holds the output path twice (2 Delta^T H plus the input path): the table is used once "
        "as the output layer, so its output path counts once. The chain rule adds one term per "
        "path: Delta^T H + S^T (Delta E)",
        _output_doubled,
    ),
    Mistake(
        "input-path-only",
        "dE holds only the input path (S^T (Delta E), the rows that were looked up). The same table "
        "also scores every output token: add the output path Delta^T H, which reaches every row",
        _input_only,
    ),
    Mistake(
        "trap-overwrite",
        "a row looked up more than once got the input-path gradient of only one of its positions: "
        "repeated input ids were overwritten (dE[x] += ... and dE[x] = ... keep one write per row). "
        "Every occurrence must add its row, e.g. with np.add.at or S^T (Delta E)",
        _tied_overwritten,
    ),
    Mistake(
        "paths-averaged",
        "dE is half the right gradient: the two paths' gradients were averaged ((dE_in + dW_out) "
        "/ 2). One table on two paths is not a compromise between two tables: the chain rule "
        "adds one term per path, dE = Delta^T H + S^T (Delta E), the untied gradients summed",
        _paths_averaged,
    ),
    Mistake("no-target-subtracted", _NO_TARGET + " (on both paths of dE)", _tied_no_target),
    *_averaging_mistakes("", "the loss and dE", "dE is"),
]

UNTIED_MISTAKES = [
    Mistake(
        "untied-trap-overwrite",
        "a row of dE_in looked up more than once got the gradient of only one of its positions: "
        "repeated input ids were overwritten (dE_in[x] += ... and dE_in[x] = ... keep one write per "
        "row). Every occurrence must add its row, e.g. with np.add.at or S^T (Delta W_out)",
        _untied_overwritten,
    ),
    Mistake(
        "grads-swapped",
        "dE_in and dW_out came back in each other's places: return (loss, dE_in, dW_out), the "
        "gradient of the input table first",
        _swapped,
    ),
    Mistake("untied-no-target-subtracted", _NO_TARGET, _untied_no_target),
    *_averaging_mistakes("untied-", "the loss, dE_in and dW_out", "dE_in and dW_out are"),
]

# The numerical failures of large logits, told apart by what a case's logits allow (see
# _large_logit_message) and, when both could happen, by the sign of an infinite loss.
NAIVE_SOFTMAX = Mistake(
    "naive-softmax",
    "exp of logits this large overflows: no maximum was subtracted before exp (a naive softmax "
    "gives inf / inf = NaN). Subtract each row's maximum logit before exp (the log-sum-exp "
    "trick); the probabilities do not change",
)
LOG_UNDERFLOW = Mistake(
    "log-underflow",
    "the softmax probability of the target underflowed to 0 and its log was taken",
)
LOSS_NOT_FLOAT = Mistake("loss-not-float", "the loss is not a Python float")
LOSS_NOT_SCALAR = Mistake("loss-not-scalar", "the loss is not one number")
NOT_A_TUPLE = Mistake("not-a-tuple", "the function does not return the tuple its docstring says")
NUMERIC = [NAIVE_SOFTMAX, GLOBAL_MAX, UNSTABLE_SOFTMAX, LOG_UNDERFLOW]
# Every mistake this chapter recognises (judges.COMMON besides): ids unique within the chapter.
MISTAKES = [
    *TIED_MISTAKES,
    *UNTIED_MISTAKES,
    *NUMERIC,
    LOSS_NOT_FLOAT,
    LOSS_NOT_SCALAR,
    NOT_A_TUPLE,
]


# --------------------------------------------------------------------------------------------
# The judge: a tuple (loss, table, ...) compared element by element
# --------------------------------------------------------------------------------------------
def loss_close(got, want, tol) -> bool:
    """Equal within the relative tolerance tol[0], relative to the loss's own size (at least 1)."""
    g, w = float(np.asarray(got, dtype=np.float64).reshape(())), float(want)
    if not (np.isfinite(g) and np.isfinite(w)):
        return False
    return abs(g - w) <= tol[0] * max(abs(w), 1.0)


def _agree(values, want, tol) -> list[bool]:
    return [loss_close(values[0], want[0], tol)] + [
        close(g, np.asarray(w), tol=tol) for g, w in zip(values[1:], want[1:], strict=True)
    ]


def _structure(case, got, want, fname, names) -> str | None:
    """The return has the right form: a tuple of len(names), one number, then (V, d) tables."""
    n = len(names)
    if not got.is_tuple or len(got.values) != n:
        what = (
            f"a tuple of {len(got.values)}" if got.is_tuple else f"a single {', '.join(got.types)}"
        )
        return NOT_A_TUPLE.said(
            f"{fname} should return a tuple ({', '.join(names)}) for {case.label}; it returned {what}."
        )
    loss = got.values[0]
    if loss.size != 1:
        return LOSS_NOT_SCALAR.said(
            f"{fname} returned a loss of shape {loss.shape} for {case.label}; it should be one "
            "number, the mean of the per-position losses over the N positions."
        )
    for name, g, w in zip(names[1:], got.values[1:], want.values[1:], strict=True):
        if g.shape != w.shape:
            text = (
                f"{fname} returned {name} of shape {g.shape} for {case.label}; expected {w.shape}, "
                "the table's shape (one row per token)."
            )
            if g.shape == w.shape[::-1] and g.ndim == 2:
                return TRANSPOSED.said(text + " It looks transposed.")
            return text
    return None


def _types(case, got, want, fname, names, keep=None) -> str | None:
    """The loss is a Python float and every table has the expected dtype (only the elements in
    ``keep``, all by default)."""
    keep = range(len(names)) if keep is None else keep
    if 0 in keep and got.types[0] != "float":
        return LOSS_NOT_FLOAT.said(
            f"{fname} returned the loss as {got.types[0]} for {case.label}; return a Python "
            "float (wrap it: float(loss)). A numpy float64 is a float; a 0-d array, a numpy "
            "float32 or a tensor is not."
        )
    for i, (name, g, w) in enumerate(zip(names, got.values, want.values, strict=True)):
        if i and i in keep and g.dtype != w.dtype:
            return WRONG_DTYPE.said(
                f"{fname} returned {name} as {g.dtype} for {case.label}; expected {w.dtype}, "
                "the table's dtype (cast the result back: .astype(E.dtype))."
            )
    return None


def _finite(a) -> bool:
    return bool(np.all(np.isfinite(np.asarray(a, dtype=np.float64))))


def _row_max_logits(case) -> np.ndarray:
    """(N,) each position's largest logit, max over v of z_n = W_out @ E_in[x_n] (the forward
    pass from the case's inputs, in float64; W_out = E_in = E for the tied model)."""
    E_in = np.asarray(case.args[0], dtype=np.float64)
    W_out = np.asarray(case.args[1], dtype=np.float64) if len(case.args) == 4 else E_in
    x = np.asarray(case.args[-2]).reshape(-1).astype(np.int64)
    return (E_in[x] @ W_out.T).max(axis=1)


def _unstable(case) -> tuple[bool, bool]:
    """(could a naive softmax overflow here, could a batch-wide maximum underflow a row here),
    computing in the table's dtype or in float64: exp overflows above log(largest float) and
    underflows to 0 below log(smallest subnormal)."""
    top = _row_max_logits(case)
    dtypes = {np.dtype(np.float64), np.dtype(case.args[0].dtype)}
    over = any(top.max() > np.log(np.finfo(dt).max) for dt in dtypes)
    spread = top.max() - top.min() if top.size else 0.0
    under = any(spread > -np.log(float(np.finfo(dt).smallest_subnormal)) for dt in dtypes)
    return over, under


def _large_logit_message(case, got, names, fname, oks, keep) -> str | None:
    """Name the numerical failures of large logits: a softmax without a shift (overflow), one
    with a shift for the whole batch (a row's underflow), and the log of an underflow (judged on
    the loss alone, whatever the gradients are)."""
    if not case.meta.get("large"):
        return None
    finite = [_finite(v) for v in got.values]
    if not all(finite[1:]):  # the softmax itself broke: every gradient row depends on it
        over, under = _unstable(case)
        loss = float(np.asarray(got.values[0], dtype=np.float64).reshape(-1)[0])
        if under and (loss == -np.inf or not over):
            mistake = GLOBAL_MAX  # log(0) = -inf: a row's normalizer underflowed
        elif over and (loss == np.inf or not under):
            mistake = NAIVE_SOFTMAX  # log(inf) = inf: exp overflowed
        elif over or under:
            mistake = UNSTABLE_SOFTMAX  # NaN either way: both are possible here
        else:
            return None
        return mistake.said(f"{fname} returned NaN or inf for {case.label}: {mistake.message}.")
    loss = float(np.asarray(got.values[0], dtype=np.float64).reshape(-1)[0])
    if 0 in keep and loss == np.inf and not all(oks[1:]) and _unstable(case)[0]:
        # log(sum(exp(z))) with no shift: inf, so exp(z - lse) is 0 for every token and each
        # gradient keeps only its -onehot(y) term (finite, but wrong)
        return NAIVE_SOFTMAX.said(
            f"{fname}'s loss is inf for {case.label} and its gradients are wrong: exp of logits "
            "this large overflows, and no maximum was subtracted before exp in the log-sum-exp. "
            "log(sum(exp(z))) is then inf, so exp(z - lse) is 0 for every token and the softmax "
            "term of the gradients is lost. Subtract each row's maximum m first: "
            "lse = m + log(sum(exp(z - m)))."
        )
    if 0 in keep and not oks[0] and (not finite[0] or all(oks[1:])):
        what = "inf or NaN" if not finite[0] else "wrong"
        return LOG_UNDERFLOW.said(
            f"{fname}'s loss is {what} for {case.label}, with finite gradients: the softmax "
            "probability of the target underflowed to 0 and its log was taken (log(p), or a "
            "clipped log(p + eps)), or log(sum(exp(z))) overflowed because no maximum was "
            "subtracted before exp. Compute -log softmax(z)_y as logsumexp(z) - z_y, with "
            "logsumexp(z) = m + log(sum(exp(z - m))) for each row's maximum m."
        )
    return None


def _named_mistake(case, got, want, mistakes, tol, keep):
    """The first mistake whose model agrees with the whole return; failing that (a cell that
    grades one element), the first that agrees on the graded elements."""
    for whole in (True, False):
        for m in mistakes:
            for alt in m.predictions(case, want.values):
                ok = _agree(got.values, alt, tol)
                if all(ok) if whole else all(ok[i] for i in keep):
                    return m.on(case, end=".")
    return None


def _value_message(case, got, want, fname, names, oks, keep, tol) -> str:
    bad = [names[i] for i in keep if not _finite(got.values[i])]
    if bad:
        return f"{fname} returned NaN or inf in {', '.join(bad)} for {case.label}; the expected values are finite."
    if 0 in keep and not oks[0]:
        right = (
            " (the gradient is right: look at how the loss itself is computed)"
            if all(oks[1:])
            else ""
        )
        return (
            f"{fname} returned the loss {float(got.values[0].reshape(())):.10g} for {case.label}; "
            f"{expected(case, f'{float(want.values[0]):.10g}', 'expected ') or 'which is not right'}{right}."
        )
    for i in keep:
        name, g, w = names[i], got.values[i], want.values[i]
        if i and not oks[i]:
            rows = differing_rows(g, w, tol=tol)
            first = rows[0] if rows else 0
            return (
                f"{fname} returned a wrong {name} for {case.label} at rows {rows}: row {first} "
                f"is {fmt(g[first])}{expected(case, fmt(w[first]), ', expected ')}."
            )
    return f"{fname} returned a wrong result for {case.label}."  # pragma: no cover


# Part B's mistakes that Part A can make too (the reference tied function calls the untied one,
# as the notebook suggests).
PART_A_TOO = {
    "trap-overwrite",
    "not-averaged",
    "loss-not-averaged",
    "grad-not-averaged",
    "naive-softmax",
    "global-max",
    "unstable-softmax",
    "log-underflow",
    "wrong-dtype",
    "loss-not-float",
}


def untied_companion(case: Case):
    """The call of the student's untied function a tied case asks for (Outcome.companion, the
    whole return): (E, E, x, y), the untied model with both tables the tied one."""
    E, x, y = case.args
    return (UNTIED, [(E, E, x, y)], "whole")


def _own_untied(got):
    """The student's untied return on (E, E, x, y), [(type, dtype, array), ...], or None."""
    own = (got.companion or [None])[0]
    if not own:
        return None
    return [(t, np.dtype(dt), np.asarray(v, dtype=np.float64).reshape(sh)) for t, dt, sh, v in own]


def inherited(case: Case, got) -> bool:
    """The tied return is the student's own untied gradients at E_in = W_out = E, summed (the
    same loss, the same types, NaN where they have NaN): the two paths are right, and whatever
    is wrong in them comes from Part A and is graded there, once."""
    own = _own_untied(got)
    if own is None or len(own) != 3 or len(got.values) != 2:
        return False
    (t_loss, _, loss), (_, dt_in, dE_in), (_, dt_out, dW_out) = own
    dE = got.values[1]
    if dE_in.shape != dW_out.shape or dE_in.shape != dE.shape or loss.size != 1:
        return False
    if t_loss != got.types[0] or np.result_type(dt_in, dt_out) != dE.dtype:
        return False
    tol = _tol(case, np.asarray(case.args[0]).dtype)
    pairs = [(loss.reshape(-1), got.values[0].reshape(-1)), (dE_in + dW_out, dE)]
    return all(
        np.shape(a) == np.shape(b)
        and np.allclose(
            a, np.asarray(b, dtype=np.float64), rtol=tol[0], atol=tol[1], equal_nan=True
        )
        for a, b in pairs
    )


def part_a_pointer(case: Case, got, message):
    """A Part B message naming a mistake that Part A can make too, with a pointer to Part A when
    the student's untied function could not be called on the case (the companion is missing)."""
    if not message or getattr(message, "mistake", "") not in PART_A_TOO:
        return message
    if _own_untied(got) is not None:
        return message  # the untied function gives something else: the mistake is the tied one's
    tail = (
        f" (If your {TIED} calls your {UNTIED}, the mistake may be there: make Part A's tests "
        "pass first.)"
    )
    return Diagnosis(str(message) + tail, message.mistake)


def tuple_judge(fname: str, names: list[str], mistakes=(), check_types: bool = False, only=None):
    """Judge a function returning (loss, table, ...): form, then (optionally) types, then values.
    ``only`` (an index into ``names``) grades that element alone (its type and its values); the
    others are still computed, to name a mistake that shows in the whole return."""
    keep = list(range(len(names))) if only is None else [only]

    def judge(case: Case, got, want) -> str | None:
        problem = common_problems(case, got, want, fname)
        if problem or want.error_type is not None:
            return problem
        problem = _structure(case, got, want, fname, names)
        if problem:
            return problem
        dtype = case.args[0].dtype
        if check_types:
            problem = _types(case, got, want, fname, names, keep)
            if problem:
                return problem
        tol = _tol(case, dtype)
        oks = _agree(got.values, want.values, tol)
        if not check_types and not oks[0] and got.values[0].dtype.kind == "f":
            # a float32 loss (loss-not-float, graded by the loss cell) at its own precision
            oks[0] = loss_close(got.values[0], want.values[0], _tol(case, got.values[0].dtype))
        if all(oks[i] for i in keep):
            return None
        return (
            _named_mistake(case, got, want, mistakes, tol, keep)
            or _large_logit_message(case, got, names, fname, oks, keep)
            or _value_message(case, got, want, fname, names, oks, keep, tol)
        )

    return judge


def types_only_judge(case: Case, got, want) -> str | None:
    """tied_bigram_loss_grad's form and types alone (a "types" test cell, ``want=None``): a
    Python float loss and dE of E's shape and dtype, whatever the values."""
    E = case.args[0]
    want = Outcome(
        values=[np.zeros(()), np.zeros(E.shape, dtype=E.dtype)],
        types=["float", "numpy.ndarray"],
        is_tuple=True,
    )
    problem = common_problems(case, got, want, TIED) or _structure(
        case, got, want, TIED, TIED_NAMES
    )
    return problem or _types(case, got, want, TIED, TIED_NAMES)


def forgiving_whole(judge, graded_elsewhere, mistakes):
    """``judge`` (a cell grading one element), but a mistake of ``graded_elsewhere`` (ids) whose
    model agrees with the whole return passes: another cell grades it, so it costs that cell
    alone (a wrong element that merely looks like it, the rest right, still fails here)."""
    by_id = {m.name: m for m in mistakes if m.name in graded_elsewhere}

    def lenient(case: Case, got, want):
        message = judge(case, got, want)
        m = by_id.get(getattr(message, "mistake", None))
        if m is None:
            return message
        tol = _tol(case, case.args[0].dtype)
        for alt in m.predictions(case, want.values):
            if all(_agree(got.values, alt, tol)):
                return None
        return message

    return lenient


AVERAGING = {"not-averaged", "loss-not-averaged", "grad-not-averaged"}
# Part B's mistakes in the two paths, judged by its values cell; its repeated-id and
# large-logit cells excuse them (each costs one cell).
TIED_PATHS = {
    "output-path-only",
    "output-path-doubled",
    "input-path-only",
    "paths-averaged",
    "no-target-subtracted",
}
UNTIED_DETAILS = {m.name for m in UNTIED_MISTAKES}  # graded by the loss, dE_in and dW_out cells
# Part A's three value cells grade one element each (and its type): a mistake in one of them
# costs that cell alone; its large-logits cell grades stability (the whole return, a mistake
# of the other three cells aside).
untied_judges = {
    name: tuple_judge(UNTIED, UNTIED_NAMES, UNTIED_MISTAKES, check_types=True, only=i)
    for i, name in enumerate(UNTIED_NAMES)
}
# The 1/N factor missing everywhere is graded by the loss cell, missing from the gradients alone
# by the dE_in cell: each costs one cell.
untied_judges["dE_in"] = forgiving_whole(
    untied_judges["dE_in"], {"untied-not-averaged"}, UNTIED_MISTAKES
)
untied_judges["dW_out"] = forgiving_whole(
    untied_judges["dW_out"], {"untied-not-averaged", "untied-grad-not-averaged"}, UNTIED_MISTAKES
)
untied_judges["large"] = forgiving(
    tuple_judge(UNTIED, UNTIED_NAMES, UNTIED_MISTAKES), UNTIED_DETAILS
)
_tied_values_judge = tuple_judge(TIED, TIED_NAMES, TIED_MISTAKES)


def _tied(judge):
    """A Part B judge: a return that is the student's own untied gradients summed passes (a Part
    A mistake is graded in Part A, once); a mistake Part A can make too points to Part A."""

    def tied(case: Case, got, want) -> str | None:
        message = judge(case, got, want)
        if message and inherited(case, got):
            return None
        return part_a_pointer(case, got, message)

    return tied


# Part B: the two paths (values), a repeated id (the 1/N factor graded by the values cell),
# large logits (stability: the 1/N factor and a repeated id graded elsewhere) and the form.
tied_judge = _tied(_tied_values_judge)
tied_repeated_judge = _tied(forgiving(_tied_values_judge, AVERAGING | TIED_PATHS))
tied_large_judge = _tied(forgiving(_tied_values_judge, AVERAGING | TIED_PATHS | {"trap-overwrite"}))
tied_types_judge = _tied(types_only_judge)

JUDGES = {
    **{f"{UNTIED}:{name}": judge for name, judge in untied_judges.items()},
    TIED: tied_judge,
    f"{TIED}:repeated": tied_repeated_judge,
    f"{TIED}:large": tied_large_judge,
    f"{TIED}:types": tied_types_judge,
}
expect = make_expect(
    JUDGES, MISTAKES, companions={k: untied_companion for k in JUDGES if k.startswith(TIED)}
)
