"""Chapter 9's public judges and mistake models (pasted into the released notebook).

``quantize_rows`` returns (codes, scale, offset): its judge compares the codes exactly and the
scale and offset closely, then names a classic mistake from what the answer has in common with the
expected one (a predicate on the expected value and the student's, never a quantization computed
afresh): one scale for the whole table, truncation, ties rounded up, 2^b levels, a constant row,
codes that wrapped around, int8 codes, and the dtypes of FBGEMM's two formats.

The sharded functions return one array per rank (a list). Their mistake models need to know which
shard owns each id; a case carries that in its meta, as chapter 4's cases carry their bags:
``meta["starts"]``, the (R,) first row of each shard, and ``meta["owner"]``, one (N_r,) array per
rank with the shard of each of its ids. A visible test states them literally; the hidden checks
compute them. Without them the models stay silent.
"""

from __future__ import annotations

import numpy as np

from ..compare import close, differing_rows, expected, fmt
from ..judges import (
    WRONG_DTYPE,
    Mistake,
    array_judge,
    common_problems,
    one_array_problems,
)
from ..visible import make_expect

QUANT, DEQUANT, LOOKUP, BACKWARD = (
    "quantize_rows",
    "dequantize_rows",
    "sharded_lookup",
    "sharded_backward",
)
PARTS = ("codes", "scale", "offset")


# ------------------------------------------------------------------------------------------
# quantize_rows: what a case says, and how two answers compare
# ------------------------------------------------------------------------------------------
def bits_of(case) -> int:
    return int(case.args[1]) if len(case.args) > 1 else int(case.kwargs.get("bits", 8))


def levels(case) -> int:
    return 2 ** bits_of(case) - 1


def constant_rows(case) -> np.ndarray:
    """(V,) True for the rows of E whose entries are all equal."""
    E = np.asarray(case.args[0], dtype=np.float32)
    return E.min(axis=1) == E.max(axis=1)


def same_codes(g, w) -> bool:
    g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
    return g.shape == w.shape and bool(np.array_equal(g, w))


def near(g, w, rtol=2e-5) -> bool:
    """Scales and offsets: float16 ones are compared as the exact float16 values they are."""
    w = np.asarray(w)
    rtol = 1e-6 if w.dtype == np.float16 else rtol
    g, w = np.asarray(g, dtype=np.float64), w.astype(np.float64)
    return g.shape == w.shape and bool(np.allclose(g, w, rtol=rtol, atol=1e-30, equal_nan=False))


def _right_params(got, want) -> bool:
    return near(got[1], want[1]) and near(got[2], want[2])


# ------------------------------------------------------------------------------------------
# quantize_rows: the classic mistakes, each recognised by a predicate (case, got, want) -> bool
# ------------------------------------------------------------------------------------------
def _global_scale(case, got, want):
    g_scale, g_off = np.asarray(got[1], np.float64), np.asarray(got[2], np.float64)
    w_scale = np.asarray(want[1], np.float64)
    w_off = np.asarray(want[2], np.float64)
    return (
        len(w_scale) > 1
        and (np.ptp(w_scale) > 0 or np.ptp(w_off) > 0)
        and np.ptp(g_scale) <= 1e-6 * abs(g_scale[0])
        and near(g_off, np.full(len(g_off), np.min(np.asarray(want[2], np.float64))), 1e-5)
    )


def _truncated(case, got, want):
    diff = np.asarray(want[0], np.int64) - np.asarray(got[0], np.int64)
    return _right_params(got, want) and diff.min() >= 0 and diff.max() == 1


def _ties_up(case, got, want):
    w = np.asarray(want[0], np.int64)
    diff = np.asarray(got[0], np.int64) - w
    up = diff == 1
    return (
        _right_params(got, want) and diff.min() >= 0 and up.any() and bool((w[up] % 2 == 0).all())
    )


def _levels_2b(case, got, want):
    moving = ~constant_rows(case)
    k = levels(case)
    w = np.asarray(want[1], np.float64)[moving]
    return moving.any() and near(np.asarray(got[1])[moving], w * k / (k + 1), 2e-3)


