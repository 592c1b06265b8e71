"""Chapter 9's public judges and mistake models (pasted into the released notebook).

``quantize_rows`` returns (codes, scale, offset): its judge compares the codes exactly and the
scale and offset closely, then names a classic mistake from what the answer has in common with the
expected one (a predicate on the expected value and the student's, never a quantization computed
afresh): one scale for the whole table, truncation, ties rounded up, 2^b levels, a constant row,
codes that wrapped around, int8 codes, codes from the float32 scale, and the dtypes of FBGEMM's two
formats. Right values on a case with constant rows still fail when numpy warned that the call cast
NaN to an integer (``Outcome.warnings``): 0 / 0 left in the codes until the cast to uint8, which
gives 0 by accident. Two narrower
judges keep one mistake from costing every quantize cell: ``check="types"`` judges only the
structure and the dtypes, ``check="constant"`` only the degenerate rows (constant, or with a
float16 scale of 0), taking the other rows of the answer as right. Only ``check="types"`` judges
dtypes: the value judges pass an answer whose values are right in any dtype (int8 codes fail them
where a code above 127 wrapped around).

``route``'s mistake models need to know which shard owns each id; a case carries that in its
meta, as chapter 4's cases carry their bags: ``meta["starts"]``, the (R,) first row of each shard,
and ``meta["owner"]``, the (N,) shard of each id. A visible test states them literally; the hidden
checks compute them. Without them those models stay silent. ``sharded_lookup`` (one rank: the rows
in batch order) takes route's output and the owners as arguments, so its models read the routing
there. ``sharded_backward``'s mistakes are named from the results a case states for them,
``meta["wrong_grads"]`` (computed on the trusted side, or numbers in a visible test, as chapter
7 states its wrong curves): a model that computed them here would, with its defaults, be a
working backward pasted into every released notebook. Route's wrong layouts are recognised by a
predicate on the answer (``_sent_as``), never by routing afresh.

Part C's ``lazy_decay_step_`` and ``flush_decay_`` change E and last in place and return None, so
their cases grade both after the call (``output=("args", (0, 1))``). Their models start from the
expected arrays: a touched row's expected step is f**gap * E0 - lr * G (f = 1 - lr * lam, gap =
t - last), so lr * G is read back from it, and each mistake changes the factor or G. The value
cells (``decay_values_judge``) let the two laziness mistakes (dense-decay, last-not-updated)
pass: ``decay_lazy_judge`` (test_decay_lazy) alone charges them, judging only the untouched rows,
last and the None returned, not the values of the touched rows. The three catch-up mistakes
(decay-once, catch-up-off-by-one, decay-after-gradient) cost test_decay_step alone: the repeats
and edges cells (``decay_rest_judge``, check="repeats" / "edges") let them pass too.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..compare import close, differing_rows, expected, fmt
from ..judges import (
    WRONG_DTYPE,
    Mistake,
    array_judge,
    common_problems,
    explains,
    forgiving,
    in_place_problem,
    mistake_id,
    one_array_problems,
    shape_judge,
)
from ..visible import make_expect

QUANT, DEQUANT, ROUTE, LOOKUP, BACKWARD = (
    "quantize_rows",
    "dequantize_rows",
    "route",
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


def _steps(case, want) -> np.ndarray:
    """(x - offset) / scale of every entry, in float64, from the expected scale and offset (1
    where the scale is 0): where each value lies between two codes."""
    E = np.asarray(case.args[0], np.float32).astype(np.float64)
    scale = np.asarray(want[1]).astype(np.float64)
    offset = np.asarray(want[2]).astype(np.float64)
    return (E - offset[:, None]) / np.where(scale != 0, scale, 1)[:, None]


def _ties_up(case, got, want):
    """Codes one above the expected ones, and only at exact ties with an even code below them
    (x half-way between codes c and c + 1, c even): elsewhere a code one too high comes from
    another change (a scale not rounded to float16, say)."""
    w = np.asarray(want[0], np.int64)
    diff = np.asarray(got[0], np.int64) - w
    up = diff == 1
    if not (_right_params(got, want) and diff.min() >= 0 and diff.max() == 1):
        return False
    tie = np.abs(_steps(case, want) - (w + 0.5)) <= 1e-4
    return bool((w[up] % 2 == 0).all() and tie[up].all())


def _scale_not_rounded(case, got, want):
    """4 and 2 bits: the right scale and offset returned, but the codes computed with the float32
    scale (max - offset) / (2^b - 1) before its rounding to float16: every code is a rounding of
    (x - offset) / that scale, and some differ from the expected ones."""
    if bits_of(case) == 8 or not _right_params(got, want):
        return False
    E = np.asarray(case.args[0], np.float32)
    offset = np.asarray(want[2]).astype(np.float32)
    unrounded = (E.max(axis=1) - offset) / np.float32(levels(case))
    unrounded[np.asarray(want[1]) == 1] = 1  # replaced by 1 either way
    t = (E - offset[:, None]) / np.where(unrounded != 0, unrounded, 1)[:, None]
    g = np.asarray(got[0], np.float64)
    differs = not same_codes(g, want[0])
    return differs and bool(np.all(np.abs(g - np.clip(t, 0, levels(case))) <= 0.5 + 1e-6))


def _levels_2b(case, got, want):
    # the rows with a range: not constant, or constant with a value float16 cannot hold (their
    # range is the offset's rounding error, their codes 2^b - 1)
    moving = ~constant_rows(case) | np.asarray(want[0]).astype(bool).any(axis=1)
    k = levels(case)
    w = np.asarray(want[1], np.float64)[moving]
    return moving.any() and near(np.asarray(got[1])[moving], w * k / (k + 1), 2e-3)


def _constant_row(case, got, want):
    # the degenerate constant rows: codes 0 (at 4 and 2 bits, the rows float16 holds exactly)
    const = constant_rows(case) & ~np.asarray(want[0]).astype(bool).any(axis=1)
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


def _wrong_scale_rule(case, got, want):
    """The rows FBGEMM's scale-0 rule applies to (8 bits: a scale of 0; 4 and 2 bits: a float16
    scale of 0, stored as 1) given another nonzero scale (1 at 8 bits, an eps, ...), their codes
    and offsets right, every other row right. A scale left 0 at 4 and 2 bits is constant-row's
    (a division by it is 0 / 0)."""
    w_scale = np.asarray(want[1], np.float64)
    g_scale = np.asarray(got[1], np.float64)
    if g_scale.shape != w_scale.shape:
        return False
    ruled = (w_scale == 0) if bits_of(case) == 8 else (w_scale == 1) & degenerate_rows(case)
    wrong = ruled & (g_scale != w_scale)
    if not wrong.any() or not np.all(np.isfinite(g_scale[wrong])) or (g_scale[wrong] == 0).any():
        return False
    rest = ~wrong
    codes_g, codes_w = np.asarray(got[0]), np.asarray(want[0])
    return (
        same_codes(codes_g, codes_w)
        and near(np.asarray(got[2]), np.asarray(want[2]))
        and near(g_scale[rest], w_scale[rest])
    )


def _constant_shortcut(case, got, want):
    """4 and 2 bits: constant rows whose value float16 cannot hold given codes 0 (as if their
    range were 0: a test for max == min, a range from the exact minimum, a scale guarded with
    scale <= 0 or replaced by 0), everything else right. The shortcut may catch only some of those
    rows (a guard on scale <= 0 catches the offsets rounded up, not those rounded down), and may
    leave their scale and offset as they were or change them: what names it is that every one of
    those rows it gets wrong has codes 0."""
    if bits_of(case) == 8:
        return False
    E = np.asarray(case.args[0], np.float32)
    inexact = constant_rows(case) & (E[:, 0].astype(np.float16).astype(np.float32) != E[:, 0])
    codes_g, codes_w = np.asarray(got[0]), np.asarray(want[0])
    if not inexact.any() or codes_g.shape != codes_w.shape:
        return False
    wrong = inexact & (codes_g != codes_w).any(axis=1)
    if not wrong.any():
        return False
    rest = ~inexact
    rest_ok = same_codes(codes_g[rest], codes_w[rest]) and all(
        near(np.asarray(g)[rest], np.asarray(w)[rest])
        for g, w in zip(got[1:], want[1:], strict=True)
    )
    return rest_ok and not codes_g[wrong].any()


def _scale_guard_before_fp16(case, got, want):
    """4 and 2 bits: rows that are not constant but whose float16 scale underflows to 0 (their
    range, from the float16 offset, is under (2^b - 1) / 2^25) kept a scale of 0 (a guard on the
    float32 scale, applied before the rounding to float16, or none), everything else right."""
    if bits_of(case) == 8:
        return False
    E = np.asarray(case.args[0], np.float32)
    span = E.max(axis=1) - E.min(axis=1).astype(np.float16).astype(np.float32)
    under = (span != 0) & ((span / np.float32(levels(case))).astype(np.float16) == 0)
    g_scale = np.asarray(got[1], np.float64)
    if not under.any() or g_scale.shape != under.shape:
        return False
    rest = ~under
    codes_g, codes_w = np.asarray(got[0]), np.asarray(want[0])
    rest_ok = same_codes(codes_g[rest], codes_w[rest]) and all(
        near(np.asarray(g)[rest], np.asarray(w)[rest])
        for g, w in zip(got[1:], want[1:], strict=True)
    )
    return rest_ok and bool((g_scale[under] == 0).all())


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


def _float16_at_8_bits(case, got, want):
    """8 bits: the scale or the offset is the expected one rounded to float16 (in any dtype),
    the other one right or rounded too: the 4- and 2-bit rule applied at 8 bits."""
    if bits_of(case) != 8:
        return False
    rounded = []
    for g, w in zip(got[1:], want[1:], strict=True):
        with np.errstate(over="ignore"):
            w16 = np.asarray(w).astype(np.float16)  # 2^20 overflows to inf
        if near(g, w):
            continue
        if not near(g, w16):
            return False
        rounded.append(True)
    return bool(rounded)


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
    "dividing by the scale divides by zero (NaN, or a scale of 0). At 8 bits its scale is 0 and "
    "its codes 0; at 4 and 2 bits a float16 scale of 0 (a constant row whose value float16 holds) "
    "is replaced by 1 and the codes are 0 (FBGEMM's choice: any scale gives back the row, and 1 can "
    "be inverted)",
)
WRONG_SCALE_RULE = Mistake(
    "scale-zero-rule",
    f"{QUANT} stored another scale than FBGEMM's for a row whose scale is 0 (a constant row, or at "
    "4 and 2 bits a row whose float16 scale underflows to 0): the exercise states FBGEMM's rule, "
    "at 8 bits the scale stays 0 (codes 0: dequantizing gives the offset back), at 4 and 2 bits a "
    "float16 scale of 0 is replaced by exactly 1 (scale[scale == 0] = 1, after the rounding to "
    "float16). Another guard (1 at 8 bits, an eps such as 1e-8 or float16's smallest number) "
    "also avoids the division by zero, but it is not the format's stored scale",
)
SCALE_GUARD_FP16 = Mistake(
    "scale-guard-before-fp16",
    f"{QUANT} kept a float16 scale of 0 for a row that is not constant: its range is not 0, but "
    "divided by 2^b - 1 it is below half of float16's smallest step (2^-24), so the float16 scale "
    "rounds to 0 and dividing by it gives inf or NaN. A guard on the float32 scale, before it is "
    "rounded to float16, does not see it: round the scale to float16 first, then replace it by 1 "
    "where the float16 scale is 0, as FBGEMM does",
)
CONSTANT_SHORTCUT = Mistake(
    "constant-row-shortcut",
    f"{QUANT} gave a constant row whose value float16 cannot hold codes 0, as if its range were 0 "
    "(a test for max == min, a range taken from the row's exact minimum, a scale of 0 for such "
    "rows, a guard on scale <= 0, or a division guarded by scale > 0, when the scale can be "
    "negative). At 4 and "
    "2 bits the range is max - offset, measured from the float16 offset: for such a row it is the "
    "offset's rounding error, not 0, so FBGEMM stores a tiny scale (negative if the offset was "
    "rounded up) and codes of 2^b - 1. Apply the rules; replace the scale by 1 only where the float16 "
    "scale is 0 (scale == 0, not scale <= 0)",
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
SCALE_NOT_ROUNDED = Mistake(
    "scale-not-rounded",
    f"{QUANT} computed the codes with the float32 scale and returned it rounded to float16: at 4 "
    "and 2 bits the stored scale is the float16 one, and dequantizing multiplies the codes by it, "
    "so the codes must be computed with that very value, the one returned. The two differ by up "
    "to 2^-11 of the scale, enough to move a value near a half-way point to the next code",
)
OFFSET_NOT_ROUNDED = Mistake(
    "offset-not-rounded",
    f"{QUANT} measured the codes from the row's exact minimum, but stores the minimum rounded to "
    "float16: dequantizing adds the stored offset back, so every value of a row whose minimum "
    "float16 cannot hold shifts by the rounding. At 4 and 2 bits the offset is rounded first and "
    "that one value is the origin of everything after it: the range (max - offset, not max - "
    "min), the scale and the codes, which must be clipped because the rounded offset can lie "
    "above the minimum. At 8 bits the offset stays float32 and there is nothing to round",
)
FLOAT16_AT_8 = Mistake(
    "float16-at-8-bits",
    f"{QUANT} returned an 8-bit scale or offset rounded to float16: the 8-bit format keeps a "
    "float32 scale and offset (float16 is for 4 and 2 bits). float16 keeps about 3 significant "
    "digits (3.3 / 255 becomes 0.01294) and overflows above 65504 (a scale of 2^20 becomes inf)",
)
QUANT_MISTAKES = [
    (FLOAT16_AT_8, _float16_at_8_bits),
    (GLOBAL_SCALE, _global_scale),
    (CONSTANT_SHORTCUT, _constant_shortcut),
    (WRONG_SCALE_RULE, _wrong_scale_rule),
    (CONSTANT, _constant_row),
    (SCALE_GUARD_FP16, _scale_guard_before_fp16),
    (LEVELS, _levels_2b),
    (SIGNED, _signed),
    (WRAPPED, _wrapped),
    (TRUNCATED, _truncated),
    (TIES_UP, _ties_up),
    (SCALE_NOT_ROUNDED, _scale_not_rounded),
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
        if g.dtype == np.float16 and bits_of(case) == 8:
            return FLOAT16_AT_8.said(
                f"{FLOAT16_AT_8.message}; got a float16 {part} (for {case.label})."
            )
        if g.dtype != w.dtype:
            return PARAMS_DTYPE.said(
                f"{PARAMS_DTYPE.message}. For bits={bits_of(case)} the {part} must be {w.dtype}, "
                f"got {g.dtype} (for {case.label})."
            )
    return None


CODES_FOLLOW = (
    " The codes are computed from the scale and the offset, so fix these first: the codes may be "
    "right once they are."
)


def _quant_wrong(case, got, want) -> str:
    """Where a wrong answer is wrong, when no classic mistake explains it: the scale and the
    offset first (the codes are computed from them), then the codes."""
    order = (1, 2, 0)  # scale, offset, codes
    for i in order:
        part, g, w = PARTS[i], got.values[i], want.values[i]
        ok = same_codes(g, w) if part == "codes" else near(g, w)
        if not ok:
            rows = differing_rows(g, w, tol=(0.0, 0.0)) if part == "codes" else None
            if rows is None:
                bad = ~np.isclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=2e-5)
                rows = [int(i) for i in np.flatnonzero(bad)[:6]]
            first = rows[0] if rows else 0
            follow = CODES_FOLLOW if part != "codes" else ""
            return (
                f"{QUANT} returned wrong {part} for {case.label} at rows {rows}: row {first} is "
                f"{fmt(g[first])}{expected(case, fmt(w[first]), ', expected ')}.{follow}"
            )
    return f"{QUANT} is wrong for {case.label}."  # pragma: no cover


NAN_CAST = "invalid value encountered in cast"


def _nan_cast(case, got) -> str | None:
    """Right values, but numpy warned that the call cast NaN (or inf) to an integer, on a case
    with degenerate rows: 0 / 0 for a constant row (8 bits), or a division by a float16 scale of 0
    before the guard (4 and 2 bits), left in the codes until the cast to uint8, which happens to
    give 0. A NaN repaired before the cast (np.nan_to_num, np.where) raises no such warning."""
    if not degenerate_rows(case).any() or not any(NAN_CAST in w for w in got.warnings):
        return None
    return CONSTANT.said(
        f"{QUANT} divided by zero for {case.label}: a constant row's range is 0, so (x - offset) / "
        "scale is 0 / 0 = NaN (at 4 and 2 bits: a float16 scale of 0 used before it was replaced by "
        "1), and the NaN codes were cast to uint8 (numpy warned: invalid value encountered in "
        "cast). The cast of NaN is undefined: that it gives 0 here is an accident. Never divide by "
        "zero: divide by np.where(scale != 0, scale, 1), multiply by FBGEMM's "
        "255 / (range + 1e-8), or replace the NaN before the cast (np.nan_to_num)"
    )


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
            return _nan_cast(
                case, got
            )  # right values: the dtypes are test_quantize_types' to judge
        for mistake, applies in [*QUANT_MISTAKES, *extra]:
            if applies(case, g, w):
                return mistake.on(case)
        return _quant_wrong(case, got, want)

    return judge


def quant_types_judge(case, got, want) -> str | None:
    """Only the types of quantize_rows' answer: a tuple of three arrays of the right shapes, uint8
    codes, and the scale and offset in the format's dtype. The values are judged elsewhere: an
    answer with wrong values but the right types passes, so one wrong value costs no point here.
    A changed input is judged elsewhere too (every other cell reports it)."""
    got = dataclasses.replace(got, modified=[])
    problem = common_problems(case, got, want, QUANT)
    if problem or want.error_type is not None:
        return problem
    return _quant_structure(case, got, want) or _quant_dtypes(case, got, want)


def degenerate_rows(case) -> np.ndarray:
    """(V,) True for the rows test_quantize_constant_rows judges: the constant rows, and at 4 and
    2 bits the rows whose float16 scale underflows to 0 (their range, from the float16 offset,
    is under (2^b - 1) / 2^25)."""
    E = np.asarray(case.args[0], np.float32)
    rows = constant_rows(case)
    if bits_of(case) < 8:
        span = E.max(axis=1) - E.min(axis=1).astype(np.float16).astype(np.float32)
        rows |= (span / np.float32(levels(case))).astype(np.float16) == 0
    return rows


def quant_rows_judge(rows_of, extra=()):
    """A quantize_rows judge of only the rows ``rows_of(case)`` marks: the other rows of the
    answer are taken as right (replaced by the expected ones) before the answer is judged, so a
    mistake that touches only them costs no point here. The values only: dtypes are judged by
    test_quantize_types."""
    full = quant_judge(extra)

    def judge(case, got, want) -> str | None:
        problem = common_problems(case, got, want, QUANT)
        if problem or want.error_type is not None:
            return problem
        problem = _quant_structure(case, got, want)
        if problem:
            return problem
        skip = ~rows_of(case)
        values = []
        for g, w in zip(got.values, want.values, strict=True):
            # a dtype that holds both (int8 codes keep their values next to the uint8 ones)
            w = np.asarray(w)
            g = np.array(g, dtype=np.result_type(g, w), copy=True)
            with np.errstate(invalid="ignore", over="ignore"):
                g[skip] = w[skip]
            values.append(g)
        w = want.values
        if same_codes(values[0], w[0]) and near(values[1], w[1]) and near(values[2], w[2]):
            return _nan_cast(case, got)
        message = full(case, dataclasses.replace(got, values=values), want)
        return message or f"{QUANT} is wrong for {case.label}."  # pragma: no cover

    return judge


quant_constant_judge = quant_rows_judge(degenerate_rows)


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


def _float16_products(case, want):
    """codes * scale + offset in float16 arithmetic (numpy keeps uint8 * float16 in float16),
    converted to float32 only at the end."""
    codes, scale, offset = case.args
    scale, offset = np.asarray(scale), np.asarray(offset)
    if scale.dtype != np.float16:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        h = (
            np.asarray(codes).astype(np.float16) * scale[:, None]
            + offset.astype(np.float16)[:, None]
        )
    return h.astype(np.float32)


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
FLOAT16_PRODUCTS = Mistake(
    "float16-products",
    f"{DEQUANT} multiplied and added in float16 and converted only the result to float32: with a "
    "float16 scale and offset (4 and 2 bits), codes * scale[:, None] + offset[:, None] stays in "
    "float16 (numpy keeps uint8 * float16 in float16), so every product and sum is rounded to "
    "float16's 11 significant bits (near 1000, float16 numbers are 0.5 apart). Convert the scale and "
    "the offset to float32 first, as FBGEMM does, then multiply and add",
    _float16_products,
)
_dequant_values = array_judge(
    DEQUANT,
    mistakes=[NO_OFFSET, DIVIDED, PER_COLUMN, FLOAT16_PRODUCTS],
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
# The owner of an id (route's mistakes with it)
# ------------------------------------------------------------------------------------------
OWNER = (
    "owns row x: the shard s with start_s <= x < start_s + n_s, read from the shards' own sizes "
    "(they may differ, and a shard may be empty)"
)


def _sent_as(got, shard, local, R) -> bool:
    """Is route's answer ``got`` = (send, counts) what a rank sends if its ids had these owners
    and local rows (a predicate, never a routing): R counts, one per owner, and each block of
    send its owner's local rows in the batch's order."""
    g_send, g_counts = (np.asarray(a).reshape(-1) for a in got)
    if g_counts.shape != (R,) or not np.array_equal(g_counts, np.bincount(shard, minlength=R)):
        return False
    if g_send.size != g_counts.sum():
        return False
    blocks = np.split(g_send, np.cumsum(g_counts)[:-1])
    return all(np.array_equal(b, local[shard == s]) for s, b in enumerate(blocks))


def _owned_as(case, where):
    """(shard, local row, R) of every id if ids were owned as ``where(ids, R, V)`` says, or None
    where such an owner does not exist or its shard has no such row."""
    sizes = np.asarray(case.args[0], np.int64).reshape(-1)
    ids = np.asarray(case.args[1], np.int64)
    R = len(sizes)
    shard, local = where(ids, R, int(sizes.sum()))
    if ((shard < 0) | (shard >= R)).any() or (local >= sizes[shard]).any():
        return None
    return shard, local, R


def _modulo(ids, R, V):
    return ids % R, ids // R


WRONG_OWNER = Mistake(
    "wrong-owner",
    f"{ROUTE} routed ids to the wrong shard (as if rows were dealt out cyclically, id % R): the "
    f"shard that {OWNER}",
)


def _equal_blocks(case):
    """(shard, local row, number of blocks) of every id if the shards were TorchRec's equal
    blocks: ceil(V / R) rows each (the last one shorter), or blocks of shard_rows[0] rows,
    whatever the shards' real sizes (blocks past the last shard and local rows the real shard
    lacks included: the layout is the mistake)."""
    sizes = np.asarray(case.args[0], np.int64).reshape(-1)
    ids = np.asarray(case.args[1], np.int64)
    R, V = len(sizes), int(sizes.sum())
    out = []
    for block in dict.fromkeys((max(1, -(-V // max(R, 1))), max(1, int(sizes[0]) if R else 1))):
        shard = ids // block  # past the last shard too (then more than R counts)
        out.append((shard, ids % block, max(R, int(shard.max(initial=-1)) + 1)))
    return out


EQUAL_BLOCKS = Mistake(
    "equal-blocks",
    f"{ROUTE} cut the table into equal blocks (ceil(V / R) rows each, TorchRec's row-wise layout, "
    "or blocks of shard_rows[0] rows): here the shards' sizes are given, shard s has "
    "shard_rows[s] rows (they may differ, and a shard may be empty), so shard s starts at "
    "start_s = shard_rows[0] + ... + shard_rows[s - 1], and id x belongs to the shard s with "
    "start_s <= x < start_s + shard_rows[s], as its row x - start_s",
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
# route: what one rank sends (local row numbers, grouped by owner) and how many to each owner
# ------------------------------------------------------------------------------------------
def _route_owner(case):
    """(starts (R,), owner (N,)) of a route case, from its meta, or None."""
    starts, owner = case.meta.get("starts"), case.meta.get("owner")
    if starts is None or owner is None:
        return None
    return np.asarray(starts, np.int64), np.asarray(owner, np.int64)


def _route_global(case, want):
    route = _route_owner(case)
    if route is None:
        return None
    send, counts = (np.asarray(w, np.int64) for w in want)
    return send + route[0][np.repeat(np.arange(len(counts)), counts)], counts


def _route_batch_order(case, want):
    route = _route_owner(case)
    if route is None:
        return None
    ids = np.asarray(case.args[1], np.int64)
    local = ids - route[0][route[1]]
    same = np.array_equal(local, np.asarray(want[0]))
    return None if same else (local, np.asarray(want[1], np.int64))


def _route_counts_short(case, got, want):
    """The right ids, and counts with the zeros of shards no id goes to left out (np.unique),
    or only the trailing ones (np.bincount without minlength)."""
    g_counts, w_counts = np.asarray(got[1]).reshape(-1), np.asarray(want[1], np.int64)
    if g_counts.size >= w_counts.size or not np.array_equal(np.asarray(got[0]), want[0]):
        return False
    nonzero = w_counts[w_counts > 0]
    trimmed = w_counts[: np.flatnonzero(w_counts)[-1] + 1] if nonzero.size else w_counts[:0]
    return any(np.array_equal(g_counts, c) for c in (nonzero, trimmed))


def _route_unstable(case, got, want):
    """The right counts and, owner by owner, the right ids in another order."""
    send, counts = (np.asarray(w, np.int64) for w in want)
    g_send, g_counts = np.asarray(got[0]), np.asarray(got[1]).reshape(-1)
    if not (np.array_equal(g_counts, counts) and g_send.shape == send.shape):
        return False
    cuts = np.cumsum(counts)[:-1]
    return not np.array_equal(g_send, send) and all(
        np.array_equal(np.sort(a), np.sort(b))
        for a, b in zip(np.split(g_send, cuts), np.split(send, cuts), strict=True)
    )


ROUTE_GLOBAL = Mistake(
    "route-global-ids",
    f"{ROUTE} sent the global ids: the owner of id x holds it as its local row x - start_s, and "
    "that is the number it needs (its shard has only n_s rows)",
    _route_global,
)
ROUTE_UNGROUPED = Mistake(
    "route-not-grouped",
    f"{ROUTE} left the local rows in the batch's order: all_to_all_single sends one contiguous "
    "block to each rank, so the rows must be grouped by owner (shard 0's first), with counts[s] "
    "of them for shard s",
    _route_batch_order,
)
ROUTE_COUNTS = Mistake(
    "route-counts-short",
    f"{ROUTE} returned fewer counts than there are shards: np.unique, or np.bincount without "
    "minlength, leave out the shards that no id goes to. counts needs one entry per shard, R of "
    "them, zeros included: they are the split sizes of the exchange",
)
ROUTE_ORDER = Mistake(
    "route-unstable-order",
    f"{ROUTE} grouped the rows by owner, but changed their order within a group (a sort by id, "
    "or np.argsort without kind='stable'): keep each group in the batch's order, which is the "
    "order the rows come back in and the lookup puts them back by",
)


def _route_outside(case, got, want):
    """Right-sized counts and send, but a block of send names a row its shard does not have
    (below 0, or n_s and above): the shard boundaries are off."""
    sizes = np.asarray(case.args[0], np.int64).reshape(-1)
    g_send, g_counts = np.asarray(got[0], np.int64), np.asarray(got[1], np.int64).reshape(-1)
    if g_counts.shape != sizes.shape or g_counts.sum() != g_send.size or (g_counts < 0).any():
        return False
    blocks = np.split(g_send, np.cumsum(g_counts)[:-1])
    return any(((b < 0) | (b >= n)).any() for b, n in zip(blocks, sizes, strict=True))


ROUTE_OUTSIDE = Mistake(
    "route-row-outside-shard",
    f"{ROUTE} sent a shard a local row it does not have (below 0, or n_s or above): a shard "
    "boundary is off. Shard s holds the ids start_s ... start_s + n_s - 1 (start_0 = 0), and id x "
    "is its row x - start_s. An id equal to a shard's first row belongs to that shard, not to the "
    "one before it (which would see it as its row n_s); and the row is counted from the shard's "
    "start, not from its end (a running sum of shard_rows gives the ends, start_s + n_s)",
)


def route_judge(case, got, want) -> str | None:
    """route returns (send, counts): both compared exactly, as integers."""
    problem = _index_error(case, got, ROUTE) or common_problems(case, got, want, ROUTE)
    if problem or want.error_type is not None:
        return problem
    if not got.is_tuple or len(got.values) != 2:
        return f"{ROUTE} should return a tuple (send, counts) for {case.label}."
    g, w = got.values, want.values
    for part, a in zip(("send", "counts"), g, strict=True):
        if a.size and not np.issubdtype(a.dtype, np.integer):
            return (
                f"{ROUTE} returned {part} as {a.dtype} for {case.label}: row numbers and counts "
                "are integers (they index a shard and size a split)."
            )
    if all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(g, w, strict=True)):
        return None
    for m in (ROUTE_GLOBAL, ROUTE_UNGROUPED):
        for alt in m.predictions(case, w):
            if all(np.array_equal(np.asarray(a), b) for a, b in zip(alt, g, strict=True)):
                return m.on(case)
    cyclic = _owned_as(case, _modulo)
    if cyclic is not None and _sent_as(g, *cyclic):
        return WRONG_OWNER.on(case)
    if any(_sent_as(g, *blocks) for blocks in _equal_blocks(case)):
        return EQUAL_BLOCKS.on(case)
    for m, applies in ((ROUTE_COUNTS, _route_counts_short), (ROUTE_ORDER, _route_unstable)):
        if applies(case, g, w):
            return m.on(case)
    if _route_outside(case, g, w):
        return ROUTE_OUTSIDE.on(case)
    part = 0 if not (g[0].shape == w[0].shape and np.array_equal(g[0], w[0])) else 1
    name = ("send", "counts")[part]
    a, b = np.asarray(g[part]).reshape(-1), np.asarray(w[part]).reshape(-1)
    if a.shape != b.shape:
        per = "one per id" if part == 0 else "one per shard"
        return (
            f"{ROUTE} returned {name} of {a.size} entries for {case.label}; expected {b.size} "
            f"({per})."
        )
    i = int(np.flatnonzero(a != b)[0])  # the first position where they differ
    return (
        f"{ROUTE} returned wrong {name} for {case.label}: the first difference is at "
        f"{name}[{i}], which is {a[i]}{expected(case, str(b[i]), ', expected ')}."
    )


# ------------------------------------------------------------------------------------------
# sharded_lookup (one rank) and sharded_backward (every rank): the routing is in the arguments
# ------------------------------------------------------------------------------------------
def _blocks(send, counts):
    """send cut into one block per shard, by counts."""
    return np.split(np.asarray(send, np.int64), np.cumsum(np.asarray(counts, np.int64))[:-1])


def _order(owner):
    """Where each routed row sits in the batch: the stable sort of the owners."""
    return np.argsort(np.asarray(owner, np.int64), kind="stable")


def _grouped_rows(case, want):
    """The rows as they come back from the owners, grouped by owner: not put back."""
    w = np.asarray(want)
    return w[_order(case.args[3])]


def _permuted(case, want):
    """The rows that came back, indexed with the sort order instead of scattered by it."""
    order = _order(case.args[3])
    if np.array_equal(order[order], np.arange(len(order))):
        return None  # the permutation is its own inverse here: the same rows
    return np.asarray(want)[order][order]


def _unstable_unroute(case, want, kind=None, int64=False):
    """The rows that came back (the expected rows grouped by owner) scattered by an order from a
    sort that is not stable: np.argsort's default (introsort, or a SIMD sort: its order among ties
    depends on the CPU and the numpy build, so it is computed on this machine, for the owners as
    given or as int64), or kind="heapsort" (unstable too, the same order on any machine). None
    where that order is the stable one."""
    w, stable = np.asarray(want), _order(case.args[3])
    owner = np.asarray(case.args[3], np.int64) if int64 else np.asarray(case.args[3])
    quick = np.argsort(owner, kind=kind)
    if np.array_equal(quick, stable):
        return None
    rows = np.empty_like(w)
    rows[quick] = w[stable]
    return rows


def _local_as_ids(case, want):
    """The local rows of send read as ids of the whole table (put back in order, or not)."""
    shards, send = case.args[0], np.asarray(case.args[1], np.int64)
    table = np.concatenate([np.asarray(t, np.float64) for t in shards])
    rows = table[send]
    back = np.empty_like(rows)
    back[_order(case.args[3])] = rows
    return back, rows


NOT_REORDERED = Mistake(
    "rows-not-reordered",
    f"{LOOKUP} returned the rows in the order they come back from the owners, grouped by shard, "
    "not in the order of the rank's batch: row n of the answer is the row of the rank's n-th id. "
    "The rows come back in the order route grouped the ids in (by owner, batch order within an "
    "owner), and the lookup must undo that grouping",
    _grouped_rows,
)
NOT_INVERTED = Mistake(
    "unroute-not-inverted",
    f"{LOOKUP} applied the grouping permutation to the rows that came back instead of undoing it: "
    "it sorted them by owner a second time. The k-th row that comes back belongs at the batch "
    "position route took the k-th sent id from: put it there (the inverse permutation)",
    _permuted,
)
UNSTABLE_UNROUTE = Mistake(
    "unroute-unstable",
    f"{LOOKUP} put the rows back by an order from a sort that is not stable (np.argsort's "
    "default, or kind='heapsort'): route grouped the ids by owner keeping their batch order "
    "within an owner, so the rows come back in that order, and only that same order undoes it; "
    "with another one, positions of the same owner trade their rows",
    (
        _unstable_unroute,
        lambda c, w: _unstable_unroute(c, w, int64=True),
        lambda c, w: _unstable_unroute(c, w, kind="heapsort"),
    ),
)
LOCAL_AS_IDS = Mistake(
    "local-rows-as-ids",
    f"{LOOKUP} read send's numbers as ids of the whole table: they are local rows, row j of shard "
    "s being the table's row start_s + j, so each block of send must be gathered from its own "
    "shard (block s = the counts[s] numbers after the first counts[0] + ... + counts[s - 1])",
    (lambda c, w: _local_as_ids(c, w)[0], lambda c, w: _local_as_ids(c, w)[1]),
)


def _stated(case, name) -> list:
    """What the mistake ``name`` gives on this case, as the case states it: meta["wrong_grads"]
    maps a mistake's id to its results (each a list of per-shard gradients; several where the
    mistake can be made in several ways), computed on the trusted side (the hidden checks, or
    the numbers a visible test states). A case that states none: the mistake stays unnamed."""
    return list(case.meta.get("wrong_grads", {}).get(name, []))


OVERWRITTEN = Mistake(
    "repeated-overwritten",
    f"{BACKWARD} kept one upstream row for an id that a rank looked up several times: "
    "dE[rows] += g writes each repeated row once (chapter 3's trap). Every position must add its "
    "row, e.g. with np.add.at",
)
RANKS_LOST = Mistake(
    "ranks-overwrite",
    f"{BACKWARD} kept only one rank's contributions to each shard (the last rank's, when each "
    "rank starts the gradients afresh; or the first's): the gradients that every rank sends to a "
    "shard must be added up (start each shard's gradient at zero once, not once per rank)",
)
NOT_ROUTED = Mistake(
    "grads-not-routed",
    f"{BACKWARD} paired send's local rows, which are grouped by owner, with the upstream rows in "
    "the batch's order: a rank sends its gradient rows grouped the same way as its ids (by "
    "owner, batch order within an owner), so that the k-th gradient row sent goes with send[k]",
)
FULL_TABLE = Mistake(
    "full-table-gradient",
    f"{BACKWARD} returned a gradient as tall as the whole table: each shard's gradient has one row "
    "per row of that shard, (n_r, d), and its row j belongs to the table's row start_r + j",
)


def _per_rank_structure(case, got, want) -> str | None:
    R = len(want.values)
    if not got.is_tuple or len(got.values) != R:
        if not got.is_tuple and got.value is not None:
            return FULL_TABLE.on(case)
        n = len(got.values) if got.is_tuple else 1
        return f"{BACKWARD} should return a list of {R} arrays (one per shard) for {case.label}; got {n}."
    V = sum(int(n) for n in np.asarray(case.args[0]).reshape(-1))
    for r, (g, w) in enumerate(zip(got.values, want.values, strict=True)):
        if g.shape != w.shape:
            if g.ndim == 2 and g.shape[0] == V:
                return FULL_TABLE.on(case)
            return (
                f"{BACKWARD} returned an array of shape {g.shape} for shard {r} for {case.label}; "
                f"expected {w.shape}."
            )
    return None


def backward_judge(case, got, want) -> str | None:
    """sharded_backward returns one gradient per shard: each compared closely, then its dtype."""
    problem = common_problems(case, got, want, BACKWARD)
    if problem or want.error_type is not None:
        return problem
    problem = _per_rank_structure(case, got, want)
    if problem:
        return problem
    g, w = got.values, want.values
    oks = [close(a, b, b.dtype) for a, b in zip(g, w, strict=True)]
    if all(oks):
        for r, (a, b) in enumerate(zip(g, w, strict=True)):
            if a.dtype != b.dtype:
                return WRONG_DTYPE.said(
                    f"{BACKWARD} returned {a.dtype} for shard {r} for {case.label}; expected "
                    f"{b.dtype}, the dtype of the grads."
                )
        return None
    for m in (OVERWRITTEN, RANKS_LOST, NOT_ROUTED):
        for alt in _stated(case, m.name):
            alt = [np.asarray(a, np.float64) for a in alt]  # a stated empty shard may be []
            if len(alt) == len(g) and all(
                a.size == b.size and close(b, a.reshape(b.shape), b.dtype)
                for a, b in zip(alt, g, strict=True)
            ):
                return m.on(case)
    r = oks.index(False)
    rows = differing_rows(g[r], w[r], w[r].dtype)
    first = rows[0] if rows else 0
    return (
        f"{BACKWARD} returned wrong values for {case.label} on shard {r} at rows {rows}: row "
        f"{first} is {fmt(g[r][first])}{expected(case, fmt(w[r][first]), ', expected ')}."
    )


def _send_outside(case) -> str | None:
    """The first block of send (sharded_lookup's input) that names a row its shard does not
    have, said as 'shard s (n rows) was sent row x', or None."""
    shards, send, counts = case.args[0], np.asarray(case.args[1]), np.asarray(case.args[2])
    sizes = [len(t) for t in shards]
    if counts.size != len(sizes) or counts.sum() != send.size or (counts < 0).any():
        return None
    for s, (block, n) in enumerate(zip(_blocks(send, counts), sizes, strict=True)):
        bad = block[(block < 0) | (block >= n)]
        if bad.size:
            return f"shard {s} ({n} rows) was sent row {int(bad[0])}"
    return None


def _lookup_problems(judge):
    """A lookup judge that, when sharded_lookup raised IndexError on a send that names a row
    outside its shard, says where that send came from: route (the round trip feeds your route's
    send to your sharded_lookup), not the lookup."""

    def judged(case, got, want):
        outside = _send_outside(case) if got.error_type == "IndexError" else None
        if outside is None:
            return judge(case, got, want)
        inside = f" in {got.raised_in}" if got.raised_in and got.raised_in != LOOKUP else ""
        return ROUTE_OUTSIDE.said(
            f"{LOOKUP} raised IndexError{inside} for {case.label} ({got.error}), because the send "
            f"it was given names a row its shard does not have: {outside}. That send came from "
            f"{ROUTE}: fix {ROUTE} first (test_route says how). {ROUTE_OUTSIDE.message}"
        )

    return judged


lookup_judge = _lookup_problems(
    array_judge(LOOKUP, mistakes=[NOT_REORDERED, NOT_INVERTED, UNSTABLE_UNROUTE, LOCAL_AS_IDS])
)


def charged_in_plain_cell(judge, excused, fname):
    """``judge`` for a cell about uneven shards, empty batches and dtypes: an answer that is a
    mistake of ``excused`` (the order of the rows put back, send's rows read on their own shard,
    repeats and ranks added up, gradients routed: the plain cell's properties, which that cell
    charges) is checked here for its dtypes only."""
    names = {m.name for m in excused}

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        if not msg or mistake_id(msg) not in names:
            return msg
        for i, (g, w) in enumerate(zip(got.values, want.values, strict=True)):
            if g.dtype != w.dtype:
                where = f" for shard {i}" if len(want.values) > 1 else ""
                return WRONG_DTYPE.said(
                    f"{fname} returned {g.dtype}{where} for {case.label}; expected {w.dtype}."
                )
        return None

    return wrapped


# the mistakes of the rows' order and of send's local rows (lookup), of repeats, of ranks and of
# routing the gradients (backward) break the plain cells' properties, on shards of any size
lookup_uneven_judge = charged_in_plain_cell(
    lookup_judge, [NOT_REORDERED, NOT_INVERTED, UNSTABLE_UNROUTE, LOCAL_AS_IDS], LOOKUP
)
backward_uneven_judge = charged_in_plain_cell(
    backward_judge, [OVERWRITTEN, RANKS_LOST, NOT_ROUTED], BACKWARD
)


def quant_shape_judge(case, got, want) -> str | None:
    """Only the structure of quantize_rows' answer: a tuple of three arrays of the right shapes."""
    problem = common_problems(case, got, want, QUANT)
    return problem or _quant_structure(case, got, want)


# ------------------------------------------------------------------------------------------
# lazy_decay_step_ and flush_decay_ (Part C): E and last change in place, both return None
# ------------------------------------------------------------------------------------------
# Every model starts from the case and the expected arrays (E1, last1), never from the rule: the
# expected step of a touched row is E1 = f**gap * E0 - lr * G with f = 1 - lr * lam and gap =
# t - last0, so lr * G is read back as f**gap * E0 - E1, and a mistake changes E1 by what it does
# to the factor or to G.
STEP, FLUSH = "lazy_decay_step_", "flush_decay_"
STEP_NAMES = ["E", "last", "ids", "grad_rows", "lr", "lam", "t"]
FLUSH_NAMES = ["E", "last", "T", "lr", "lam"]
DECAY_GRADED = ("E", "last")


def _args(case, names) -> dict:
    given = dict(zip(names, case.args, strict=False))
    given.update(case.kwargs)
    return given


class _StepParts:
    """A lazy_decay_step_ case and its expected arrays, in float64."""

    def __init__(self, case, want):
        a = _args(case, STEP_NAMES)
        self.E0 = np.array(a["E"], dtype=np.float64)
        self.last0 = np.array(a["last"], dtype=np.int64)
        self.E1 = np.array(want[0], dtype=np.float64)
        self.last1 = np.array(want[1], dtype=np.int64)
        self.flat = np.asarray(a["ids"]).reshape(-1).astype(np.int64)
        d = self.E0.shape[1]
        self.g = np.asarray(a["grad_rows"], dtype=np.float64).reshape(self.flat.size, d)
        self.lr, self.lam, self.t = float(a["lr"]), float(a["lam"]), int(a["t"])
        self.f = 1 - self.lr * self.lam
        self.rows, self.counts = np.unique(self.flat, return_counts=True)
        self.gap = self.t - self.last0  # (V,): the steps each row owes at step t
        self.lrG = self.f ** self.gap[:, None] * self.E0 - self.E1  # right on the touched rows

    def with_rows(self, rows, values):
        """[E, last]: the expected E with ``rows`` replaced by ``values``, last as expected."""
        E = self.E1.copy()
        E[rows] = values
        return [E, self.last1]


def _decay_model(when=None):
    """A model (parts -> [E, last]) for the cases with at least one id where ``when`` holds."""

    def wrap(fn):
        def model(case, want):
            p = _StepParts(case, want)
            if p.flat.size == 0 or (when is not None and not when(p)):
                return None
            return fn(p)

        return model

    return wrap


def _exponent(change):
    """The touched rows caught up by (1 - lr * lam) ** change(gap) instead of ** gap."""

    @_decay_model()
    def model(p):
        r = p.rows
        wrong = p.f ** change(p.gap[r])[:, None] * p.E0[r] - p.lrG[r]
        return p.with_rows(r, wrong)

    return model


@_decay_model(lambda p: (p.counts > 1).any())
def _decayed_per_occurrence(p):
    """A row that occurs k times caught up k times (np.multiply.at, or one catch-up per
    occurrence before last is written), its summed gradient applied once."""
    r = p.rows
    return p.with_rows(r, p.f ** (p.counts * p.gap[r])[:, None] * p.E0[r] - p.lrG[r])


@_decay_model(lambda p: (p.counts > 1).any())
def _loop_per_occurrence(p):
    """A loop over the occurrences that catches the row up at each one (last written after the
    loop): E <- f**gap * E - lr * g_n, once per occurrence, in order."""
    E = p.E1.copy()
    for i in p.rows[p.counts > 1]:
        row = p.E0[i].copy()
        for g in p.g[p.flat == i]:
            row = p.f ** p.gap[i] * row - p.lr * g
        E[i] = row
    return [E, p.last1]


@_decay_model(lambda p: (p.counts > 1).any())
def _last_occurrence(p):
    """A repeated id's gradient taken from its last occurrence only (E[ids] -= lr * g, or
    G[ids] = g: a fancy-indexed write keeps one of the repeated rows)."""
    E = p.E1.copy()
    for i in p.rows:
        E[i] = E[i] + p.lrG[i] - p.lr * p.g[p.flat == i][-1]
    return [E, p.last1]


@_decay_model(lambda p: p.lam != 0 and p.lr != 0)
def _decay_after_gradient(p):
    """The gradient step first, then the catch-up: f**gap * (E0 - lr * G)."""
    r = p.rows
    return p.with_rows(r, p.f ** p.gap[r][:, None] * (p.E0[r] - p.lrG[r]))


@_decay_model()
def _last_kept(p):
    """E right, last left as it was."""
    return [p.E1, p.last0]


def _dense_decay(case, want):
    """Every row caught up to step t (and every last set to t): right values, not lazy (no ids
    too: then every row is caught up and nothing else happens)."""
    p = _StepParts(case, want)
    untouched = np.setdiff1d(np.arange(p.E0.shape[0]), p.rows)
    E = p.E1.copy()
    E[untouched] = p.f ** p.gap[untouched][:, None] * p.E0[untouched]
    return [E, np.full_like(p.last1, p.t)]


DECAY_ONCE = Mistake(
    "decay-once",
    f"{STEP} decayed a touched row once, by (1 - lr * lam), instead of catching it up: a row "
    "that no batch touched since step last[i] owes the factors of the steps last[i] + 1, ..., t, "
    "(1 - lr * lam) ** (t - last[i]) in all (eq-catch-up), this step's own factor included",
    _exponent(lambda gap: np.ones_like(gap)),
)
OFF_BY_ONE = Mistake(
    "catch-up-off-by-one",
    f"{STEP} caught a row up by one factor too many or too few: last[i] is the step after which "
    "row i is up to date, so at step t it owes the factors of steps last[i] + 1, ..., t, "
    "(1 - lr * lam) ** (t - last[i]), not ** (t - last[i] + 1) nor ** (t - last[i] - 1)",
    (_exponent(lambda gap: gap + 1), _exponent(lambda gap: gap - 1)),
)
PER_OCCURRENCE_DECAY = Mistake(
    "decay-per-occurrence",
    f"{STEP} caught a repeated id up once per occurrence: a row that occurs k times in ids is "
    "still one row, owing (1 - lr * lam) ** (t - last[i]) once. Catch up the distinct rows "
    "(np.unique(ids)) once, then apply each row's summed gradient",
    (_decayed_per_occurrence, _loop_per_occurrence),
)
GRADIENT_ONCE = Mistake(
    "repeated-gradient-once",
    f"{STEP} kept one gradient row for an id that occurs several times: E[ids] -= lr * "
    "grad_rows (or G[ids] = grad_rows) writes each repeated row once (chapter 3's trap). A row's "
    "gradient is the sum of the grad_rows of all its occurrences: np.add.at",
    _last_occurrence,
)
DECAY_AFTER = Mistake(
    "decay-after-gradient",
    f"{STEP} applied the catch-up after the gradient step, scaling lr * G too: the decoupled rule "
    "decays the row as it was, then subtracts the gradient, E <- (1 - lr * lam) ** (t - last[i]) "
    "* E - lr * G (the dense rule (1 - lr * lam) * E - lr * G, step by step)",
    _decay_after_gradient,
)
LAST_NOT_UPDATED = Mistake(
    "last-not-updated",
    f"{STEP} did not update last: after the step the touched rows are up to date at step t, so "
    "last[ids] = t; otherwise the next step and the flush decay them again for the same steps "
    "(last = ... only rebinds the local name: write last[rows] = t into the caller's array)",
    _last_kept,
)
DENSE_DECAY = Mistake(
    "dense-decay",
    f"{STEP} changed rows that ids does not touch: the step is lazy, so a row not in ids and its "
    "last stay as they are (its pending factors are applied when a batch touches it, or by "
    f"{FLUSH}); catching every row up at every step is the dense update the lazy rule avoids",
    _dense_decay,
)
DECAY_RETURNS = Mistake(
    "decay-returns-value",
    f"{STEP} returned something: it changes E and last in place and returns None (like "
    "list.sort(), or PyTorch's optimizer.step())",
)


def _e_rebound(case, want):
    """E left exactly as the caller passed it where the call changes it (E = ... rebinds the
    local name, the caller's array never changes); last not predicted. None where the expected
    E is the given one (nothing to change)."""
    names = STEP_NAMES if len(case.args) == len(STEP_NAMES) else FLUSH_NAMES
    E0 = np.asarray(_args(case, names)["E"], np.float64)
    return None if _near_all(E0, want[0]) else [E0, None]


REBIND = (
    "E = ... or last = ... binds a new array to the function's local name, which the caller "
    "never sees: write into the arrays the caller passed (E[rows] = ..., E *= ..., "
    "last[rows] = t, last[:] = T)"
)
NOT_IN_PLACE = Mistake(
    "not-in-place",
    f"the caller's E did not change: {STEP} and {FLUSH} work in place, and {REBIND}",
    _e_rebound,
)


def _flush_skipped_unseen(case, want):
    """flush_decay_ that left the rows never looked up (last = 0) as they were."""
    a = _args(case, FLUSH_NAMES)
    last0 = np.asarray(a["last"], np.int64)
    unseen = last0 == 0
    if not unseen.any() or int(a["T"]) == 0 or float(a["lr"]) * float(a["lam"]) == 0:
        return None
    E = np.array(want[0], np.float64)
    E[unseen] = np.asarray(a["E"], np.float64)[unseen]
    return [E, None]


FLUSH_UNSEEN = Mistake(
    "flush-skips-unseen",
    f"{FLUSH} left the rows that no batch looked up (last = 0) undecayed: dense decay shrinks "
    "every row at every step, so a row never seen owes (1 - lr * lam) ** T, the most of all; "
    "bring every row up to date, the ones with last = 0 too",
    _flush_skipped_unseen,
)


def _flush_once(case, want):
    """flush_decay_ that multiplied every row by one factor, (1 - lr * lam), whatever it owes."""
    a = _args(case, FLUSH_NAMES)
    f = 1 - float(a["lr"]) * float(a["lam"])
    if f == 1:
        return None
    return [f * np.asarray(a["E"], np.float64), None]


def _flush_last_kept(case, want):
    """flush_decay_ with E right and last left as it was."""
    return [want[0], np.asarray(_args(case, FLUSH_NAMES)["last"], np.int64)]


FLUSH_ONCE = Mistake(
    "flush-once",
    f"{FLUSH} multiplied every row by one factor, (1 - lr * lam), instead of catching it up: row "
    "i still owes the factors of the steps last[i] + 1, ..., T, (1 - lr * lam) ** (T - last[i]) "
    "(eq-catch-up), 1 for a row up to date already and the most for a row never looked up",
    _flush_once,
)
FLUSH_LAST_KEPT = Mistake(
    "flush-last-not-updated",
    f"{FLUSH} did not set last: after the flush every row is up to date at step T, so "
    "last[:] = T; otherwise the next step or flush decays the rows again for the same steps "
    "(last = np.full_like(last, T) only rebinds the local name: the caller's last never changes)",
    _flush_last_kept,
)
FLUSH_MISTAKES = [NOT_IN_PLACE, FLUSH_UNSEEN, FLUSH_ONCE, FLUSH_LAST_KEPT]
STEP_MISTAKES = [
    NOT_IN_PLACE,
    DECAY_ONCE,
    OFF_BY_ONE,
    PER_OCCURRENCE_DECAY,
    GRADIENT_ONCE,
    DECAY_AFTER,
    LAST_NOT_UPDATED,
    DENSE_DECAY,
]


def _near_all(a, b) -> bool:
    return close(np.asarray(a, np.float64), np.asarray(b, np.float64), np.float64)


def _decay_problems(case, got, want, fname):
    problem = common_problems(case, got, want, fname)
    if problem or want.error_type is not None:
        return problem
    return in_place_problem(case, got, want, fname, DECAY_GRADED)


def _decay_where(case, fname, got, want) -> str:
    g, w = got.values, want.values
    if not _near_all(g[0], w[0]):
        rows = differing_rows(g[0], w[0], np.float64)
        r = rows[0] if rows else 0
        text = f"{fname} left wrong values in E for {case.label}: rows {rows} differ"
        return (
            text + expected(case, f"E[{r}] is {fmt(g[0][r])}, expected {fmt(w[0][r])}", "; ") + "."
        )
    bad = np.flatnonzero(np.asarray(g[1]) != np.asarray(w[1]))[:6].tolist()
    text = f"{fname} left wrong values in last for {case.label}: at rows {bad}"
    return text + expected(case, f"last is {fmt(g[1])}, expected {fmt(w[1])}", "; ") + "."


def decay_step_judge(case, got, want) -> str | None:
    """lazy_decay_step_: E and last after the call, compared closely (last exactly)."""
    problem = _decay_problems(case, got, want, STEP)
    if problem or want.error_type is not None:
        return problem
    if all(_near_all(g, w) for g, w in zip(got.values, want.values, strict=True)):
        return None
    for m in STEP_MISTAKES:
        for alt in m.predictions(case, want.values):
            if explains(got.values, want.values, alt, _near_all):
                return m.on(case)
    return _decay_where(case, STEP, got, want)


# test_decay_lazy alone charges the two laziness mistakes and E left unchanged (E rebound: its
# docstring says in place; the values of the touched rows are right otherwise); every other step cell lets an answer that one of them explains pass.
LAZINESS = {"dense-decay", "last-not-updated", NOT_IN_PLACE.name}
decay_values_judge = forgiving(decay_step_judge, LAZINESS)
decay_values_judge.__doc__ = decay_step_judge.__doc__
# test_decay_step alone charges the three catch-up mistakes (a wrong factor for every touched
# row); test_decay_repeats (the repeated ids) and test_decay_edges let them pass.
CATCH_UP = {DECAY_ONCE.name, OFF_BY_ONE.name, DECAY_AFTER.name}
decay_rest_judge = forgiving(decay_step_judge, LAZINESS | CATCH_UP)
decay_rest_judge.__doc__ = (
    "lazy_decay_step_: E and last after the call, compared closely (last exactly); the catch-up "
    "and laziness mistakes are other cells'."
)


def decay_lazy_judge(case, got, want) -> str | None:
    """lazy_decay_step_: only what laziness is about: the rows ids does not touch keep E and last,
    last[ids] becomes t, E and last change in place, and the function returns None. The values
    of the touched rows are the other cells'."""
    problem = _decay_problems(case, got, want, STEP)
    if problem or want.error_type is not None:
        return problem
    p = _StepParts(case, want.values)
    keep = np.ones(p.E0.shape[0], dtype=bool)
    keep[p.rows] = False
    g_E, g_last = np.asarray(got.values[0], np.float64), np.asarray(got.values[1], np.int64)
    if not _near_all(g_E[keep], p.E0[keep]) or not np.array_equal(g_last[keep], p.last0[keep]):
        moved = np.flatnonzero(keep)[
            ~np.isclose(g_E[keep], p.E0[keep], rtol=1e-9, atol=1e-12).all(axis=1)
            | (g_last[keep] != p.last0[keep])
        ]
        return DENSE_DECAY.said(
            f"{DENSE_DECAY.message} (for {case.label}: rows {moved[:6].tolist()} are not in ids)"
        )
    if not np.array_equal(g_last[p.rows], p.last1[p.rows]):
        return LAST_NOT_UPDATED.on(case)
    if _e_rebound(case, want.values) is not None and _near_all(g_E, p.E0):
        return NOT_IN_PLACE.on(case)
    if not got.returned_none:
        return DECAY_RETURNS.on(case)
    return None


def flush_judge(case, got, want) -> str | None:
    """flush_decay_: E and last after the call, compared closely (last exactly)."""
    problem = _decay_problems(case, got, want, FLUSH)
    if problem or want.error_type is not None:
        return problem
    if all(_near_all(g, w) for g, w in zip(got.values, want.values, strict=True)):
        return None
    for m in FLUSH_MISTAKES:
        for alt in m.predictions(case, want.values):
            if explains(got.values, want.values, alt, _near_all):
                return m.on(case)
    return _decay_where(case, FLUSH, got, want)


JUDGES = {
    QUANT: quant_judge(),
    f"{QUANT}:shape": quant_shape_judge,
    f"{QUANT}:types": quant_types_judge,
    f"{QUANT}:constant": quant_constant_judge,
    f"{DEQUANT}:shape": shape_judge(DEQUANT, expected="(V, d) = "),
    f"{LOOKUP}:shape": _lookup_problems(shape_judge(LOOKUP, expected="(N, d) = ")),
    f"{QUANT}:bits": bits_judge,
    DEQUANT: dequant_judge,
    ROUTE: route_judge,
    LOOKUP: lookup_judge,
    f"{LOOKUP}:uneven": lookup_uneven_judge,
    BACKWARD: backward_judge,
    f"{BACKWARD}:uneven": backward_uneven_judge,
    STEP: decay_values_judge,
    f"{STEP}:lazy": decay_lazy_judge,
    f"{STEP}:repeats": decay_rest_judge,
    f"{STEP}:edges": decay_rest_judge,
    FLUSH: flush_judge,
}
MISTAKES = [
    *(m for m, _ in QUANT_MISTAKES),
    CODES_DTYPE,
    PARAMS_DTYPE,
    NO_OFFSET,
    DIVIDED,
    PER_COLUMN,
    FLOAT16_MATH,
    FLOAT16_PRODUCTS,
    ROUTE_GLOBAL,
    ROUTE_UNGROUPED,
    ROUTE_COUNTS,
    ROUTE_ORDER,
    ROUTE_OUTSIDE,
    WRONG_OWNER,
    EQUAL_BLOCKS,
    NOT_REORDERED,
    NOT_INVERTED,
    UNSTABLE_UNROUTE,
    LOCAL_AS_IDS,
    OVERWRITTEN,
    RANKS_LOST,
    NOT_ROUTED,
    FULL_TABLE,
    *STEP_MISTAKES,
    DECAY_RETURNS,
    *(m for m in FLUSH_MISTAKES if m is not NOT_IN_PLACE),
]
expect = make_expect(JUDGES, MISTAKES)
