"""Chapter 4's public judges and mistake models (pasted into the released notebook).

Every mistake is modelled from the case and the expected value, never from the reference and
never by pooling or scattering the bags from scratch: a forward mistake rescales or moves the
expected means, a backward mistake rescales, zeroes or moves the expected gradient's rows (where
the bags make that possible, else the model stays silent).

What the models need to know about the bags beyond the arguments travels in the case's meta, as
chapter 5's input rows do: ``meta["sizes"]``, the (B,) bag sizes, and ``meta["bag"]``, the (N,)
bag of each position. A visible test states them literally for its small example (only where its
mistakes need them); the hidden checks compute them. Without them the models stay silent.
"""

from __future__ import annotations

import numpy as np

from ..compare import close, differing_rows
from ..judges import (
    NOT_IMPLEMENTED,
    WRONG_DTYPE,
    Mistake,
    array_judge,
    common_problems,
    dtype_advice,
    mistake_id,
    shape_judge,
)
from ..visible import make_expect

MEAN = "embedding_bag_mean"
BWD = "embedding_bag_backward"


# ------------------------------------------------------------------------------------------
# What a case says about its bags (meta), and the bags a wrong index gives
# ------------------------------------------------------------------------------------------
def _sizes(case):
    """(B,) the bag sizes from meta["sizes"], or None."""
    sizes = case.meta.get("sizes")
    return None if sizes is None else np.asarray(sizes).astype(np.int64)


def _bag(case):
    """(N,) the bag of each position from meta["bag"], or None."""
    bag = case.meta.get("bag")
    return None if bag is None else np.asarray(bag).astype(np.int64)


def _mode(case):
    return case.kwargs.get("mode", "mean")


def index_skipping_empty(offsets):
    """(B,): the bag that an index counting distinct bag starts (one step per distinct offset)
    gives to the positions of each bag. It skips empty bags: after one, the positions of bag b
    land in an earlier bag."""
    offsets = np.asarray(offsets)
    return np.array([np.unique(offsets[: b + 1]).size - 1 for b in range(offsets.shape[0])])


# ------------------------------------------------------------------------------------------
# embedding_bag_mean: classic wrong answers, from the expected means
# ------------------------------------------------------------------------------------------
def _f_ambiguous_last(case):
    """True where every bag but the last holds at most one id, so that each bag's sum and the
    last bag's sum alone (its size taken as 1) are the same answer: neither is named there."""
    sizes = _sizes(case)
    return sizes is not None and sizes[-1] > 1 and bool(np.all(sizes[:-1] <= 1))


def _f_sums(case, want):
    """Each bag's sum: its mean times its size."""
    sizes = _sizes(case)
    return None if sizes is None else want * sizes[:, None]


def _f_sum(case, want):
    """Each bag's sum, silent where only the last bag has two ids or more (there it is also the
    last bag's size taken as 1: neither mistake is named)."""
    return None if _f_ambiguous_last(case) else _f_sums(case, want)


def _f_by_total(case, want):
    sizes, n = _sizes(case), np.asarray(case.args[1]).shape[0]
    return None if sizes is None or n <= 1 else want * sizes[:, None] / n


def _f_by_bags(case, want):
    sizes, b = _sizes(case), len(case.args[2])
    return None if sizes is None or b <= 1 else want * sizes[:, None] / b


def _distinct_counts(case):
    """(B,) the number of distinct ids in each bag (from meta["sizes"]), or None."""
    sizes = _sizes(case)
    if sizes is None:
        return None
    ids, bag = np.asarray(case.args[1]), np.repeat(np.arange(len(sizes)), sizes)
    return np.array([np.unique(ids[bag == b]).size for b in range(len(sizes))])


def _f_by_distinct(case, want):
    """Each bag's sum over its number of distinct ids (np.unique drops the repeats). Silent
    where that number is B for every non-empty bag: divided-by-bags names that case (its
    message mentions distinct ids)."""
    sizes, counts, b = _sizes(case), _distinct_counts(case), len(case.args[2])
    if sizes is None or np.all(counts[sizes > 0] == b):
        return None
    return want * sizes[:, None] / np.maximum(counts, 1)[:, None]


def _f_as_set(case, want):
    """Each bag's mean over its distinct ids (E[np.unique(ids[s:e])].mean(0)): from the expected
    mean, the sum less the extra copies of each repeated id, over the number of distinct ids.
    Silent where no bag repeats an id."""
    sizes = _sizes(case)
    if sizes is None:
        return None
    E, ids = np.asarray(case.args[0], dtype=np.float64), np.asarray(case.args[1])
    bag = np.repeat(np.arange(len(sizes)), sizes)
    out = np.array(want, dtype=np.float64)
    repeated = False
    for b in np.flatnonzero(sizes > 0):
        v, c = np.unique(ids[bag == b], return_counts=True)
        if np.all(c == 1):
            continue
        repeated = True
        out[b] = (out[b] * sizes[b] - ((c - 1)[:, None] * E[v]).sum(axis=0)) / v.size
    return out if repeated else None


def _f_empty_nan(case, want):
    sizes = _sizes(case)
    if sizes is None or not np.any(sizes == 0):
        return None
    out = np.array(want, dtype=np.float64)
    out[sizes == 0] = np.nan
    return out