def _constant_row(case, got, want):
    const = constant_rows(case)
    if not const.any():
        return False
    rest = ~const
    codes_g, codes_w = np.asarray(got[0]), np.asarray(want[0])
    rest_ok = same_codes(codes_g[rest], codes_w[rest]) and all(
        near(np.asarray(g)[rest], np.asarray(w)[rest])
        for g, w in zip(got[1:], want[1:], strict=True)
    )
    const_ok = same_codes(codes_g[const], codes_w[const]) and near(
        np.asarray(got[1])[const], np.asarray(want[1])[const]
    )
    return rest_ok and not const_ok


def _wrapped(case, got, want):
    g, w = np.asarray(got[0], np.int64), np.asarray(want[0], np.int64)
    wrong = g != w
    return _right_params(got, want) and wrong.any() and bool((g[wrong] > levels(case)).all())


def _from_exact_minimum(case, got, want):
    """Codes measured from the row's exact minimum while the stored offset is its float16
    rounding (the scale taken from either range): the codes differ only in rows whose offset
    moved, each by at most the move (in steps, plus one for rounding) and in the direction the
    offset moved."""
    E = np.asarray(case.args[0], np.float32)
    mins, off = E.min(axis=1), np.asarray(want[2]).astype(np.float32)
    exact = ((E.max(axis=1) - mins) / np.float32(levels(case))).astype(np.asarray(want[1]).dtype)
    exact[exact == 0] = 1
    scale_ok = near(got[1], want[1]) or near(got[1], exact)
    diff = np.asarray(got[0], np.int64) - np.asarray(want[0], np.int64)
    moved = off != mins
    if not (bits_of(case) < 8 and scale_ok and near(got[2], want[2]) and diff.any()):
        return False
    shift = (off - mins)[:, None]
    steps = np.abs(shift) / np.asarray(got[1]).astype(np.float32)[:, None] + 1
    return bool(
        not diff[~moved].any()
        and np.all(diff * np.sign(shift) >= 0)
        and np.all(np.abs(diff) <= steps)
    )


def _signed(case, got, want):
    g = np.asarray(got[0])
    return g.dtype == np.int8 and same_codes(g.astype(np.int64) % 256, want[0])


GLOBAL_SCALE = Mistake(
    "global-scale",
    f"{QUANT} used one scale and offset for the whole table: every row must get its own, from its "
    "own minimum and maximum (a shared scale must span the widest row, and the narrow rows lose "
    "their precision)",
)
TRUNCATED = Mistake(
    "truncated",
    f"{QUANT} truncated the codes instead of rounding them: (x - offset) / scale must be rounded "
    "to the nearest integer (np.rint), not cut down by astype or np.floor",
)
TIES_UP = Mistake(
    "ties-half-up",
    f"{QUANT} rounded exact ties up (np.floor(t + 0.5), or int(t + 0.5)): FBGEMM's lrintf, "
    "np.rint and np.round send a tie to the even neighbour (0.5 -> 0, 1.5 -> 2, 2.5 -> 2)",
)
LEVELS = Mistake(
    "levels-2b",
    f"{QUANT} divided the range by 2^b instead of 2^b - 1: b bits give the 2^b codes "
    "0 ... 2^b - 1, so there are 2^b - 1 steps from the minimum to the maximum (with 2^b steps the "
    "maximum maps to code 2^b, which does not fit: uint8 wraps 256 to 0)",
)
CONSTANT = Mistake(
    "constant-row",
    f"{QUANT} got a constant row wrong: its maximum equals its minimum, so its range is 0 and "
    "dividing by the scale divides by zero (NaN, or a scale of 0). A constant row's codes are 0, its "
    "scale 0 for 8 bits and 1 for 4 and 2 bits (FBGEMM's choice: any scale gives back the row, and "
    "1 can be inverted)",
)
WRAPPED = Mistake(
    "wrap-around",
    f"{QUANT} returned codes outside 0 ... 2^b - 1: a negative code wrapped around in uint8 (-2 "
    "becomes 254). The float16 offset can lie above the row's minimum, so (x - offset) / scale can "
    "be slightly negative: clip the rounded codes to [0, 2^b - 1] before the cast",
)
SIGNED = Mistake(
    "signed-codes",
    f"{QUANT} stored the codes as int8: codes above 127 wrap around to negative numbers. Store "
    "them as uint8 (0 ... 255)",
)
CODES_DTYPE = Mistake(
    "codes-dtype",
    f"{QUANT} returned the right codes in another dtype than uint8 (one byte per code is the point "
    "of quantizing: convert with .astype(np.uint8) after rounding and clipping)",
)
PARAMS_DTYPE = Mistake(
    "scale-dtype",
    f"{QUANT} returned the scale or the offset in the wrong dtype: FBGEMM's 8-bit format stores "
    "them as float32, its 4- and 2-bit formats as float16 (the offset rounded to float16 before the "
    "codes are computed)",
)
OFFSET_NOT_ROUNDED = Mistake(
    "offset-not-rounded",
    f"{QUANT} measured the codes from the row's exact minimum, but stores the minimum rounded to "
    "float16: dequantizing adds the float16 offset back, so every value shifts. Round the offset to "
    "float16 first and compute the range and the codes from that stored value",
)
QUANT_MISTAKES = [
    (GLOBAL_SCALE, _global_scale),
    (CONSTANT, _constant_row),
    (LEVELS, _levels_2b),
    (SIGNED, _signed),
    (WRAPPED, _wrapped),
    (TRUNCATED, _truncated),
    (TIES_UP, _ties_up),
    (OFFSET_NOT_ROUNDED, _from_exact_minimum),
]


