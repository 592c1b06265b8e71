"""Chapter 5: weight tying, one table on two paths. Hidden checks for its exercise.

Both graded functions return a tuple (a loss and one or two gradient tables), which array_judge
does not handle: :func:`tuple_judge` below compares each element (the loss within a tolerance
relative to its own size, each table with :func:`close`) and names the classic mistakes. The
mistake models build their wrong answers from the reference itself (never a second copy of it):
one path alone is one of the untied reference's two tables, and the input-path contribution of a
single position is the reference evaluated on that position alone.
"""

from __future__ import annotations

import numpy as np

from . import reference
from .compare import close, differing_rows, expected, fmt, tolerance
from .data import distinct as _distinct
from .data import ids as _ids
from .data import table as _table
from .framework import Case, Mistake, checks_for, common_problems

A = "05_weight_tying"
check = checks_for(A)
UNTIED_ARGS = ["E_in", "W_out", "x", "y"]
TIED_ARGS = ["E", "x", "y"]


def _untied_ref(E_in, W_out, x, y):
    return reference.function(A, "untied_bigram_loss_grad")(E_in, W_out, x, y)


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------
WORKED = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]])
WORKED_OUT = np.array([[0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])


def untied_case(label, E_in, W_out, x, y, **meta):
    return Case(
        label, (E_in, W_out, np.asarray(x), np.asarray(y)), meta={"arg_names": UNTIED_ARGS, **meta}
    )


def tied_case(label, E, x, y, **meta):
    return Case(label, (E, np.asarray(x), np.asarray(y)), meta={"arg_names": TIED_ARGS, **meta})


def _scaled_to(E, x, max_logit):
    """E scaled so that the largest self-logit ||E[x_n]||^2 equals max_logit."""
    return E * np.sqrt(max_logit / np.max(np.sum(E[x].astype(np.float64) ** 2, axis=1)))


# --------------------------------------------------------------------------------------------
# Classic mistakes, modelled from the case and the reference: model(case, want_values) -> values
# --------------------------------------------------------------------------------------------
def _tied_parts(case):
    E, x, y = case.args
    return _untied_ref(E, E, x, y)  # (loss, input path, output path)


def _output_only(case, want):
    loss, _, d_out = _tied_parts(case)
    return [loss, d_out]


def _input_only(case, want):
    loss, d_in, _ = _tied_parts(case)
    return [loss, d_in]


def _last_write_input_path(E_in, W_out, x, y):
    """The input path when G[x] += rows (or G[x] = rows) keeps one write per row: the last one.

    The contribution of position n is the reference on position n alone, divided by N.
    """
    x, y = np.asarray(x), np.asarray(y)
    if len(np.unique(x)) == len(x):
        return None
    out = np.zeros(E_in.shape, dtype=np.float64)
    for n in range(len(x)):  # later positions overwrite earlier ones
        _, d_in, _ = _untied_ref(E_in, W_out, x[n : n + 1], y[n : n + 1])
        out[x[n]] = d_in[x[n]].astype(np.float64) / len(x)
    return out


def _tied_overwritten(case, want):
    E, x, y = case.args
    d_in = _last_write_input_path(E, E, x, y)
    if d_in is None:
        return None
    loss, _, d_out = _tied_parts(case)
    return [loss, d_out.astype(np.float64) + d_in]


def _untied_overwritten(case, want):
    E_in, W_out, x, y = case.args
    d_in = _last_write_input_path(E_in, W_out, x, y)
    return None if d_in is None else [want[0], d_in, want[2]]


def _times_n(loss_too, grads_too):
    def model(case, want):
        N = len(case.args[-1])
        if N == 1:
            return None
        return [w * N if (grads_too if i else loss_too) else w for i, w in enumerate(want)]

    return model


def _not_averaged(which, loss_too, grads_too):
    return Mistake(
        f"not averaged ({which})",
        f"{which} N times too large: not averaged over N. The loss is the mean over the N "
        "positions, so the loss and every gradient term carry a factor 1/N",
        _times_n(loss_too, grads_too),
    )


def _averaging_mistakes(all_of_them, grads):
    return [
        _not_averaged(f"{all_of_them} are", True, True),
        _not_averaged("the loss is", True, False),
        _not_averaged(grads, False, True),
    ]


TIED_MISTAKES = [
    Mistake(
        "output path only",
        "dE holds only the output path (Delta^T H, the table as output layer). The same table is "
        "also the input table: add the input path S^T (Delta E) for the rows that were looked up",
        _output_only,
    ),
    Mistake(
        "input path only",
        "dE holds only the input path (S^T (Delta E), the rows that were looked up). The same table "
        "also scores every output token: add the output path Delta^T H, which reaches every row",
        _input_only,
    ),
    Mistake(
        "repeated ids overwritten",
        "a row looked up more than once got the input-path gradient of only one of its positions: "
        "repeated input ids were overwritten (dE[x] += ... and dE[x] = ... keep one write per row). "
        "Every occurrence must add its row, e.g. with np.add.at or S^T (Delta E)",
        _tied_overwritten,
    ),
    *_averaging_mistakes("the loss and dE", "dE is"),
]

UNTIED_MISTAKES = [
    Mistake(
        "repeated ids overwritten",
        "a row of dE_in looked up more than once got the gradient of only one of its positions: "
        "repeated input ids were overwritten (dE_in[x] += ... and dE_in[x] = ... keep one write per "
        "row). Every occurrence must add its row, e.g. with np.add.at or S^T (Delta W_out)",
        _untied_overwritten,
    ),
    *_averaging_mistakes("the loss, dE_in and dW_out", "dE_in and dW_out are"),
]


# --------------------------------------------------------------------------------------------
# The judge: a tuple (loss, table, ...) compared element by element
# --------------------------------------------------------------------------------------------
def loss_close(got, want, dtype) -> bool:
    """Equal within the dtype's relative tolerance, relative to the loss's own size (at least 1)."""
    g, w = float(np.asarray(got, dtype=np.float64).reshape(())), float(want)
    if not (np.isfinite(g) and np.isfinite(w)):
        return False
    return abs(g - w) <= tolerance(dtype)[0] * max(abs(w), 1.0)


def _agree(values, want, dtype) -> list[bool]:
    return [loss_close(values[0], want[0], dtype)] + [
        close(g, np.asarray(w), dtype) for g, w in zip(values[1:], want[1:], strict=True)
    ]


def _structure(case, got, want, fname, names) -> str | None:
    """The return has the right form: a tuple of len(names), one number, then (V, d) tables."""
    n = len(names)
    if not got.is_tuple or len(got.values) != n:
        what = (
            f"a tuple of {len(got.values)}" if got.is_tuple else f"a single {', '.join(got.types)}"
        )
        return f"{fname} should return a tuple ({', '.join(names)}) for {case.label}; it returned {what}."
    loss = got.values[0]
    if loss.size != 1:
        return (
            f"{fname} returned a loss of shape {loss.shape} for {case.label}; it should be one "
            "number, the mean of the per-position losses over the N positions."
        )
    for name, g, w in zip(names[1:], got.values[1:], want.values[1:], strict=True):
        if g.shape != w.shape:
            hint = " It looks transposed." if g.shape == w.shape[::-1] and g.ndim == 2 else ""
            return (
                f"{fname} returned {name} of shape {g.shape} for {case.label}; expected {w.shape}, "
                f"the table's shape (one row per token).{hint}"
            )
    return None


def _finite(a) -> bool:
    return bool(np.all(np.isfinite(np.asarray(a, dtype=np.float64))))


def _large_logit_message(case, got, names, fname, oks) -> str | None:
    """Name the two numerical failures of large logits: overflow, and the log of an underflow."""
    if not case.meta.get("large"):
        return None
    grads_finite = all(_finite(g) for g in got.values[1:])
    if not grads_finite:
        return (
            f"{fname} returned NaN or inf for {case.label}: exp of logits this large overflows "
            "(a naive softmax gives inf / inf = NaN). Subtract each row's maximum logit before exp "
            "(the log-sum-exp trick); the probabilities do not change."
        )
    if not oks[0] and all(oks[1:]):
        what = "inf or NaN" if not _finite(got.values[0]) else "wrong"
        return (
            f"{fname}'s loss is {what} for {case.label} although the gradient is right: the "
            "softmax probability of the target underflowed to 0 and its log was taken (log(p), or a "
            "clipped log(p + eps)). Compute -log softmax(z)_y as logsumexp(z) - z_y instead."
        )
    return None


def tuple_judge(fname: str, names: list[str], mistakes=(), check_types: bool = False):
    """Judge a function returning (loss, table, ...): form, then (optionally) types, then values."""

    def judge(case: Case, got, want) -> str | None:
        problem = common_problems(case, got, want, fname)
        if problem or want.error_type is not None:
            return problem
        problem = _structure(case, got, want, fname, names)
        if problem:
            return problem
        dtype = case.args[0].dtype
        if check_types:
            if got.types[0] != "float":
                return (
                    f"{fname} returned the loss as {got.types[0]} for {case.label}; return a Python "
                    "float (wrap it: float(loss)). A numpy float64 is a float; a 0-d array, a numpy "
                    "float32 or a tensor is not."
                )
            for name, g, w in zip(names[1:], got.values[1:], want.values[1:], strict=True):
                if g.dtype != w.dtype:
                    return (
                        f"{fname} returned {name} as {g.dtype} for {case.label}; expected {w.dtype}, "
                        "the table's dtype (cast the result back: .astype(E.dtype))."
                    )
        oks = _agree(got.values, want.values, dtype)
        if all(oks):
            return None
        for m in mistakes:
            alt = m.model(case, want.values)
            if alt is not None and all(_agree(got.values, alt, dtype)):
                return f"{m.message} (for {case.label})."
        message = _large_logit_message(case, got, names, fname, oks)
        if message:
            return message
        bad = [name for name, g in zip(names, got.values, strict=True) if not _finite(g)]
        if bad:
            return f"{fname} returned NaN or inf in {', '.join(bad)} for {case.label}; the expected values are finite."
        if not oks[0]:
            right = (
                " (the gradient is right: look at how the loss itself is computed)"
                if all(oks[1:])
                else ""
            )
            return (
                f"{fname} returned the loss {float(got.values[0].reshape(())):.10g} for {case.label}; "
                f"{expected(case, f'{float(want.values[0]):.10g}', 'expected ') or 'which is not right'}{right}."
            )
        for name, g, w, ok in zip(names[1:], got.values[1:], want.values[1:], oks[1:], strict=True):
            if not ok:
                rows = differing_rows(g, w, dtype)
                first = rows[0] if rows else 0
                return (
                    f"{fname} returned a wrong {name} for {case.label} at rows {rows}: row {first} "
                    f"is {fmt(g[first])}{expected(case, fmt(w[first]), ', expected ')}."
                )
        return None  # pragma: no cover - one of the above always applies

    return judge


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------


UNTIED = "untied_bigram_loss_grad"
TIED = "tied_bigram_loss_grad"
untied_judge = tuple_judge(UNTIED, ["loss", "dE_in", "dW_out"], UNTIED_MISTAKES)
tied_judge = tuple_judge(TIED, ["loss", "dE"], TIED_MISTAKES)


def _random_untied(V, d, N, seed):
    """Random (V, d) tables and N random positions, from seeds seed .. seed + 3."""
    E_in, W_out = _table(V, d, seed), _table(V, d, seed + 1)
    return untied_case(
        f"random ({V}, {d}) tables, N = {N}",
        E_in,
        W_out,
        _ids(N, V, seed + 2),
        _ids(N, V, seed + 3),
    )


def _random_tied(kind, V, d, N, seed, inputs, dtype=np.float64):
    """A random (V, d) table, N inputs drawn by ``inputs`` and N random targets."""
    E = _table(V, d, seed, dtype)
    return tied_case(
        f"{kind} ({V}, {d}) table, N = {N}", E, inputs(N, V, seed + 1), _ids(N, V, seed + 2)
    )


@check("test_untied", UNTIED, untied_judge)
def untied():
    """untied_bigram_loss_grad: the loss and both tables' gradients"""
    return [
        untied_case(
            "the visible example (x = [0, 2, 0])", WORKED, WORKED_OUT, [0, 2, 0], [1, 0, 2]
        ),
        _random_untied(20, 5, 30, 1),
        _random_untied(100, 8, 64, 5),
        untied_case("a single position (N = 1)", _table(7, 3, 9), _table(7, 3, 10), [4], [6]),
        untied_case(
            "the same input id 40 times",
            _table(9, 4, 11),
            _table(9, 4, 12),
            np.full(40, 3),
            _ids(40, 9, 13),
        ),
    ]


@check("test_tied_values", TIED, tied_judge)
def tied_values():
    """tied_bigram_loss_grad: the loss, and dE as the output path plus the input path"""
    return [
        tied_case("the visible example (x = [0, 2], y = [1, 0])", WORKED, [0, 2], [1, 0]),
        _random_tied("a random", 10, 4, 6, 20, _distinct),
        _random_tied("a random", 300, 16, 100, 23, _distinct),
        _random_tied("a float32", 50, 8, 20, 26, _distinct, np.float32),
        tied_case(
            "targets equal to the inputs (y = x)",
            _table(12, 3, 29),
            _distinct(8, 12, 30),
            _distinct(8, 12, 30),
        ),
    ]


@check("test_tied_repeated", TIED, tied_judge)
def tied_repeated():
    """tied_bigram_loss_grad: a repeated input id collects the input path once per occurrence"""
    return [
        tied_case("the visible example (x = [2, 2, 0])", WORKED, [2, 2, 0], [0, 1, 2]),
        _random_tied("a random", 30, 6, 200, 40, _ids),
        tied_case("the same input id 50 times", _table(8, 4, 43), np.full(50, 4), _ids(50, 8, 44)),
        _random_tied("a float32", 40, 5, 120, 45, _ids, np.float32),
        tied_case(
            "inputs alternating 1, 3, 1, 3, ...",
            _table(6, 3, 48),
            np.tile([1, 3], 10),
            _ids(20, 6, 49),
        ),
    ]


@check("test_tied_large_logits", TIED, tied_judge)
def tied_large_logits():
    """tied_bigram_loss_grad: logits too large for a naive softmax"""
    E1 = 40.0 * WORKED
    x2 = _distinct(10, 20, 51)
    x3 = _distinct(8, 15, 53)
    x4 = _distinct(12, 30, 55)
    return [
        tied_case(
            "the visible example times 40 (logits up to 3200)", E1, [0, 2], [1, 0], large=True
        ),
        tied_case(
            "a (20, 8) table of scale 30 (logits near 10^4)",
            _table(20, 8, 50, scale=30.0),
            x2,
            _ids(10, 20, 52),
            large=True,
        ),
        tied_case(
            "logits up to 800 (exp overflows float64 above 709)",
            _scaled_to(_table(15, 4, 54), x3, 800.0),
            x3,
            _ids(8, 15, 56),
            large=True,
        ),
        tied_case(
            "a float32 table with logits up to 200 (exp overflows float32 above 88)",
            _scaled_to(_table(30, 6, 57), x4, 200.0).astype(np.float32),
            x4,
            _ids(12, 30, 58),
            large=True,
        ),
    ]


@check("test_tied_types", TIED, tuple_judge(TIED, ["loss", "dE"], TIED_MISTAKES, check_types=True))
def tied_types():
    """tied_bigram_loss_grad: a Python float loss and dE in E's dtype (N = 1, V = 1, narrow ids)"""
    E32 = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    return [
        tied_case("the visible float32 example", E32, [5, 1, 1], [0, 2, 5]),
        tied_case(
            "a float32 (100, 16) table, N = 64",
            _table(100, 16, 60, np.float32),
            _ids(64, 100, 61),
            _ids(64, 100, 62),
        ),
        tied_case("a single position (N = 1)", _table(9, 4, 63), [7], [2]),
        tied_case("a table with one row (V = 1)", _table(1, 3, 64), [0, 0, 0], [0, 0, 0]),
        tied_case(
            "int32 ids", _table(10, 3, 65), _ids(12, 10, 66, np.int32), _ids(12, 10, 67, np.int32)
        ),
        tied_case(
            "uint8 ids", _table(10, 3, 68), _ids(12, 10, 69, np.uint8), _ids(12, 10, 70, np.uint8)
        ),
    ]