def _f_neighbour(case, want):
    """np.add.reduceat: an empty bag (offsets[b] == offsets[b+1]) gets the row of the id at
    position offsets[b] (the first id of a later bag) instead of zeros."""
    E, ids, offsets = case.args
    sizes = _sizes(case)
    if sizes is None or not np.any(sizes == 0):
        return None
    out = np.array(want, dtype=np.float64)
    for b in np.flatnonzero(sizes == 0):
        start = int(offsets[b])
        out[b] = E[ids[start]] if start < len(ids) else 0.0
    return out


def _f_moved(sizes_of):
    """A bag index that skips empty bags: the sum of the k-th non-empty bag lands in row k
    (the rows after the last of them get no ids), divided by sizes_of(sizes, counts), where
    counts are the sizes that index gives its rows (the k-th non-empty bag's size in row k, 0
    after) and sizes the true bag sizes."""

    def model(case, want):
        sizes = _sizes(case)
        if sizes is None:
            return None
        full = np.flatnonzero(sizes > 0)
        k = full.size
        if np.array_equal(full, np.arange(k)):  # no empty bag before a non-empty one
            return None
        sums = np.zeros(want.shape)
        sums[:k] = want[full] * sizes[full, None]
        counts = np.zeros(len(sizes))
        counts[:k] = sizes[full]
        with np.errstate(divide="ignore", invalid="ignore"):
            return sums / sizes_of(sizes, counts)[:, None]

    return model


def _last_dropped(case, want):
    return want[:-1]


def _f_last_zero(case, want):
    """The last bag's row zero. Silent for a last bag of one id, where ids[offsets[-1]:-1] gives
    that zero row too (last-bag-size)."""
    sizes = _sizes(case)
    if sizes is None or sizes[-1] <= 1:
        return None
    out = np.array(want, dtype=np.float64)
    out[-1] = 0.0
    return out


def _f_last_truncated(over_true_size):
    """The last bag taken as ids[offsets[-1]:-1] (its last id left out): its row is the mean of
    the others, or (``over_true_size``) their sum over the true size. Silent for a last bag of
    fewer than 2 ids (one id left out of one is the row of zeros of last-bag-dropped)."""

    def model(case, want):
        sizes = _sizes(case)
        if sizes is None or sizes[-1] < 2:
            return None
        E, ids = np.asarray(case.args[0], dtype=np.float64), np.asarray(case.args[1])
        s = int(sizes[-1])
        out = np.array(want, dtype=np.float64)
        out[-1] = (out[-1] * s - E[ids[-1]]) / (s if over_true_size else s - 1)
        return out

    return model


def _fitted_last_count(case, got, want):
    """The count k the student's last bag sum was divided by, fitted from its result: every row
    but the last is right, the last is the last bag's sum over k (k = 0: inf or NaN). None where
    the result is not of that form, where k is not a whole number or is the true size, or where
    k = 1 reads as each bag's sum too (_f_ambiguous_last)."""
    sizes = _sizes(case)
    g, w = got.value, want.value
    if sizes is None or sizes.size == 0 or sizes[-1] == 0 or g is None or g.shape != w.shape:
        return None
    if g.ndim != 2 or not np.issubdtype(g.dtype, np.number):
        return None
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    if not close(g64[:-1], w64[:-1], dtype=w.dtype) or close(g64, w64, dtype=w.dtype):
        return None
    total = w64[-1] * float(sizes[-1])
    if not np.isfinite(g64[-1]).any() and np.any(total != 0):
        return 0
    norm = float(total @ total)
    if norm == 0 or not np.isfinite(g64[-1]).all():
        return None
    inv_k = float(g64[-1] @ total) / norm
    if abs(inv_k) < 1e-9 or not close(g64[-1], inv_k * total, dtype=w.dtype):
        return None
    k = 1.0 / inv_k
    if abs(k - round(k)) > 1e-3 * max(1.0, abs(k)) or round(k) == sizes[-1]:
        return None
    return None if round(k) == 1 and _f_ambiguous_last(case) else int(round(k))


def _with_fitted_last(judge, fit, mistake, detail):
    """``judge``, naming ``mistake`` wherever ``fit`` finds one wrong count k for the last bag
    alone; ``detail(case, said)`` ends the message, ``said`` being k as the message writes it."""

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        if not msg or got.error_type is not None or want.error_type is not None:
            return msg
        k = fit(case, got, want)
        if k is None:
            return msg
        return mistake.on(case, detail(case, k))

    return wrapped


def _said(k, number):
    return "0 (a 0/0 or x/0: inf or NaN)" if k == 0 else number


def with_last_count_fit(judge):
    """``judge``, naming last-bag-size wherever only the last bag's row is off, by its sum over
    one wrong whole count (fitted from the result, so every form is named: 1, 0, len(offsets) -
    offsets[-1], the size of the bag before it, ...)."""
    return _with_fitted_last(
        judge,
        _fitted_last_count,
        LAST_BAG_SIZE_FWD,
        lambda case, k: (
            f". Here the last bag has {int(_sizes(case)[-1])} ids, and its sum was "
            f"divided by {_said(k, str(k))}."
        ),
    )