# ------------------------------------------------------------------------------------------
# quantize_rows: the judge
# ------------------------------------------------------------------------------------------
def _quant_structure(case, got, want) -> str | None:
    if not got.is_tuple or len(got.values) != 3:
        what = f"{len(got.values)} values" if got.is_tuple else f"a single {', '.join(got.types)}"
        return f"{QUANT} should return a tuple (codes, scale, offset) for {case.label}; it returned {what}."
    for part, g, w in zip(PARTS, got.values, want.values, strict=True):
        if g.shape != w.shape:
            return (
                f"{QUANT} returned {part} of shape {g.shape} for {case.label}; expected {w.shape} "
                "(codes: one per entry of E; scale and offset: one per row)."
            )
    return None


def _quant_dtypes(case, got, want) -> str | None:
    codes = got.values[0]
    if codes.dtype != np.uint8:
        if codes.dtype == np.int8:
            return SIGNED.on(case)
        return CODES_DTYPE.said(f"{CODES_DTYPE.message}; got {codes.dtype} (for {case.label}).")
    for part, g, w in zip(PARTS[1:], got.values[1:], want.values[1:], strict=True):
        if g.dtype != w.dtype:
            return PARAMS_DTYPE.said(
                f"{PARAMS_DTYPE.message}. For bits={bits_of(case)} the {part} must be {w.dtype}, "
                f"got {g.dtype} (for {case.label})."
            )
    return None


def _quant_wrong(case, got, want) -> str:
    """Where a wrong answer is wrong, when no classic mistake explains it."""
    for part, g, w in zip(PARTS, got.values, want.values, strict=True):
        ok = same_codes(g, w) if part == "codes" else near(g, w)
        if not ok:
            rows = differing_rows(g, w, tol=(0.0, 0.0)) if part == "codes" else None
            if rows is None:
                bad = ~np.isclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=2e-5)
                rows = [int(i) for i in np.flatnonzero(bad)[:6]]
            first = rows[0] if rows else 0
            return (
                f"{QUANT} returned wrong {part} for {case.label} at rows {rows}: row {first} is "
                f"{fmt(g[first])}{expected(case, fmt(w[first]), ', expected ')}."
            )
    return f"{QUANT} is wrong for {case.label}."  # pragma: no cover


def quant_judge(extra=()):
    """The quantize_rows judge; ``extra``: more (Mistake, predicate) pairs, tried after these."""

    def judge(case, got, want) -> str | None:
        problem = common_problems(case, got, want, QUANT)
        if problem or want.error_type is not None:
            return problem
        problem = _quant_structure(case, got, want)
        if problem:
            return problem
        g, w = got.values, want.values
        if same_codes(g[0], w[0]) and near(g[1], w[1]) and near(g[2], w[2]):
            return _quant_dtypes(case, got, want)
        for mistake, applies in [*QUANT_MISTAKES, *extra]:
            if applies(case, g, w):
                return mistake.on(case)
        return _quant_wrong(case, got, want)

    return judge


def bits_judge(case, got, want) -> str | None:
    """An unsupported bit width must raise ValueError."""
    return common_problems(case, got, want, QUANT)


