"""Chapter 4: bags of ids (EmbeddingBag). Hidden checks for its exercise.

Every case is deterministic (fixed seeds). The judges and mistake models are the public ones
(public/ch04.py), shared with the visible tests.
"""

from __future__ import annotations

import numpy as np

from . import reference
from .compare import close
from .data import table as _table
from .framework import Case, checks_for
from .judges import WRONG_DTYPE, Mistake, array_judge, dtype_advice, mistake_id
from .public.ch04 import (
    BAG_AS_SET,
    BWD,
    BWD_MISTAKES,
    backward_cell_judges,
    backward_shape_judge,
    either_repeat_mistake,
    index_skipping_empty,
    mean_companion,
    mean_dtype_judge,
    mean_empty_judge,
    mean_judge,
    mean_shape_judge,
    mode_judge,
    with_last_size_fit,
    with_reduceat_hint,
    with_set_or_overwritten,
)

A = "04_bags"
check = checks_for(A)
FWD_NAMES = ["E", "ids", "offsets"]
BWD_NAMES = ["ids", "offsets", "grad_out", "V"]
WORKED_IDS = np.array([4, 1, 1, 7, 2])
WORKED_OFFSETS = np.array([0, 3])


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------
def _offsets(sizes, dtype=np.int64):
    """Bag sizes -> offsets: bag b starts where the bags before it end."""
    sizes = np.asarray(sizes, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(dtype)


def _bags(sizes, V, seed, dtype=np.int64):
    """ids and offsets for bags of the given sizes, ids drawn uniformly from [0, V)."""
    n = int(np.sum(sizes))
    ids = np.random.default_rng(seed).integers(0, V, size=n).astype(dtype)
    return ids, _offsets(sizes, dtype)


def _distinct_bags(sizes, V, seed, dtype=np.int64):
    """ids and offsets for bags of the given sizes, no id used twice (needs sum(sizes) <= V):
    for the cells about other properties than repeated ids, so that a repeated-id mistake
    costs the cells that test repeats (mean and sum) and no other."""
    n = int(np.sum(sizes))
    ids = np.random.default_rng(seed).permutation(V)[:n].astype(dtype)
    return ids, _offsets(sizes, dtype)


def _random_sizes(B, seed, low=1, high=6, p_empty=0.0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(low, high + 1, size=B)
    if p_empty:
        sizes[rng.random(B) < p_empty] = 0
    return sizes


def _meta(names, ids, offsets, **extra):
    """The case's meta: besides the argument names, what the public mistake models need to know
    about the bags (they never compute it): the bag sizes and the bag of each position."""
    sizes = np.diff(np.append(np.asarray(offsets, dtype=np.int64), len(ids)))
    bag = np.repeat(np.arange(len(offsets)), sizes)
    return {"arg_names": names, "sizes": sizes, "bag": bag, **extra}


def fwd(label, E, ids, offsets):
    return Case(label, (E, ids, offsets), meta=_meta(FWD_NAMES, ids, offsets))


def bwd(label, ids, offsets, grad_out, V, mode="mean", pass_mode=True, **meta):
    kwargs = {"mode": mode} if pass_mode else {}
    return Case(
        label,
        (ids, offsets, grad_out, V),
        kwargs,
        meta=_meta(BWD_NAMES, ids, offsets, mode=mode, **meta),
    )


# --------------------------------------------------------------------------------------------
# Hidden-only mistake models: the public ones (public/ch04.py) rescale, zero or move the expected
# gradient's rows, which works only when each id's bags have one size (or the id stays in one
# bag). The random hidden cases mix them, so these recompute the wrong answers: from the bags
# (kept here, never pasted into a notebook, because they scatter the bags from scratch as the
# answer does) or from the reference on changed inputs. They are tried after the public models,
# with the same messages.
# --------------------------------------------------------------------------------------------
def _bwd_parts(case):
    ids, offsets, grad_out, V = case.args
    ids = np.asarray(ids, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = ids.shape[0]
    sizes = np.append(offsets[1:], n) - offsets
    bag = np.repeat(np.arange(len(offsets)), sizes)
    return ids, sizes, bag, np.asarray(grad_out, dtype=np.float64), int(V), n


def _scattered(mode, scale):
    """G from per-position rows grad_out[bag[n]] * scale(sizes[bag], n, B), for cases of mode."""

    def model(case, want):
        if case.kwargs.get("mode", "mean") != mode:
            return None
        ids, sizes, bag, q, V, n = _bwd_parts(case)
        factor = scale(sizes[bag], n, len(sizes))
        if factor is None:
            return None
        G = np.zeros((V, q.shape[1]))
        np.add.at(G, ids, q[bag] * factor[:, None])
        return G

    return model


def _overwritten_full(case, want):
    """dE[ids] += rows with fancy indexing: for a repeated id only its last position counts."""
    ids, sizes, bag, q, V, n = _bwd_parts(case)
    if np.unique(ids).size == n:
        return None
    mean = case.kwargs.get("mode", "mean") == "mean"
    rows = q[bag] / (sizes[bag][:, None] if mean else 1.0)
    dE = np.zeros((V, q.shape[1]))
    dE[ids] += rows
    return dE


def _reference_backward(ids, offsets, grad_out, V, kwargs):
    return reference.function(A, BWD)(ids, offsets, grad_out, V, **kwargs)


def _last_dropped_full(case, want):
    """The reference on every bag but the last (no bag at all: zeros)."""
    ids, offsets, grad_out, V = case.args
    ids, offsets = np.asarray(ids), np.asarray(offsets)
    if offsets[-1] == len(ids):  # an empty last bag: leaving it out changes nothing
        return None
    if len(offsets) == 1:
        return np.zeros(want.shape)
    return _reference_backward(
        ids[: offsets[-1]], offsets[:-1], np.asarray(grad_out)[:-1], V, case.kwargs
    )


def _moved_full(true_sizes):
    """A bag index that skips empty bags (public/ch04.py, index_skipping_empty): the reference
    with each non-empty bag b given grad_out[to[b]] (times size b / size to[b] when the sizes
    are looked up with that index too, mode="mean")."""

    def model(case, want):
        ids, offsets, grad_out, V = case.args
        mean = case.kwargs.get("mode", "mean") == "mean"
        if true_sizes and not mean:
            return None
        sizes = case.meta["sizes"]
        to = index_skipping_empty(offsets)
        if np.array_equal(to[sizes > 0], np.flatnonzero(sizes > 0)):
            return None
        q = np.asarray(grad_out, dtype=np.float64)
        moved = q[to]
        if true_sizes:
            with np.errstate(divide="ignore", invalid="ignore"):
                moved = moved * (sizes / sizes[to].astype(np.float64))[:, None]
        moved[sizes == 0] = 0.0
        with np.errstate(invalid="ignore"):
            return _reference_backward(ids, offsets, moved, V, case.kwargs)

    return model


def _as_set_full(by_distinct):
    """A bag treated as a set: each distinct id of bag b gets grad_out[b] once, over the bag's
    size (``by_distinct``: over its number of distinct ids) with mode="mean". None where no bag
    repeats an id (or, by_distinct, for mode="sum", where both forms are the same)."""

    def model(case, want):
        mean = case.kwargs.get("mode", "mean") == "mean"
        if by_distinct and not mean:
            return None
        ids, sizes, bag, q, V, n = _bwd_parts(case)
        G = np.zeros((V, q.shape[1]))
        repeated = False
        for b in np.flatnonzero(sizes > 0):
            u = np.unique(ids[bag == b])
            repeated = repeated or u.size < sizes[b]
            G[u] += q[b] / ((u.size if by_distinct else sizes[b]) if mean else 1.0)
        return G if repeated else None

    return model


_KNOWN = {m.name: m for m in BWD_MISTAKES}


def _hidden(name, model):
    """The public mistake ``name`` (same id, same message), recognised by a hidden model too."""
    return Mistake(name, _KNOWN[name].message, model)


HIDDEN_BWD_MISTAKES = [
    _hidden("grad-sum-not-mean", _scattered("mean", lambda s, n, b: np.ones(n))),
    _hidden("grad-mean-not-sum", _scattered("sum", lambda s, n, b: 1.0 / s)),
    _hidden(
        "grad-divided-by-total",
        _scattered("mean", lambda s, n, b: np.full(n, 1.0 / n) if n > 1 else None),
    ),
    _hidden(
        "grad-divided-by-bags",
        _scattered("mean", lambda s, n, b: np.full(n, 1.0 / b) if b > 1 else None),
    ),
    _hidden("grad-overwritten", _overwritten_full),
    _hidden("grad-bag-as-set", (_as_set_full(False), _as_set_full(True))),  # every case
    _hidden("grad-wrong-bag", _moved_full(False)),
    _hidden("grad-wrong-bag-sizes", _moved_full(True)),
    _hidden("grad-last-bag-dropped", _last_dropped_full),
]
HIDDEN_AS_SET = next(m for m in HIDDEN_BWD_MISTAKES if m.name == BAG_AS_SET.name)
OVERWRITTEN_FULL = next(m for m in HIDDEN_BWD_MISTAKES if m.name == "grad-overwritten")


def _fits(mistake, case, value, dtype) -> bool:
    """Does one of ``mistake``'s (hidden, from the bags) models give ``value`` on ``case``?"""
    return any(
        np.shape(alt) == value.shape and close(value, alt, dtype)
        for alt in mistake.predictions(case, None)
    )


def with_set_told_apart(judge):
    """``judge``, naming grad-bag-as-set where only its model fits. Where another mistake fits
    too (dE[ids] += rows: every repeated id in one bag; grad-mean-not-sum: one distinct id per
    bag, mode="sum"), this case cannot tell them apart and names neither; the cell's other
    cases do."""

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        if not msg or got.value is None or got.error_type or want.error_type:
            return msg
        g, dtype = got.value.astype(np.float64), want.value.dtype
        if g.shape != want.value.shape or not _fits(HIDDEN_AS_SET, case, g, dtype):
            return msg
        if _fits(OVERWRITTEN_FULL, case, g, dtype):
            return either_repeat_mistake(case, OVERWRITTEN_FULL.message)
        if mistake_id(msg) and mistake_id(msg) != BAG_AS_SET.name:
            return either_repeat_mistake(case, str(msg))
        return HIDDEN_AS_SET.on(case)

    return wrapped


backward_judge = with_set_told_apart(
    with_set_or_overwritten(
        with_last_size_fit(
            with_reduceat_hint(
                array_judge(BWD, mistakes=BWD_MISTAKES + HIDDEN_BWD_MISTAKES), BWD, 0, 1
            )
        )
    )
)
_CELLS = backward_cell_judges(backward_judge)
REPEATS = (OVERWRITTEN_FULL, HIDDEN_AS_SET)


def excused_by_its_mean(judge):
    """The hidden sum cell's judge: besides what charged_in_mean (public/ch04.py) excuses, an
    answer that is a repeated-id mistake of REPEATS whose mode="mean" answer on the same bags
    (its companion call) is that mistake too, even where it gives the right mean there (a bag
    of one distinct id over its one distinct id): the mean cell charges it."""

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        whole = (got.companion or [None])[0]
        if not msg or not whole or got.value is None or got.value.shape != want.value.shape:
            return msg
        _, _, shape, flat = whole[0]
        mean_got = np.asarray(flat, dtype=np.float64).reshape(shape)
        mean_case = Case(case.label, case.args, {"mode": "mean"}, meta=case.meta)
        g, dtype = got.value.astype(np.float64), want.value.dtype
        if not any(
            _fits(m, case, g, dtype) and _fits(m, mean_case, mean_got, dtype) for m in REPEATS
        ):
            return msg
        if got.value.dtype != dtype:
            return WRONG_DTYPE.said(
                f"{BWD} returned {got.value.dtype} for {case.label}; expected {dtype}. "
                + dtype_advice(got.value.dtype, dtype)
            )
        return None

    return wrapped


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------
def _worked_table():
    return _table(8, 3, 100)


def _grad(B, d, seed, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal((B, d)).astype(dtype)


# --------------------------------------------------------------------------------------------
# Checks, one per test cell
# --------------------------------------------------------------------------------------------


def _worked_fwd():
    label = "the worked example's bags (ids [4, 1, 1, 7, 2], offsets [0, 3]) in a random table"
    return fwd(label, _worked_table(), WORKED_IDS, WORKED_OFFSETS)


def _worked_bwd(label, seed, mode=None):
    """The worked example's bags into a V = 8 table, with upstream gradients from seed."""
    if mode is None:
        return bwd(label, WORKED_IDS, WORKED_OFFSETS, _grad(2, 3, seed), 8, pass_mode=False)
    return bwd(label, WORKED_IDS, WORKED_OFFSETS, _grad(2, 3, seed), 8, mode=mode)


@check("test_bag_mean_shape", "embedding_bag_mean", mean_shape_judge)
def mean_shape():
    """embedding_bag_mean: one row per bag, shape (B, d)"""
    ids, offs = _bags(_random_sizes(7, 111), 20, 112)
    return [
        _worked_fwd(),
        fwd("7 bags into a (20, 5) table", _table(20, 5, 110), ids, offs),
        fwd("a single bag (offsets [0])", _table(6, 4, 113), np.array([5, 0, 3]), np.array([0])),
        fwd("bags of one id each", _table(9, 2, 114), np.array([8, 0, 4, 4]), np.arange(4)),
    ]


@check("test_bag_mean_values", "embedding_bag_mean", mean_judge)
def mean_values():
    """embedding_bag_mean: row b is the mean of bag b's rows"""
    ids1, offs1 = _bags(_random_sizes(30, 121, 1, 8), 50, 122)
    ids2, offs2 = _bags(_random_sizes(200, 123, 1, 12), 1000, 124)
    ids3, offs3 = _bags([4, 1, 6, 2], 3, 125)  # V = 3: many repeated ids within and across bags
    return [
        _worked_fwd(),
        fwd("30 bags of 1 to 8 ids into a (50, 6) table", _table(50, 6, 120), ids1, offs1),
        fwd("200 bags of 1 to 12 ids into a (1000, 16) table", _table(1000, 16, 126), ids2, offs2),
        fwd("bags of sizes [4, 1, 6, 2] with only 3 distinct ids", _table(3, 4, 127), ids3, offs3),
        fwd("a single bag of 9 ids", _table(12, 3, 128), _bags([9], 12, 129)[0], np.array([0])),
        fwd(
            "every id the same (id 5, bags of sizes [3, 2, 4])",
            _table(7, 3, 130),
            np.full(9, 5),
            _offsets([3, 2, 4]),
        ),
    ]


@check("test_bag_mean_empty_bags", "embedding_bag_mean", mean_empty_judge)
def mean_empty():
    """embedding_bag_mean: empty bags give rows of zeros"""
    E = _table(10, 4, 140)
    ids_mid, offs_mid = _bags([2, 0, 3], 10, 141)
    ids_run, offs_run = _bags([3, 0, 0, 0, 2, 2], 10, 142)
    ids_many, offs_many = _bags(_random_sizes(40, 143, 1, 5, p_empty=0.3), 10, 144)
    return [
        fwd("bags of sizes [2, 0, 3] (an empty bag in the middle)", E, ids_mid, offs_mid),
        fwd("bags of sizes [3, 0, 0, 0, 2, 2] (three empty bags in a row)", E, ids_run, offs_run),
        fwd(
            "bags of sizes [0, 0, 4] (empty bags first)",
            E,
            _bags([4], 10, 145)[0],
            _offsets([0, 0, 4]),
        ),
        fwd(
            "bags of sizes [3, 2, 0] (an empty last bag: offsets[-1] == len(ids))",
            E,
            _bags([3, 2], 10, 146)[0],
            _offsets([3, 2, 0]),
        ),
        fwd("40 bags, about a third of them empty", E, ids_many, offs_many),
        fwd(
            "no ids at all (ids empty, offsets [0])", E, np.array([], dtype=np.int64), np.array([0])
        ),
        fwd(
            "no ids at all and three bags (offsets [0, 0, 0])",
            E,
            np.array([], dtype=np.int64),
            np.zeros(3, dtype=np.int64),
        ),
    ]


@check("test_bag_mean_dtype", "embedding_bag_mean", mean_dtype_judge)
def mean_dtype():
    """embedding_bag_mean: the result keeps E's dtype; inputs are not modified"""
    ids, offs = _bags(_random_sizes(12, 151, 1, 6), 30, 152)
    ids_e, offs_e = _bags([3, 0, 2], 30, 153)
    # Short bags around a long one (20,000 ids, the largest the exercise promises accuracy for),
    # entries around 1: a float32 prefix sum over all bags (np.cumsum) leaves the short bags after
    # it off by about 1e-4 relative; summing each bag on its own, in float32 or float64, does not.
    ids_l, offs_l = _bags([5, 20000, 3, 4], 1000, 157)
    long_table = (1.0 + 0.5 * _table(1000, 4, 158)).astype(np.float32)
    return [
        fwd("a float32 table", _table(30, 5, 150, np.float32), ids, offs),
        fwd(
            "a float32 table, bags of sizes [5, 20000, 3, 4] (a long bag)",
            long_table,
            ids_l,
            offs_l,
        ),
        fwd(
            "a float32 table, a bag of 20,000 ids, then a bag of 3",
            np.array([[1.0, 0.5], [0.1, -0.3]], dtype=np.float32),
            np.repeat([0, 1], [20000, 3]),
            np.array([0, 20000]),
        ),
        fwd("a float32 table with an empty bag", _table(30, 5, 154, np.float32), ids_e, offs_e),
        fwd("a float64 table", _table(30, 5, 155), ids, offs),
        fwd(
            "int32 ids and offsets", _table(30, 5, 156), ids.astype(np.int32), offs.astype(np.int32)
        ),
    ]


@check("test_bag_backward_shape", "embedding_bag_backward", backward_shape_judge)
def backward_shape():
    """embedding_bag_backward: one row per row of the table, shape (V, d)"""
    ids, offs = _bags(_random_sizes(6, 211), 15, 212)
    return [
        _worked_bwd("the worked example's bags with V = 8, random gradients", 210),
        bwd("6 bags, V = 15", ids, offs, _grad(6, 4, 213), 15),
        bwd(
            "ids that use only the first rows of a V = 50 table",
            np.array([0, 1, 1, 2]),
            np.array([0, 2]),
            _grad(2, 3, 214),
            50,
        ),
        bwd('mode="sum", V = 15', ids, offs, _grad(6, 2, 215), 15, mode="sum"),
    ]


@check("test_bag_backward_mean", "embedding_bag_backward", backward_judge)
def backward_mean():
    """embedding_bag_backward, mode="mean": each id gets its bag's gradient over the bag size"""
    ids1, offs1 = _bags(_random_sizes(25, 221, 1, 8), 40, 222)
    ids2, offs2 = _bags(_random_sizes(150, 223, 1, 10), 600, 224)
    ids3, offs3 = _bags([5, 2, 4, 3], 4, 225)
    return [
        _worked_bwd("the worked example's bags, V = 8, random gradients", 220),
        bwd("25 bags of 1 to 8 ids, V = 40", ids1, offs1, _grad(25, 5, 226), 40),
        bwd("150 bags of 1 to 10 ids, V = 600", ids2, offs2, _grad(150, 8, 227), 600),
        bwd(
            "bags of sizes [5, 2, 4, 3] from 4 ids (many repeats)", ids3, offs3, _grad(4, 3, 228), 4
        ),
        bwd(
            "every id the same (id 2, bags of sizes [4, 1, 3])",
            np.full(8, 2),
            _offsets([4, 1, 3]),
            _grad(3, 2, 229),
            6,
        ),
        bwd("a single bag of 6 ids", _bags([6], 9, 230)[0], np.array([0]), _grad(1, 4, 231), 9),
        bwd(
            "int32 ids and offsets, 10 bags from V = 30 (ids repeat across bags)",
            (i32 := _bags(_random_sizes(10, 271, 1, 6), 30, 272))[0].astype(np.int32),
            i32[1].astype(np.int32),
            _grad(10, 4, 275),
            30,
        ),
    ]


def with_mean_companion(cases):
    """Each sum case with what mode="mean" gives on the same bags and the student's answer there
    (public/ch04.py, charged_in_mean)."""
    for case in cases:
        ids, offsets, grad_out, V = case.args
        case.meta["mean_expected"] = _reference_backward(
            ids, offsets, grad_out, V, {"mode": "mean"}
        )
        case.meta["companion"] = mean_companion(case)
    return cases


@check("test_bag_backward_sum", "embedding_bag_backward", excused_by_its_mean(_CELLS["sum"]))
def backward_sum():
    """embedding_bag_backward, mode="sum": each id gets its bag's whole gradient"""
    ids1, offs1 = _bags(_random_sizes(25, 241, 1, 8), 40, 242)
    ids3, offs3 = _bags([5, 2, 4, 3], 4, 243)
    return with_mean_companion(
        [
            _worked_bwd(
                'the worked example\'s bags, random gradients, mode="sum"', 240, mode="sum"
            ),
            bwd(
                '25 bags of 1 to 8 ids, V = 40, mode="sum"',
                ids1,
                offs1,
                _grad(25, 5, 244),
                40,
                mode="sum",
            ),
            bwd(
                'bags of sizes [5, 2, 4, 3] with only 4 distinct ids, mode="sum"',
                ids3,
                offs3,
                _grad(4, 3, 245),
                4,
                mode="sum",
            ),
            bwd(
                'every id the same, mode="sum"',
                np.full(7, 3),
                _offsets([2, 5]),
                _grad(2, 3, 246),
                5,
                mode="sum",
            ),
        ]
    )


@check("test_bag_backward_empty_bags", "embedding_bag_backward", _CELLS["empty"])
def backward_empty():
    """embedding_bag_backward: empty bags contribute nothing"""
    # Distinct ids (repeats are the mean and sum cells' property).
    ids_mid, offs_mid = _distinct_bags([2, 0, 3], 10, 251)
    ids_run, offs_run = _distinct_bags([3, 0, 0, 0, 2, 2], 10, 252)
    ids_many, offs_many = _distinct_bags(_random_sizes(40, 253, 1, 5, p_empty=0.3), 120, 254)
    return [
        bwd(
            "bags of sizes [2, 0, 3] (an empty bag in the middle)",
            ids_mid,
            offs_mid,
            _grad(3, 4, 250),
            10,
        ),
        bwd(
            "bags of sizes [3, 0, 0, 0, 2, 2] (three empty bags in a row)",
            ids_run,
            offs_run,
            _grad(6, 4, 255),
            10,
        ),
        bwd(
            "bags of sizes [0, 0, 4] (empty bags first)",
            _distinct_bags([4], 10, 256)[0],
            _offsets([0, 0, 4]),
            _grad(3, 2, 257),
            10,
        ),
        bwd(
            "bags of sizes [3, 2, 0] (an empty last bag)",
            _distinct_bags([3, 2], 10, 258)[0],
            _offsets([3, 2, 0]),
            _grad(3, 2, 259),
            10,
        ),
        bwd("40 bags, about a third of them empty", ids_many, offs_many, _grad(40, 3, 260), 120),
        bwd(
            '40 bags, about a third of them empty, mode="sum"',
            ids_many,
            offs_many,
            _grad(40, 3, 261),
            120,
            mode="sum",
        ),
        bwd(
            "no ids at all (ids empty, offsets [0, 0])",
            np.array([], dtype=np.int64),
            np.zeros(2, dtype=np.int64),
            _grad(2, 3, 262),
            5,
        ),
    ]


@check("test_bag_backward_dtype", "embedding_bag_backward", _CELLS["dtype"])
def backward_dtype():
    """embedding_bag_backward: the result keeps grad_out's dtype; inputs are not modified"""
    # Distinct ids, every row used once (V = N): repeats are the mean and sum cells' property.
    sizes = _random_sizes(10, 271, 1, 6)
    ids, offs = _distinct_bags(sizes, int(np.sum(sizes)), 272)
    V = ids.shape[0]
    return [
        bwd("float32 grad_out", ids, offs, _grad(10, 4, 270, np.float32), V),
        bwd(
            'float32 grad_out, mode="sum"', ids, offs, _grad(10, 4, 273, np.float32), V, mode="sum"
        ),
        bwd("float64 grad_out", ids, offs, _grad(10, 4, 274), V),
        bwd(
            "int32 ids and offsets",
            ids.astype(np.int32),
            offs.astype(np.int32),
            _grad(10, 4, 275),
            V,
        ),
    ]


@check("test_bag_backward_mode", "embedding_bag_backward", mode_judge)
def backward_mode():
    """embedding_bag_backward: an unknown mode raises ValueError"""
    ids, offs = WORKED_IDS, WORKED_OFFSETS
    return [
        Case(
            f"mode={m!r}",
            (ids, offs, _grad(2, 3, 280), 8),
            {"mode": m},
            meta={"arg_names": BWD_NAMES, "expect_error": True},
        )
        for m in ("max", "avg", "")
    ]