LAST_BAG = (
    "the last bag was left out. It has no offset after it: it runs from offsets[-1] to the end "
    "of ids (position N = len(ids))"
)
WRONG_BAG = (
    "when some bags are empty: equal offsets mean empty bags, so position n belongs to the last "
    "bag b with offsets[b] <= n (an index that counts distinct bag starts skips the empty bags)"
)

LAST_BAG_DROPPED = Mistake("last-bag-dropped", f"{MEAN}: {LAST_BAG}", (_last_dropped, _f_last_zero))
LAST_BAG_SIZE_FWD = Mistake(
    "last-bag-size",
    f"{MEAN} got the last bag's mean wrong, every other bag right: the last bag runs from "
    "offsets[-1] to the end of ids, so its ids are ids[offsets[-1]:] (ids[offsets[-1]:-1] "
    "leaves out the last id) and its size is len(ids) - offsets[-1] (np.diff gives B - 1 sizes: "
    "append len(ids) to offsets first, np.diff(np.append(offsets, len(ids))))",
    (_f_last_truncated(False), _f_last_truncated(True)),
)
FWD_MISTAKES = [
    Mistake(
        "sum-not-mean",
        f"{MEAN} returned each bag's sum, not its mean: divide bag b's sum by the "
        "number of ids in bag b",
        _f_sum,
    ),
    Mistake(
        "divided-by-total",
        f"{MEAN} divided every bag's sum by the total number of ids N = len(ids); the "
        "mean of bag b divides by the size of bag b (offsets[b+1] - offsets[b], and "
        "N - offsets[-1] for the last bag)",
        _f_by_total,
    ),
    Mistake(
        "divided-by-distinct",
        f"{MEAN} divided each bag's sum by the number of distinct ids in it; the mean of bag b "
        "divides by the size of bag b, which counts a repeated id every time it occurs "
        "(np.unique drops the repeats)",
        _f_by_distinct,
    ),
    Mistake(
        "bag-as-set",
        f"{MEAN} averaged each bag's distinct ids (np.unique, or a set): a bag is a multiset, "
        "an id counts every time it occurs ([4, 1, 1] weighs row 1 twice: (E[4] + 2 E[1]) / 3)",
        _f_as_set,
    ),
    Mistake(
        "divided-by-bags",
        f"{MEAN} divided every bag's sum by the number of bags B = len(offsets) (or by the "
        "number of distinct ids in each bag, where that is B too); the mean of bag b divides by "
        "the size of bag b",
        _f_by_bags,
    ),
    Mistake(
        "empty-bag-nan",
        f"{MEAN} gave NaN (or inf) for an empty bag: a bag without ids divides 0 by 0. "
        "An empty bag must give a row of zeros, as torch does",
        _f_empty_nan,
    ),
    Mistake(
        "reduceat-empty-bag",
        f"{MEAN} gave an empty bag the values of the id after it. This is the "
        "np.add.reduceat pitfall: for equal offsets it returns the element at that offset, not 0. "
        "Set the rows of empty bags to zero yourself",
        _f_neighbour,
    ),
    LAST_BAG_SIZE_FWD,
    LAST_BAG_DROPPED,
    Mistake(
        "wrong-bag",
        f"{MEAN} put the bags' means in the wrong rows {WRONG_BAG}",
        _f_moved(lambda sizes, counts: np.maximum(counts, 1)),
    ),
    Mistake(
        "wrong-bag-sizes",
        f"{MEAN} put the bags' sums in the wrong rows {WRONG_BAG}; the rows after them get no "
        "ids, and dividing by the sizes of that wrong grouping gives 0 / 0 there",
        _f_moved(lambda sizes, counts: counts),
    ),
    Mistake(
        "wrong-bag-true-sizes",
        f"{MEAN} put the bags' sums in the wrong rows {WRONG_BAG}; dividing them by the "
        "sizes of the rows they landed in gives x / 0 in an empty bag's row",
        _f_moved(lambda sizes, counts: sizes),
    ),
]


# ------------------------------------------------------------------------------------------
# embedding_bag_backward: classic wrong answers, from the expected gradient
# ------------------------------------------------------------------------------------------
def _b_bags(case):
    """ids (N,), the bag of each position and the bag sizes (from meta), or None."""
    bag, sizes = _bag(case), _sizes(case)
    if bag is None or sizes is None:
        return None
    return np.asarray(case.args[0]).astype(np.int64), bag, sizes


def _bag_size_per_id(case, want):
    """(V, 1): the size of the bags each id occurs in (1 for ids that occur nowhere), or None
    when an id occurs in bags of different sizes (then no rescaling of its row gives the
    mistake)."""
    ids, bag, sizes = _b_bags(case)
    found: dict = {}
    for i, b in zip(ids.tolist(), bag.tolist(), strict=True):
        found.setdefault(i, set()).add(int(sizes[b]))
    if any(len(s) > 1 for s in found.values()):
        return None
    per_id = np.ones((want.shape[0], 1))
    for i, s in found.items():
        per_id[i] = s.pop()
    return per_id


def _b_rescaled(mode, factor):
    """The expected gradient with row v multiplied by factor(size of v's bags, N, B)."""

    def model(case, want):
        if _mode(case) != mode or _b_bags(case) is None:
            return None
        per_id = _bag_size_per_id(case, want)
        if per_id is None:
            return None
        n, b = np.asarray(case.args[0]).shape[0], len(case.args[1])
        scale = factor(per_id, n, b)
        return None if scale is None else want * scale

    return model


