"""Chapter 4: bags of ids (EmbeddingBag). Hidden checks for its exercise.

Every case is deterministic (fixed seeds). The mistake models below compute what a classic wrong
answer returns for a case, so that the feedback can name the mistake instead of printing numbers.
"""

from __future__ import annotations

import numpy as np

from .data import table as _table
from .framework import Case, Mistake, array_judge, checks_for, common_problems, shape_judge

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


def _random_sizes(B, seed, low=1, high=6, p_empty=0.0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(low, high + 1, size=B)
    if p_empty:
        sizes[rng.random(B) < p_empty] = 0
    return sizes


def _meta(names, ids, offsets, **extra):
    ids = np.asarray(ids)
    offsets = np.asarray(offsets)
    return {
        "arg_names": names,
        "trailing_empty": bool(offsets[-1] == ids.shape[0]),
        **extra,
    }


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
# The layout of a case, and the classic wrong answers built on it
# --------------------------------------------------------------------------------------------
def _layout(ids, offsets):
    """N, sizes (B,), bag index (N,): position n belongs to bag bag[n]."""
    ids = np.asarray(ids)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = ids.shape[0]
    ends = np.append(offsets[1:], n)
    sizes = ends - offsets
    bag = np.repeat(np.arange(len(offsets)), sizes)
    return n, sizes, bag


def _bag_sums(E, ids, offsets):
    """Per-bag sums in float64, (B, d)."""
    _, sizes, bag = _layout(ids, offsets)
    sums = np.zeros((len(sizes), E.shape[1]))
    np.add.at(sums, bag, np.asarray(E, dtype=np.float64)[np.asarray(ids, dtype=np.int64)])
    return sums


def _f_sum(case, want):
    E, ids, offsets = case.args
    return _bag_sums(E, ids, offsets)


def _f_by_total(case, want):
    E, ids, offsets = case.args
    n = np.asarray(ids).shape[0]
    return _bag_sums(E, ids, offsets) / n if n > 1 else None


def _f_by_bags(case, want):
    E, ids, offsets = case.args
    b = len(offsets)
    return _bag_sums(E, ids, offsets) / b if b > 1 else None


def _f_empty_nan(case, want):
    _, ids, offsets = case.args
    _, sizes, _ = _layout(ids, offsets)
    if not np.any(sizes == 0):
        return None
    out = np.array(want, dtype=np.float64)
    out[sizes == 0] = np.nan
    return out


def _f_neighbour(case, want):
    """np.add.reduceat: an empty bag (offsets[b] == offsets[b+1]) gets element offsets[b]."""
    E, ids, offsets = case.args
    n, sizes, _ = _layout(ids, offsets)
    empty = np.flatnonzero(sizes == 0)
    if len(empty) == 0:
        return None
    out = np.array(want, dtype=np.float64)
    for b in empty:
        start = int(offsets[b])
        out[b] = E[int(ids[start])] if start < n else 0.0
    return out


def _last_dropped(case, want):
    return want[:-1]


def _f_last_zero(case, want):
    _, ids, offsets = case.args
    _, sizes, _ = _layout(ids, offsets)
    if sizes[-1] == 0:
        return None
    out = np.array(want, dtype=np.float64)
    out[-1] = 0.0
    return out


LAST_BAG = (
    "the last bag was left out. It has no offset after it: it runs from offsets[-1] to the end "
    "of ids (position N = len(ids))"
)

FWD_MISTAKES = [
    Mistake(
        "sum_for_mean",
        "embedding_bag_mean returned each bag's sum, not its mean: divide bag b's sum by the "
        "number of ids in bag b",
        _f_sum,
    ),
    Mistake(
        "divided_by_total",
        "embedding_bag_mean divided every bag's sum by the total number of ids N = len(ids); the "
        "mean of bag b divides by the size of bag b (offsets[b+1] - offsets[b], and "
        "N - offsets[-1] for the last bag)",
        _f_by_total,
    ),
    Mistake(
        "divided_by_bags",
        "embedding_bag_mean divided every bag's sum by the number of bags B = len(offsets); the "
        "mean of bag b divides by the size of bag b",
        _f_by_bags,
    ),
    Mistake(
        "empty_nan",
        "embedding_bag_mean gave NaN (or inf) for an empty bag: a bag without ids divides 0 by 0. "
        "An empty bag must give a row of zeros, as torch does",
        _f_empty_nan,
    ),
    Mistake(
        "empty_neighbour",
        "embedding_bag_mean gave an empty bag the values of the id after it. This is the "
        "np.add.reduceat pitfall: for equal offsets it returns the element at that offset, not 0. "
        "Set the rows of empty bags to zero yourself",
        _f_neighbour,
    ),
    Mistake("last_bag_dropped", f"embedding_bag_mean: {LAST_BAG}", _last_dropped),
    Mistake("last_bag_zero", f"embedding_bag_mean: {LAST_BAG}", _f_last_zero),
]


def _bwd_parts(case):
    ids, offsets, grad_out, V = case.args
    mode = case.meta.get("mode", "mean")
    n, sizes, bag = _layout(ids, offsets)
    q = np.asarray(grad_out, dtype=np.float64)
    return np.asarray(ids, dtype=np.int64), sizes, bag, q, int(V), mode, n


def _scatter(V, d, ids, rows):
    G = np.zeros((V, d))
    np.add.at(G, ids, rows)
    return G


def _b_rows(case, scale):
    """G from per-position rows q[bag[n]] * scale(n)."""
    ids, sizes, bag, q, V, mode, n = _bwd_parts(case)
    return _scatter(V, q.shape[1], ids, q[bag] * scale(ids, sizes, bag, n)[:, None])


def _b_sum_for_mean(case, want):
    if case.meta.get("mode") != "mean":
        return None
    return _b_rows(case, lambda ids, sizes, bag, n: np.ones(n))


def _b_mean_for_sum(case, want):
    if case.meta.get("mode") != "sum":
        return None
    return _b_rows(case, lambda ids, sizes, bag, n: 1.0 / sizes[bag])


def _b_by_total(case, want):
    ids, sizes, bag, q, V, mode, n = _bwd_parts(case)
    if mode != "mean" or n < 2:
        return None
    return _b_rows(case, lambda ids, sizes, bag, n: np.full(n, 1.0 / n))


def _b_by_bags(case, want):
    ids, sizes, bag, q, V, mode, n = _bwd_parts(case)
    if mode != "mean" or len(sizes) < 2:
        return None
    return _b_rows(case, lambda ids, sizes, bag, n: np.full(n, 1.0 / len(sizes)))


def _b_overwritten(case, want):
    """dE[ids] += rows with fancy indexing: for a repeated id only its last position counts."""
    ids, sizes, bag, q, V, mode, n = _bwd_parts(case)
    if len(np.unique(ids)) == n:
        return None
    rows = q[bag] / (sizes[bag][:, None] if mode == "mean" else 1.0)
    dE = np.zeros((V, q.shape[1]))
    dE[ids] += rows
    return dE


def _b_last_dropped(case, want):
    ids, sizes, bag, q, V, mode, n = _bwd_parts(case)
    if sizes[-1] == 0:
        return None
    keep = bag != len(sizes) - 1
    scale = 1.0 / sizes[bag] if mode == "mean" else np.ones(n)
    return _scatter(V, q.shape[1], ids[keep], (q[bag] * scale[:, None])[keep])


def _b_empty_nan(case, want):
    """The count matrix divided by bag sizes: an empty bag's 0/0 spreads NaN into every row."""
    ids, sizes, bag, q, V, mode, n = _bwd_parts(case)
    if mode != "mean" or not np.any(sizes == 0):
        return None
    return np.full(want.shape, np.nan)


def _b_wrong_bag(case, want):
    """Bag index from counting distinct bag starts: with empty bags, ids land in an earlier bag."""
    ids, sizes, bag, q, V, mode, n = _bwd_parts(case)
    if not np.any(sizes == 0) or n == 0:
        return None
    offsets = np.asarray(case.args[1])
    wrong = np.cumsum(np.isin(np.arange(n), offsets)) - 1
    wrong = np.maximum(wrong, 0)
    scale = 1.0 / sizes[bag] if mode == "mean" else np.ones(n)
    return _scatter(V, q.shape[1], ids, q[wrong] * scale[:, None])


def _b_short(case, want):
    """One row per id up to the largest id that occurs, instead of V rows."""
    ids = np.asarray(case.args[0])
    if ids.size == 0 or ids.max() + 1 >= want.shape[0]:
        return None
    return want[: ids.max() + 1]


BWD_MISTAKES = [
    Mistake(
        "short_gradient",
        "embedding_bag_backward returned one row per id up to the largest id in ids; the gradient "
        "has one row for every row of the table, V rows (rows no bag uses are zeros)",
        _b_short,
    ),
    Mistake(
        "sum_for_mean",
        'embedding_bag_backward with mode="mean" gave each id its bag\'s whole gradient, as for '
        'mode="sum": with mean pooling each id receives its bag\'s gradient divided by the bag size',
        _b_sum_for_mean,
    ),
    Mistake(
        "mean_for_sum",
        'embedding_bag_backward with mode="sum" divided by the bag size, as for mode="mean": '
        "with sum pooling each id receives its bag's whole gradient",
        _b_mean_for_sum,
    ),
    Mistake(
        "divided_by_total",
        "embedding_bag_backward divided by the total number of ids N = len(ids); with mean pooling "
        "an id in bag b receives grad_out[b] divided by the size of bag b",
        _b_by_total,
    ),
    Mistake(
        "divided_by_bags",
        "embedding_bag_backward divided by the number of bags B = len(offsets); with mean pooling "
        "an id in bag b receives grad_out[b] divided by the size of bag b",
        _b_by_bags,
    ),
    Mistake(
        "overwritten",
        "embedding_bag_backward kept only one contribution for a repeated id: dE[ids] += rows with "
        "repeated ids writes each row once (the last write wins). Every occurrence must add up: "
        "use np.add.at or a loop",
        _b_overwritten,
    ),
    Mistake(
        "empty_nan",
        "embedding_bag_backward returned NaN: an empty bag's size is 0, and 0/0 spread into the "
        "result. An empty bag has no ids, so it contributes nothing",
        _b_empty_nan,
    ),
    Mistake(
        "wrong_bag",
        "embedding_bag_backward credited ids to the wrong bag when some bags are empty: equal "
        "offsets mean empty bags, so position n belongs to the last bag b with offsets[b] <= n",
        _b_wrong_bag,
    ),
    Mistake("last_bag_dropped", f"embedding_bag_backward: {LAST_BAG}", _b_last_dropped),
]


# --------------------------------------------------------------------------------------------
# Judges
# --------------------------------------------------------------------------------------------
def _with_reduceat_hint(judge, fname):
    """An IndexError on a case with an empty last bag is the other np.add.reduceat pitfall."""

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        if msg and got.error_type == "IndexError" and case.meta.get("trailing_empty"):
            msg = msg.rstrip(". ") + (
                f". Here the last offset equals len(ids), which makes the last bag empty; "
                f"np.add.reduceat rejects such an offset, so {fname} must handle empty bags itself."
            )
        return msg

    return wrapped


def _shape_judge(fname, mistakes):
    return _with_reduceat_hint(shape_judge(fname, mistakes), fname)


def _mode_judge(case, got, want):
    if got.error_type == "NotImplementedError":
        return (
            f"embedding_bag_backward raised NotImplementedError for {case.label}; an unknown mode "
            "must raise ValueError (if this is still the stub, replace it with your code)."
        )
    return common_problems(case, got, want, "embedding_bag_backward")


mean_judge = _with_reduceat_hint(
    array_judge("embedding_bag_mean", mistakes=FWD_MISTAKES, row_word="bag"), "embedding_bag_mean"
)
backward_judge = _with_reduceat_hint(
    array_judge("embedding_bag_backward", mistakes=BWD_MISTAKES), "embedding_bag_backward"
)


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
    label = "the worked example (ids [4, 1, 1, 7, 2], offsets [0, 3])"
    return fwd(label, _worked_table(), WORKED_IDS, WORKED_OFFSETS)


def _worked_bwd(label, seed, mode=None):
    """The worked example's bags into a V = 8 table, with upstream gradients from seed."""
    if mode is None:
        return bwd(label, WORKED_IDS, WORKED_OFFSETS, _grad(2, 3, seed), 8, pass_mode=False)
    return bwd(label, WORKED_IDS, WORKED_OFFSETS, _grad(2, 3, seed), 8, mode=mode)


@check(
    "test_bag_mean_shape",
    "embedding_bag_mean",
    _shape_judge("embedding_bag_mean", FWD_MISTAKES[-2:-1]),
)
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


@check("test_bag_mean_empty_bags", "embedding_bag_mean", mean_judge)
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


@check("test_bag_mean_dtype", "embedding_bag_mean", mean_judge)
def mean_dtype():
    """embedding_bag_mean: the result keeps E's dtype; inputs are not modified"""
    ids, offs = _bags(_random_sizes(12, 151, 1, 6), 30, 152)
    ids_e, offs_e = _bags([3, 0, 2], 30, 153)
    return [
        fwd("a float32 table", _table(30, 5, 150, np.float32), ids, offs),
        fwd("a float32 table with an empty bag", _table(30, 5, 154, np.float32), ids_e, offs_e),
        fwd("a float64 table", _table(30, 5, 155), ids, offs),
        fwd(
            "int32 ids and offsets", _table(30, 5, 156), ids.astype(np.int32), offs.astype(np.int32)
        ),
    ]


@check(
    "test_bag_backward_shape",
    "embedding_bag_backward",
    _shape_judge("embedding_bag_backward", BWD_MISTAKES[:1]),
)
def backward_shape():
    """embedding_bag_backward: one row per row of the table, shape (V, d)"""
    ids, offs = _bags(_random_sizes(6, 211), 15, 212)
    return [
        _worked_bwd("the worked example with V = 8", 210),
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
        _worked_bwd("the worked example (ids [4, 1, 1, 7, 2], offsets [0, 3]), V = 8", 220),
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
    ]


@check("test_bag_backward_sum", "embedding_bag_backward", backward_judge)
def backward_sum():
    """embedding_bag_backward, mode="sum": each id gets its bag's whole gradient"""
    ids1, offs1 = _bags(_random_sizes(25, 241, 1, 8), 40, 242)
    ids3, offs3 = _bags([5, 2, 4, 3], 4, 243)
    return [
        _worked_bwd('the worked example, mode="sum"', 240, mode="sum"),
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


@check("test_bag_backward_empty_bags", "embedding_bag_backward", backward_judge)
def backward_empty():
    """embedding_bag_backward: empty bags contribute nothing"""
    ids_mid, offs_mid = _bags([2, 0, 3], 10, 251)
    ids_run, offs_run = _bags([3, 0, 0, 0, 2, 2], 10, 252)
    ids_many, offs_many = _bags(_random_sizes(40, 253, 1, 5, p_empty=0.3), 12, 254)
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
            _bags([4], 10, 256)[0],
            _offsets([0, 0, 4]),
            _grad(3, 2, 257),
            10,
        ),
        bwd(
            "bags of sizes [3, 2, 0] (an empty last bag)",
            _bags([3, 2], 10, 258)[0],
            _offsets([3, 2, 0]),
            _grad(3, 2, 259),
            10,
        ),
        bwd("40 bags, about a third of them empty", ids_many, offs_many, _grad(40, 3, 260), 12),
        bwd(
            '40 bags, about a third of them empty, mode="sum"',
            ids_many,
            offs_many,
            _grad(40, 3, 261),
            12,
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


@check("test_bag_backward_dtype", "embedding_bag_backward", backward_judge)
def backward_dtype():
    """embedding_bag_backward: the result keeps grad_out's dtype; inputs are not modified"""
    ids, offs = _bags(_random_sizes(10, 271, 1, 6), 30, 272)
    return [
        bwd("float32 grad_out", ids, offs, _grad(10, 4, 270, np.float32), 30),
        bwd(
            'float32 grad_out, mode="sum"', ids, offs, _grad(10, 4, 273, np.float32), 30, mode="sum"
        ),
        bwd("float64 grad_out", ids, offs, _grad(10, 4, 274), 30),
        bwd(
            "int32 ids and offsets",
            ids.astype(np.int32),
            offs.astype(np.int32),
            _grad(10, 4, 275),
            30,
        ),
    ]


@check("test_bag_backward_mode", "embedding_bag_backward", _mode_judge)
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