# ------------------------------------------------------------------------------------------
# dequantize_rows
# ------------------------------------------------------------------------------------------
def _d_args(case):
    codes, scale, offset = case.args
    return (
        np.asarray(codes, np.float64),
        np.asarray(scale, np.float64),
        np.asarray(offset, np.float64),
    )


def _no_offset(case, want):
    return np.asarray(want, np.float64) - _d_args(case)[2][:, None]


def _divided(case, want):
    codes, scale, offset = _d_args(case)
    if np.any(scale == 0):
        return None
    return codes / scale[:, None] + offset[:, None]


def _per_column(case, want):
    codes, scale, offset = _d_args(case)
    if codes.shape[0] != codes.shape[1]:
        return None
    return codes * scale[None, :] + offset[None, :]


NO_OFFSET = Mistake(
    "no-offset",
    f"{DEQUANT} left out the offset: a code counts steps up from the row's minimum, so the value "
    "is code * scale + offset",
    _no_offset,
)
DIVIDED = Mistake(
    "divided-by-scale",
    f"{DEQUANT} divided the codes by the scale: the scale is the size of one step, so the value "
    "is code * scale + offset",
    _divided,
)
PER_COLUMN = Mistake(
    "scale-per-column",
    f"{DEQUANT} applied scale[j] and offset[j] to column j: they belong to the rows (scale[i] to "
    "row i). codes * scale broadcasts scale along the last axis; use scale[:, None]",
    _per_column,
)
FLOAT16_MATH = Mistake(
    "float16-arithmetic",
    f"{DEQUANT} computed in float16 (the dtype of a 4-bit scale and offset) and returned float16: "
    "convert the scale and offset to float32 first, as FBGEMM does, and return float32",
)
_dequant_values = array_judge(
    DEQUANT,
    mistakes=[NO_OFFSET, DIVIDED, PER_COLUMN],
    dtype_hint="FBGEMM dequantizes to float32 whatever the scale's dtype: return float32.",
)


def dequant_judge(case, got, want) -> str | None:
    problem = one_array_problems(case, got, want, DEQUANT)
    if problem or want.error_type is not None:
        return problem
    if got.value.dtype == np.float16:
        return FLOAT16_MATH.on(case)
    return _dequant_values(case, got, want)


# ------------------------------------------------------------------------------------------
# The sharded lookup: one array per rank; the models read the routing from meta
# ------------------------------------------------------------------------------------------
def _routing(case):
    """(starts (R,), owner: one array per rank) from meta, or None."""
    starts, owner = case.meta.get("starts"), case.meta.get("owner")
    if starts is None or owner is None:
        return None
    return np.asarray(starts, np.int64), [np.asarray(o, np.int64) for o in owner]


def _table(case):
    """The shards stacked (the table), float64, and the shard sizes."""
    shards = case.args[0]
    return np.concatenate([np.asarray(s, np.float64) for s in shards]), [len(s) for s in shards]


def _not_reordered(case, want):
    route = _routing(case)
    if route is None:
        return None
    alt = [np.asarray(w)[np.argsort(o, kind="stable")] for w, o in zip(want, route[1], strict=True)]
    return None if all(np.array_equal(a, w) for a, w in zip(alt, want, strict=True)) else alt


def _rows_at(case, where):
    """Each rank's rows at the (shard, local row) that ``where(ids, R, sizes, starts)`` gives,
    or None where such a lookup would have raised (a local row past its shard's end)."""
    route = _routing(case)
    if route is None:
        return None
    E, sizes = _table(case)
    out = []
    for ids in case.args[1]:
        ids = np.asarray(ids, np.int64)
        shard, local = where(ids, len(sizes), sizes, route[0])
        ok = (shard >= 0) & (shard < len(sizes))
        if not ok.all() or (local >= np.asarray(sizes)[shard]).any():
            return None
        out.append(E[route[0][shard] + local])
    return out


def _modulo(ids, R, sizes, starts):
    return ids % R, ids // R