def _b_overwritten(case, want):
    """dE[ids] += rows with fancy indexing: an id that occurs k times in one bag keeps one of
    its k equal contributions, want[v] / k (None when a repeated id spans several bags)."""
    if _b_bags(case) is None:
        return None
    ids, bag, _ = _b_bags(case)
    if np.unique(ids).size == ids.size:
        return None
    out = np.array(want, dtype=np.float64)
    for v in np.unique(ids):
        where = ids == v
        if len(set(bag[where].tolist())) > 1:
            return None
        out[v] /= where.sum()
    return out


def _b_last_dropped(case, want):
    """The expected gradient without the last bag: the rows of the ids only it holds are zero,
    and an id that also occurs in another bag loses the last bag's share, its count there
    times grad_out[-1] (over the last bag's size, mode="mean"). None when the last bag is
    empty."""
    if _b_bags(case) is None:
        return None
    ids, bag, sizes = _b_bags(case)
    if sizes[-1] == 0:
        return None
    last = bag == len(sizes) - 1
    q_last = np.asarray(case.args[2], dtype=np.float64)[-1]
    share = q_last / sizes[-1] if _mode(case) == "mean" else q_last
    out = np.array(want, dtype=np.float64)
    for v in np.unique(ids[last]):
        if np.isin(v, ids[~last]):
            out[v] -= np.count_nonzero(ids[last] == v) * share
        else:
            out[v] = 0.0
    return out


def _b_last_sizes(case):
    """The sizes a wrong last bag size gives, for mode="mean": [(wrong sizes, true sizes)], one
    per modelled form whose last size differs from the true one: the last bag not divided (its
    size taken as 1: np.diff(offsets) padded with 1, or np.diff(offsets, append=offsets[-1])
    with the 0 made 1), and its size taken as len(ids) - offsets[-2] (the start of the bag
    before it)."""
    if _mode(case) != "mean" or _b_bags(case) is None:
        return []
    ids, _, sizes = _b_bags(case)
    offsets = np.asarray(case.args[1]).astype(np.int64)
    if sizes.size == 0 or sizes[-1] == 0:
        return []
    forms = [1]
    if offsets.size > 1:
        forms.append(ids.shape[0] - int(offsets[-2]))
    out = []
    for last in forms:
        if last != sizes[-1]:
            wrong = sizes.copy()
            wrong[-1] = last
            out.append(wrong)
    return out


def _ambiguous_last(case, want):
    """True where the last bag not divided is mode="sum" too (every other bag has at most one
    id): no message can tell grad-sum-not-mean from grad-last-bag-size there, so neither is
    named."""
    if _mode(case) != "mean" or _b_bags(case) is None:
        return False
    _, _, sizes = _b_bags(case)
    return sizes.size > 0 and sizes[-1] > 1 and bool(np.all(sizes[:-1] <= 1))


def _b_last_size(k):
    """The expected gradient with the last bag's ids given grad_out[-1] over the k-th wrong
    last size of _b_last_sizes instead of over the true one."""

    def model(case, want):
        forms = _b_last_sizes(case)
        if len(forms) <= k or _ambiguous_last(case, want):
            return None
        ids, bag, sizes = _b_bags(case)
        wrong = forms[k]
        last = bag == len(sizes) - 1
        q_last = np.asarray(case.args[2], dtype=np.float64)[-1]
        out = np.array(want, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            delta = q_last / max(int(wrong[-1]), 1) - q_last / sizes[-1]
        for v in np.unique(ids[last]):
            out[v] += np.count_nonzero(ids[last] == v) * delta
        return out

    return model


def _fitted_last_size(case, got, want):
    """The size k the student's gradient divided the last bag by, fitted from its result: only
    the rows of the last bag's ids are off, each by its count there times grad_out[-1] times one
    common factor 1/k - 1/size (k = 0: those rows are inf or NaN; a negative k flips the sign).
    None where the result is not of that form, where k is the true size, where the last bag is
    dropped (1/k = 0: grad-last-bag-dropped) or where k = 1 reads as mode="sum" too."""
    if _mode(case) != "mean" or _b_bags(case) is None or got.value is None:
        return None
    ids, bag, sizes = _b_bags(case)
    g, w = got.value, want.value
    if sizes.size == 0 or sizes[-1] == 0 or g.shape != w.shape or g.ndim != 2:
        return None
    if not np.issubdtype(g.dtype, np.number):
        return None
    counts = np.bincount(ids[bag == len(sizes) - 1], minlength=w.shape[0]).astype(np.float64)
    rows = counts > 0
    q = np.asarray(case.args[2], dtype=np.float64)[-1]
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    if not rows.any() or not close(g64[~rows], w64[~rows], dtype=w.dtype):
        return None
    if not np.isfinite(g64[rows]).any():
        return 0.0
    if not np.isfinite(g64[rows]).all():
        return None
    direction = counts[:, None] * q[None, :]
    norm = float((direction[rows] ** 2).sum())
    if norm == 0:
        return None
    step = float(((g64 - w64)[rows] * direction[rows]).sum()) / norm
    inv_k = step + 1.0 / float(sizes[-1])
    pred = w64 + step * direction
    if close(g64, w64, dtype=w.dtype) or not close(g64, pred, dtype=w.dtype):
        return None
    if abs(inv_k) < 1e-9 or (_ambiguous_last(case, want) and abs(inv_k - 1.0) < 1e-6):
        return None
    return 1.0 / inv_k


def with_last_size_fit(judge):
    """``judge``, naming grad-last-bag-size wherever only the last bag's ids are off by one
    common wrong divisor (fitted from the result, so every form of the wrong last size is
    named: 1, len(offsets) - offsets[-1], 0, the size of the bag before it, ...)."""
    return _with_fitted_last(
        judge,
        _fitted_last_size,
        LAST_BAG_SIZE,
        lambda case, k: (
            f". Here the last bag's size is {int(_sizes(case)[-1])}, and it was "
            f"divided by {_said(k, f'{k:.4g}')}."
        ),
    )


def _not_if_ambiguous(model):
    def wrapped(case, want):
        return None if _ambiguous_last(case, want) else model(case, want)

    wrapped.__doc__ = model.__doc__
    return wrapped


def _b_empty_nan(case, want):
    """The count matrix divided by bag sizes: an empty bag's 0/0 spreads NaN into every row."""
    sizes = _sizes(case)
    if _mode(case) != "mean" or sizes is None or not np.any(sizes == 0):
        return None
    return np.full(want.shape, np.nan)


def _b_moved(true_sizes):
    """A bag index that skips empty bags: the ids of bag b receive grad_out[to] of the bag
    ``to`` that index gives them. For an id that occurs in bag b alone, the expected row is a
    multiple of grad_out[b]; the mistake has the same multiple of grad_out[to] (None when an id
    of a moved bag occurs elsewhere, or grad_out[b] is zero). With ``true_sizes``, mode="mean"
    also divides by the size of bag ``to`` instead of bag b."""

    def model(case, want):
        if _b_bags(case) is None or (true_sizes and _mode(case) != "mean"):
            return None
        ids, bag, sizes = _b_bags(case)
        q = np.asarray(case.args[2], dtype=np.float64)
        to = index_skipping_empty(case.args[1])
        moved = [b for b in range(len(sizes)) if sizes[b] > 0 and to[b] != b]
        if not moved:
            return None
        out = np.array(want, dtype=np.float64)
        for b in moved:
            mine = np.unique(ids[bag == b])
            norm = float(q[b] @ q[b])
            if norm == 0 or np.isin(mine, ids[bag != b]).any():
                return None
            with np.errstate(divide="ignore", invalid="ignore"):
                factor = sizes[b] / np.float64(sizes[to[b]]) if true_sizes else 1.0
                for v in mine:
                    out[v] = (want[v] @ q[b] / norm) * factor * q[to[b]]
        return out

    return model


def _b_short(case, want):
    """One row per id up to the largest id that occurs, instead of V rows."""
    ids = np.asarray(case.args[0])
    top = int(ids.max()) + 1 if ids.size else 0  # no ids: no rows at all
    return None if top >= want.shape[0] else want[:top]


SHORT_GRADIENT = Mistake(
    "grad-short",
    f"{BWD} returned one row per id up to the largest id in ids; the gradient "
    "has one row for every row of the table, V rows (rows no bag uses are zeros)",
    _b_short,
)


def _b_distinct_share(case, want):
    """mode="mean", a bag's distinct ids sharing its gradient (G[np.unique(bag)] +=
    grad_out[b] / n_b, n_b of them): an id that occurs c times in bag b alone gets want[v] *
    size_b / (c n_b). None where an id occurs in several bags or no bag repeats one (the
    hidden checks recompute the other cases from the bags); the set's other form, each distinct
    id once over the bag size, is grad-overwritten's answer where this model works."""
    if _mode(case) != "mean" or not repeats_in_one_bag(case):
        return None
    ids, bag, sizes = _b_bags(case)
    out = np.array(want, dtype=np.float64)
    for v in np.unique(ids):
        b = int(bag[ids == v][0])
        mine = ids[bag == b]
        if np.unique(bag[ids == v]).size > 1:
            return None
        out[v] *= sizes[b] / (np.count_nonzero(mine == v) * np.unique(mine).size)
    return out


# Where every repeated id stays in one bag, its other form (each distinct id once, over the bag
# size) is also grad-overwritten's answer: the judges name neither there (with_set_or_overwritten).
BAG_AS_SET = Mistake(
    "grad-bag-as-set",
    f"{BWD} treated a bag as a set: an id that occurs k times in a bag got the bag's gradient "
    "once (set(), np.unique, or dE[ids[s:e]] += ... per bag, chapter 3's fancy-indexing trap "
    "inside a bag). A bag is a multiset: the id gets it k times ([4, 1, 1] gives row 1 twice "
    "grad_out[b] / 3 with mean pooling)",
    _b_distinct_share,
)
LAST_BAG_SIZE = Mistake(
    "grad-last-bag-size",
    f'{BWD} with mode="mean" divided the last bag\'s gradient by a wrong size: the last bag '
    "runs from offsets[-1] to the end of ids, so its size is len(ids) - offsets[-1] (np.diff "
    "gives B - 1 sizes: append len(ids) to offsets first, np.diff(np.append(offsets, len(ids))))",
    (_b_last_size(0), _b_last_size(1)),
)
BWD_MISTAKES = [
    SHORT_GRADIENT,
    LAST_BAG_SIZE,  # before grad-sum-not-mean: only the last bag's ids are off
    Mistake(
        "grad-sum-not-mean",
        f'{BWD} with mode="mean" gave each id its bag\'s whole gradient, as for '
        'mode="sum": with mean pooling each id receives its bag\'s gradient divided by the bag size',
        _not_if_ambiguous(_b_rescaled("mean", lambda s, n, b: s)),
    ),
    Mistake(
        "grad-mean-not-sum",
        f'{BWD} with mode="sum" divided by the bag size, as for mode="mean": '
        "with sum pooling each id receives its bag's whole gradient",
        _b_rescaled("sum", lambda s, n, b: 1.0 / s),
    ),
    Mistake(
        "grad-divided-by-total",
        f"{BWD} divided by the total number of ids N = len(ids); with mean pooling "
        "an id in bag b receives grad_out[b] divided by the size of bag b",
        _b_rescaled("mean", lambda s, n, b: s / n if n > 1 else None),
    ),
    Mistake(
        "grad-divided-by-bags",
        f"{BWD} divided by the number of bags B = len(offsets); with mean pooling "
        "an id in bag b receives grad_out[b] divided by the size of bag b",
        _b_rescaled("mean", lambda s, n, b: s / b if b > 1 else None),
    ),
    Mistake(
        "grad-overwritten",
        f"{BWD} kept only one contribution for a repeated id: dE[ids] += rows with "
        "repeated ids writes each row once (the last write wins), chapter 3's fancy-indexing "
        "trap. Every occurrence must add up: use np.add.at or a loop",
        _b_overwritten,
    ),
    BAG_AS_SET,
    Mistake(
        "grad-empty-bag-nan",
        f"{BWD} returned NaN: an empty bag's size is 0, and 0/0 spread into the "
        "result. An empty bag has no ids, so it contributes nothing",
        _b_empty_nan,
    ),
    Mistake("grad-wrong-bag", f"{BWD} credited ids to the wrong bag {WRONG_BAG}", _b_moved(False)),
    Mistake(
        "grad-wrong-bag-sizes",
        f"{BWD} credited ids to the wrong bag {WRONG_BAG}; the sizes looked up with that wrong "
        "bag are those of other bags (0 for an empty one: x / 0)",
        _b_moved(True),
    ),
    Mistake("grad-last-bag-dropped", f"{BWD}: {LAST_BAG}", _b_last_dropped),
]
REDUCEAT_LAST = Mistake(
    "reduceat-empty-last-bag",
    "np.add.reduceat rejects an offset equal to len(ids) (an empty last bag)",
)
MODE_NOT_CHECKED = Mistake("mode-not-checked", "an unknown mode did not raise ValueError")
FLOAT32_DRIFT = Mistake(
    "float32-drift",
    "too many float32 roundings: a float32 running sum over all the bags (np.cumsum, then differences "
    "at the offsets) makes the sum of a short bag after a long one the difference of two large "
    "float32 numbers, and the digits it needs are lost. Sum each bag's rows on its own, or "
    "accumulate in float64 and convert the means back to E's dtype",
)
# Every mistake this chapter recognises (judges.COMMON besides): ids unique within the chapter.
MISTAKES = [*FWD_MISTAKES, *BWD_MISTAKES, REDUCEAT_LAST, MODE_NOT_CHECKED, FLOAT32_DRIFT]


# ------------------------------------------------------------------------------------------
# Judges
# ------------------------------------------------------------------------------------------
def with_reduceat_hint(judge, fname, ids_at, offsets_at):
    """An IndexError on a case with an empty last bag is the other np.add.reduceat pitfall."""

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        ids, offsets = np.asarray(case.args[ids_at]), np.asarray(case.args[offsets_at])
        trailing_empty = offsets.size > 0 and offsets[-1] == ids.shape[0]
        if msg and got.error_type == "IndexError" and trailing_empty:
            msg = REDUCEAT_LAST.said(
                msg.rstrip(". ")
                + ". Here the last offset equals len(ids), which makes the last bag empty; "
                f"np.add.reduceat rejects such an offset, so {fname} must handle empty bags itself."
            )
        return msg

    return wrapped


def mode_judge(case, got, want):
    if got.error_type == "NotImplementedError":
        return NOT_IMPLEMENTED.said(
            f"{BWD} raised NotImplementedError for {case.label}; an unknown mode "
            "must raise ValueError (if this is still the stub, replace it with your code)."
        )
    problem = common_problems(case, got, want, BWD)
    if problem and mistake_id(problem) == "no-error":
        return MODE_NOT_CHECKED.said(str(problem))
    return problem


def with_drift_hint(judge):
    """Means of a float32 (or float16) table that are wrong, but within 1% everywhere: the
    rounding of a float32 accumulation that grows with the number of ids (no model needed)."""

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        if not msg or mistake_id(msg) or want.error_type is not None or got.value is None:
            return msg
        w = want.value
        if w.dtype.itemsize <= 4 and got.value.shape == w.shape and close(got.value, w, tol=DRIFT):
            rows = differing_rows(got.value, w, w.dtype)
            return FLOAT32_DRIFT.said(
                f"{MEAN}'s means are within 1% but not within {w.dtype} accuracy for {case.label} "
                f"({_bags_named(case, rows)}): {FLOAT32_DRIFT.message}."
            )
        return msg

    return wrapped


def _bags_named(case, rows, most=3):
    """Bags by their size and the longest bag before them ("the 3-id bag after the 20,000-id
    bag, bag 1"), from meta["sizes"] (the bag numbers alone without it)."""
    sizes = _sizes(case)
    if sizes is None:
        return f"bags {rows}"
    names = []
    for b in rows[:most]:
        longest = int(sizes[:b].max()) if b else 0
        after = f" after the {longest:,}-id bag" if longest > sizes[b] else ""
        names.append(f"the {int(sizes[b]):,}-id bag{after}, bag {b}")
    more = len(rows) - most
    return "; ".join(names) + (f"; and {more} more bag{'s' * (more > 1)}" if more > 0 else "")


DRIFT = (1e-2, 1e-2)  # "within 1%": far from every modelled mistake, far above float32 rounding
mean_judge = with_last_count_fit(
    with_drift_hint(
        with_reduceat_hint(array_judge(MEAN, mistakes=FWD_MISTAKES, row_word="bag"), MEAN, 1, 2)
    )
)


def excusing(judge, excused, fname=MEAN, unnamed=()):
    """``judge`` for a cell that grades one property (shape, empty bags, dtype), not a mistake
    another cell names: where the student's values are a mistake of ``excused`` (its model, on
    this case), that cell has charged it, so this one checks only the dtype (the expected one).
    ``unnamed``: models of excused mistakes that the judge leaves unnamed on some cases (two
    mistakes give the same answer there); a value one of them predicts is excused too."""
    names = {m.name for m in excused}

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        if not msg or (mistake_id(msg) not in names and not _predicted(case, got, want, unnamed)):
            return msg
        g, w = got.value, want.value
        if g.dtype != w.dtype:
            return WRONG_DTYPE.said(
                f"{fname} returned {g.dtype} for {case.label}; expected {w.dtype}. "
                + dtype_advice(g.dtype, w.dtype)
            )
        return None

    return wrapped


def _predicted(case, got, want, models) -> bool:
    """Does one of ``models`` predict the student's value on this case?"""
    if _no_value(got, want):
        return False
    for model in models:
        alt = model(case, want.value)
        if (
            alt is not None
            and np.shape(alt) == got.value.shape
            and close(got.value, alt, want.value.dtype)
        ):
            return True
    return False


def _no_value(got, want) -> bool:
    """True where there is no value to compare (an error, or no single array)."""
    return got.error_type is not None or want.error_type is not None or got.value is None


# The mean's divide (graded by the values cell) and its empty bags (graded by the empty-bags
# cell): each costs its own cell only.
DIVIDE_MISTAKES = [
    m
    for m in FWD_MISTAKES
    if m.name
    in {"sum-not-mean", "divided-by-total", "divided-by-distinct", "bag-as-set", "divided-by-bags"}
]
EMPTY_MISTAKES = [
    m
    for m in FWD_MISTAKES
    if m.name
    in {
        "empty-bag-nan",
        "reduceat-empty-bag",
        "wrong-bag",
        "wrong-bag-sizes",
        "wrong-bag-true-sizes",
    }
]
# The last bag left out or of the wrong size is graded by the values cell (its docstring: the last
# bag runs to the end of ids), whether the row is missing, zero or off: the other mean cells
# excuse it.
LAST_MISTAKES = [LAST_BAG_DROPPED, LAST_BAG_SIZE_FWD]
# Where only the last bag has two ids or more, each bag's sum is also the last bag's size taken as
# 1: named neither, but both are the values cell's, so the other cells excuse that answer too.
mean_empty_judge = excusing(mean_judge, DIVIDE_MISTAKES + LAST_MISTAKES, unnamed=(_f_sums,))
mean_dtype_judge = excusing(
    mean_judge, DIVIDE_MISTAKES + EMPTY_MISTAKES + LAST_MISTAKES, unnamed=(_f_sums,)
)
mean_shape_judge = excusing(
    with_reduceat_hint(shape_judge(MEAN, [LAST_BAG_DROPPED]), MEAN, 1, 2), [LAST_BAG_DROPPED]
)


def repeats_in_one_bag(case) -> bool:
    """True where some id repeats and every repeated id stays in one bag (meta["bag"]): there a
    bag treated as a set and dE[ids] += rows give the same answer."""
    if _b_bags(case) is None:
        return False
    ids, bag, _ = _b_bags(case)
    v, counts = np.unique(ids, return_counts=True)
    return bool(np.any(counts > 1)) and all(
        np.unique(bag[ids == i]).size == 1 for i in v[counts > 1]
    )


def either_repeat_mistake(case, said: str) -> str:
    """The message for a case that two mistakes explain alike (named neither: the cell's other
    cases tell them apart): ``said``, one of them, and a bag treated as a set."""
    return (
        f"{BWD} returned wrong values for {case.label} that two mistakes give alike here: "
        f"{said.split(' (for ')[0]}; or {BAG_AS_SET.message}."
    )


def with_set_or_overwritten(judge):
    """``judge``, naming neither grad-overwritten nor grad-bag-as-set where every repeated id
    stays in one bag (both give that answer there)."""

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        if mistake_id(msg) == "grad-overwritten" and repeats_in_one_bag(case):
            return either_repeat_mistake(case, str(msg))
        return msg

    return wrapped


def mean_companion(case):
    """The student's mode="mean" answer on a sum case's bags (charged_in_mean), asked where the
    case carries what mode="mean" gives there (meta["mean_expected"])."""
    if "mean_expected" not in case.meta:
        return None
    ids, offsets, grad_out, V = case.args
    return (BWD, [(ids, offsets, grad_out, V, "mean")], True)


def _off_in_rows_only(got, want, rows) -> bool:
    """``got`` is wrong, but only in ``rows`` (a mask over the rows)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want)
    if got.shape != want.shape or close(got, want, dtype=want.dtype):
        return False
    return bool(close(got[~rows], want[~rows], dtype=want.dtype))


def _repeat_rows(case, V):
    """(V,) mask: the ids that occur more than once, and every id of a bag that repeats one
    (the rows a repeated id counted once can change: a bag's distinct ids sharing its gradient
    moves the others' too)."""
    ids, bag, _ = _b_bags(case)
    rows = np.zeros(V, dtype=bool)
    v, counts = np.unique(ids, return_counts=True)
    rows[v[(counts > 1) & (v < V)]] = True
    for b in np.unique(bag):
        mine = ids[bag == b]
        if np.unique(mine).size < mine.size:
            rows[mine[mine < V]] = True
    return rows


def charged_in_mean(judge):
    """The sum cell's ``judge``: an answer wrong only in the rows a repeated id counted once can
    change (_repeat_rows: one contribution kept, a bag as a set), whose mode="mean" answer on
    the same bags (its companion call, against meta["mean_expected"]) is wrong only there too, is the mean cell's
    mistake, whose cases repeat ids as well: this cell checks only its dtype. Repeats mishandled
    in mode="sum" alone still cost this cell."""

    def wrapped(case, got, want):
        msg = judge(case, got, want)
        mean_want = case.meta.get("mean_expected")
        if not msg or mean_want is None or got.error_type or got.value is None:
            return msg
        whole = (got.companion or [None])[0]
        if not whole or _b_bags(case) is None:
            return msg
        _, _, shape, flat = whole[0]
        mean_got = np.asarray(flat, dtype=np.float64).reshape(shape)
        rows = _repeat_rows(case, want.value.shape[0])
        if not (
            _off_in_rows_only(got.value, want.value, rows)
            and _off_in_rows_only(mean_got, mean_want, rows)
        ):
            return msg
        if got.value.dtype != want.value.dtype:
            return WRONG_DTYPE.said(
                f"{BWD} returned {got.value.dtype} for {case.label}; expected {want.value.dtype}. "
                + dtype_advice(got.value.dtype, want.value.dtype)
            )
        return None

    return wrapped


backward_judge = with_set_or_overwritten(
    with_last_size_fit(with_reduceat_hint(array_judge(BWD, mistakes=BWD_MISTAKES), BWD, 0, 1))
)
backward_shape_judge = with_reduceat_hint(shape_judge(BWD, [SHORT_GRADIENT]), BWD, 0, 1)

# The backward's divide is graded by the mean cell (mode="mean") or the sum cell (mode="sum"),
# the last bag by the mean cell: the other value cells excuse them (by id, so the hidden models
# of the same mistakes are excused too).
BWD_DIVIDE_MISTAKES = [
    m
    for m in BWD_MISTAKES
    if m.name
    in {"grad-sum-not-mean", "grad-mean-not-sum", "grad-divided-by-total", "grad-divided-by-bags"}
]
BWD_LAST_MISTAKES = [
    m for m in BWD_MISTAKES if m.name in {"grad-last-bag-dropped", "grad-last-bag-size"}
]


def backward_cell_judges(judge):
    """The sum, empty-bags and dtype cells' judges from the mean cell's ``judge``. The sum cell
    excuses nothing: a last bag dropped in sum mode only would otherwise lose no point (the mean
    cell sees mean mode only), so a last bag dropped in both modes costs the mean and sum cells."""
    return {
        "sum": charged_in_mean(judge),
        "empty": excusing(judge, BWD_DIVIDE_MISTAKES + BWD_LAST_MISTAKES, BWD),
        "dtype": excusing(judge, BWD_DIVIDE_MISTAKES + BWD_LAST_MISTAKES, BWD),
    }


_BWD_CELLS = backward_cell_judges(backward_judge)

JUDGES = {
    MEAN: mean_judge,
    f"{MEAN}:shape": mean_shape_judge,
    f"{MEAN}:empty": mean_empty_judge,
    f"{MEAN}:dtype": mean_dtype_judge,
    BWD: backward_judge,
    **{f"{BWD}:{cell}": judge for cell, judge in _BWD_CELLS.items()},
    f"{BWD}:shape": backward_shape_judge,
    f"{BWD}:mode": mode_judge,
}
expect = make_expect(JUDGES, MISTAKES, companions={f"{BWD}:sum": mean_companion})