def _equal_blocks(ids, R, sizes, starts):
    block = -(-sum(sizes) // R)  # ceil(V / R): TorchRec's layout, not these shards
    return ids // block, ids % block


def _global_local(ids, R, sizes, starts):
    shard = np.searchsorted(starts, ids, side="right") - 1
    return shard, ids


OWNER = (
    "owns row x: the shard s with start_s <= x < start_s + n_s, read from the shards' own sizes "
    "(they may differ, and a shard may be empty)"
)
NOT_REORDERED = Mistake(
    "rows-not-reordered",
    f"{LOOKUP} returned each rank's rows grouped by the shard that served them, not in the order "
    "of the rank's batch: put each row back at the position its id came from",
    _not_reordered,
)
WRONG_OWNER = Mistake(
    "wrong-owner",
    f"{LOOKUP} routed ids to the wrong shard (as if rows were dealt out cyclically, id % R, or in "
    f"equal blocks of ceil(V / R)): the shard that {OWNER}",
    (lambda c, w: _rows_at(c, _modulo), lambda c, w: _rows_at(c, _equal_blocks)),
)
LOCAL_INDEX = Mistake(
    "local-index",
    f"{LOOKUP} indexed a shard with the global id: shard s holds rows start_s ... start_s + n_s - 1, "
    "so id x is its row x - start_s",
    lambda c, w: _rows_at(c, _global_local),
)
WRONG_RANK = Mistake(
    "wrong-rank",
    f"{LOOKUP} sent a rank the rows of another rank's batch: the r-th result holds the rows of "
    "batches[r]",
)


def _index_error(case, got, fname) -> str | None:
    if got.error_type != "IndexError":
        return None
    return WRONG_OWNER.said(
        f"{fname} raised IndexError for {case.label} ({got.error}): it routed ids to the wrong "
        "shard, or indexed a shard with the global id, so an id was looked up in a shard that does "
        f"not hold it. The owner of id x is the shard that {OWNER}; it is that shard's row "
        "x - start_s."
    )


# ------------------------------------------------------------------------------------------
# The sharded backward: one gradient per shard
# ------------------------------------------------------------------------------------------
def _shard_sizes(case):
    return [int(n) for n in np.asarray(case.args[0]).reshape(-1)]


def _scatter(case, ranks=None, buffered=False):
    """Each shard's gradient from the positions of ``ranks`` (default: every rank), added with
    np.add.at, or with a buffered += (one write per repeated row and rank)."""
    route = _routing(case)
    if route is None:
        return None
    starts, owner = route
    sizes, (batches, grads) = _shard_sizes(case), case.args[1:]
    d = np.asarray(grads[0]).shape[1]
    out = [np.zeros((n, d)) for n in sizes]
    for r, (ids, g, o) in enumerate(zip(batches, grads, owner, strict=True)):
        if ranks is not None and r not in ranks:
            continue
        ids, g = np.asarray(ids, np.int64), np.asarray(g, np.float64)
        for s in range(len(sizes)):
            mine = o == s
            if buffered:
                out[s][ids[mine] - starts[s]] += g[mine]
            else:
                np.add.at(out[s], ids[mine] - starts[s], g[mine])
    return out


def _overwritten(case, want):
    route = _routing(case)
    if route is None:
        return None
    repeats = any(np.unique(np.asarray(ids)).size < np.asarray(ids).size for ids in case.args[1])
    return _scatter(case, buffered=True) if repeats else None


def _last_rank_only(case, want):
    R = len(case.args[1])
    return None if R < 2 else _scatter(case, ranks={R - 1})


def _modulo_backward(case, want):
    sizes, (batches, grads) = _shard_sizes(case), case.args[1:]
    R, d = len(sizes), np.asarray(grads[0]).shape[1]
    out = [np.zeros((n, d)) for n in sizes]
    for ids, g in zip(batches, grads, strict=True):
        ids = np.asarray(ids, np.int64)
        shard, local = ids % R, ids // R
        if (local >= np.asarray(sizes)[shard]).any():
            return None
        for s in range(R):
            np.add.at(out[s], local[shard == s], np.asarray(g, np.float64)[shard == s])
    return out


OVERWRITTEN = Mistake(
    "repeated-overwritten",
    f"{BACKWARD} kept one upstream row for an id that a rank looked up several times: "
    "dE[rows] += g writes each repeated row once (chapter 3's trap). Every position must add its "
    "row, e.g. with np.add.at",
    _overwritten,
)
RANKS_LOST = Mistake(
    "ranks-overwrite",
    f"{BACKWARD} kept only the last rank's contributions to each shard: the gradients that every "
    "rank sends to a shard must be added up (start each shard's gradient at zero once, not once per "
    "rank)",
    _last_rank_only,
)
WRONG_OWNER_B = Mistake(
    "grad-wrong-owner",
    f"{BACKWARD} sent gradients to the wrong shard (as if rows were dealt out cyclically, id % R): "
    f"the shard that {OWNER} accumulates row x's gradient, in its row x - start_s",
    _modulo_backward,
)
FULL_TABLE = Mistake(
    "full-table-gradient",
    f"{BACKWARD} returned a gradient as tall as the whole table: each shard's gradient has one row "
    "per row of that shard, (n_r, d), and its row j belongs to the table's row start_r + j",
)


def _per_rank_structure(case, got, want, fname, what) -> str | None:
    R = len(want.values)
    if not got.is_tuple or len(got.values) != R:
        if fname == BACKWARD and not got.is_tuple and got.value is not None:
            return FULL_TABLE.on(case)
        n = len(got.values) if got.is_tuple else 1
        return f"{fname} should return a list of {R} arrays (one per {what}) for {case.label}; got {n}."
    for r, (g, w) in enumerate(zip(got.values, want.values, strict=True)):
        if g.shape != w.shape:
            if fname == BACKWARD and g.ndim == 2 and g.shape[0] == sum(_shard_sizes(case)):
                return FULL_TABLE.on(case)
            return (
                f"{fname} returned an array of shape {g.shape} for {what} {r} for {case.label}; "
                f"expected {w.shape}."
            )
    return None


def per_rank_judge(fname: str, what: str, mistakes, predicates=()):
    """Judge a function that returns one array per rank (or shard)."""

    def judge(case, got, want) -> str | None:
        hint = _index_error(case, got, fname)
        problem = hint or common_problems(case, got, want, fname)
        if problem or want.error_type is not None:
            return problem
        problem = _per_rank_structure(case, got, want, fname, what)
        if problem:
            return problem
        g, w = got.values, want.values
        oks = [close(a, b, b.dtype) for a, b in zip(g, w, strict=True)]
        if all(oks):
            for r, (a, b) in enumerate(zip(g, w, strict=True)):
                if a.dtype != b.dtype:
                    return WRONG_DTYPE.said(
                        f"{fname} returned {a.dtype} for {what} {r} for {case.label}; expected "
                        f"{b.dtype}, the dtype of the {'shards' if fname == LOOKUP else 'grads'}."
                    )
            return None
        for m in mistakes:
            for alt in m.predictions(case, w):
                if all(
                    np.shape(a) == b.shape and close(b, a, b.dtype)
                    for a, b in zip(alt, g, strict=True)
                ):
                    return m.on(case)
        for m, applies in predicates:
            if applies(case, g, w):
                return m.on(case)
        r = oks.index(False)
        rows = differing_rows(g[r], w[r], w[r].dtype)
        first = rows[0] if rows else 0
        return (
            f"{fname} returned wrong values for {case.label} on {what} {r} at rows {rows}: row "
            f"{first} is {fmt(g[r][first])}{expected(case, fmt(w[r][first]), ', expected ')}."
        )

    return judge


def _other_rank(case, got, want):
    return any(
        s != r and a.shape == b.shape and close(a, b, b.dtype)
        for r, a in enumerate(got)
        for s, b in enumerate(want)
    )


lookup_judge = per_rank_judge(
    LOOKUP, "rank", [NOT_REORDERED, WRONG_OWNER, LOCAL_INDEX], [(WRONG_RANK, _other_rank)]
)
backward_judge = per_rank_judge(BACKWARD, "shard", [OVERWRITTEN, RANKS_LOST, WRONG_OWNER_B])

JUDGES = {
    QUANT: quant_judge(),
    f"{QUANT}:bits": bits_judge,
    DEQUANT: dequant_judge,
    LOOKUP: lookup_judge,
    BACKWARD: backward_judge,
}
MISTAKES = [
    *(m for m, _ in QUANT_MISTAKES),
    CODES_DTYPE,
    PARAMS_DTYPE,
    NO_OFFSET,
    DIVIDED,
    PER_COLUMN,
    FLOAT16_MATH,
    NOT_REORDERED,
    WRONG_OWNER,
    LOCAL_INDEX,
    WRONG_RANK,
    OVERWRITTEN,
    RANKS_LOST,
    WRONG_OWNER_B,
    FULL_TABLE,
]
expect = make_expect(JUDGES, MISTAKES)
