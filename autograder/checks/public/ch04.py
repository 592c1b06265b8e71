"""Chapter 4's public judges and mistake models (pasted into the released notebook).

Every mistake is modelled from the case and the expected value, never from the reference and
never by pooling or scattering the bags from scratch: a forward mistake rescales the expected
means, a backward mistake rescales the expected gradient's rows (where the bags make that
possible, else the model stays silent) or corrects the few positions the mistake gets wrong.
"""

from __future__ import annotations

import numpy as np

from ..judges import Mistake, array_judge, common_problems, shape_judge
from ..visible import make_expect

MEAN = "embedding_bag_mean"
BWD = "embedding_bag_backward"


# ------------------------------------------------------------------------------------------
# The layout of a case
# ------------------------------------------------------------------------------------------
def _layout(ids, offsets):
    """ids (N,), sizes (B,), bag (N,): position n lies in the last bag starting at or before n."""
    ids = np.asarray(ids).astype(np.int64)
    offsets = np.asarray(offsets).astype(np.int64)
    sizes = np.append(offsets[1:], ids.shape[0]) - offsets
    bag = np.searchsorted(offsets, np.arange(ids.shape[0]), side="right") - 1
    return ids, sizes, bag


def _mode(case):
    return case.kwargs.get("mode", "mean")


# ------------------------------------------------------------------------------------------
# embedding_bag_mean: classic wrong answers, from the expected means
# ------------------------------------------------------------------------------------------
def _f_sizes(case):
    _, ids, offsets = case.args
    return _layout(ids, offsets)[1]


def _f_sum(case, want):
    """Each bag's sum: its mean times its size."""
    return want * _f_sizes(case)[:, None]


def _f_by_total(case, want):
    n = np.asarray(case.args[1]).shape[0]
    return want * _f_sizes(case)[:, None] / n if n > 1 else None


def _f_by_bags(case, want):
    b = len(case.args[2])
    return want * _f_sizes(case)[:, None] / b if b > 1 else None


def _f_empty_nan(case, want):
    sizes = _f_sizes(case)
    if not np.any(sizes == 0):
        return None
    out = np.array(want, dtype=np.float64)
    out[sizes == 0] = np.nan
    return out


def _f_neighbour(case, want):
    """np.add.reduceat: an empty bag (offsets[b] == offsets[b+1]) gets the row of the id at
    position offsets[b] (the first id of a later bag) instead of zeros."""
    E, ids, offsets = case.args
    ids, sizes, _ = _layout(ids, offsets)
    empty = np.flatnonzero(sizes == 0)
    if len(empty) == 0:
        return None
    out = np.array(want, dtype=np.float64)
    for b in empty:
        start = int(offsets[b])
        out[b] = E[ids[start]] if start < ids.shape[0] else 0.0
    return out


def _last_dropped(case, want):
    return want[:-1]


def _f_last_zero(case, want):
    if _f_sizes(case)[-1] == 0:
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
        f"{MEAN} returned each bag's sum, not its mean: divide bag b's sum by the "
        "number of ids in bag b",
        _f_sum,
    ),
    Mistake(
        "divided_by_total",
        f"{MEAN} divided every bag's sum by the total number of ids N = len(ids); the "
        "mean of bag b divides by the size of bag b (offsets[b+1] - offsets[b], and "
        "N - offsets[-1] for the last bag)",
        _f_by_total,
    ),
    Mistake(
        "divided_by_bags",
        f"{MEAN} divided every bag's sum by the number of bags B = len(offsets); the "
        "mean of bag b divides by the size of bag b",
        _f_by_bags,
    ),
    Mistake(
        "empty_nan",
        f"{MEAN} gave NaN (or inf) for an empty bag: a bag without ids divides 0 by 0. "
        "An empty bag must give a row of zeros, as torch does",
        _f_empty_nan,
    ),
    Mistake(
        "empty_neighbour",
        f"{MEAN} gave an empty bag the values of the id after it. This is the "
        "np.add.reduceat pitfall: for equal offsets it returns the element at that offset, not 0. "
        "Set the rows of empty bags to zero yourself",
        _f_neighbour,
    ),
    Mistake("last_bag_dropped", f"{MEAN}: {LAST_BAG}", _last_dropped),
    Mistake("last_bag_zero", f"{MEAN}: {LAST_BAG}", _f_last_zero),
]


# ------------------------------------------------------------------------------------------
# embedding_bag_backward: classic wrong answers, from the expected gradient
# ------------------------------------------------------------------------------------------
def _b_layout(case):
    ids, offsets, grad_out, _ = case.args
    ids, sizes, bag = _layout(ids, offsets)
    return ids, sizes, bag, np.asarray(grad_out, dtype=np.float64)


def _bag_size_per_id(case, want):
    """(V, 1): the size of the bags each id occurs in (1 for ids that occur nowhere), or None
    when an id occurs in bags of different sizes (then no rescaling of its row gives the
    mistake)."""
    ids, sizes, bag, _ = _b_layout(case)
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
        if _mode(case) != mode:
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
    ids, _, bag, _ = _b_layout(case)
    if np.unique(ids).size == ids.size:
        return None
    out = np.array(want, dtype=np.float64)
    for v in np.unique(ids):
        where = ids == v
        if len(set(bag[where].tolist())) > 1:
            return None
        out[v] /= where.sum()
    return out


def _scale(case, sizes):
    """(B,): what each bag's gradient is multiplied by at each of its positions."""
    if _mode(case) == "mean":
        return 1.0 / np.maximum(sizes, 1)
    return np.ones(len(sizes))


def _b_last_dropped(case, want):
    """The expected gradient without the last bag's contributions."""
    ids, sizes, bag, q = _b_layout(case)
    if sizes[-1] == 0:
        return None
    out = np.array(want, dtype=np.float64)
    last = _scale(case, sizes)[-1] * q[-1]
    for n in np.flatnonzero(bag == len(sizes) - 1):
        out[ids[n]] -= last
    return out


def _b_empty_nan(case, want):
    """The count matrix divided by bag sizes: an empty bag's 0/0 spreads NaN into every row."""
    _, sizes, _, _ = _b_layout(case)
    if _mode(case) != "mean" or not np.any(sizes == 0):
        return None
    return np.full(want.shape, np.nan)


def _b_wrong_bag(case, want):
    """A bag index counting distinct bag starts: after empty bags, positions land in an earlier
    bag. The expected gradient, corrected at those positions."""
    ids, sizes, bag, q = _b_layout(case)
    n = ids.shape[0]
    if not np.any(sizes == 0) or n == 0:
        return None
    wrong = np.maximum(np.cumsum(np.isin(np.arange(n), np.asarray(case.args[1]))) - 1, 0)
    scale = _scale(case, sizes)
    out = np.array(want, dtype=np.float64)
    for p in np.flatnonzero(wrong != bag):
        out[ids[p]] += (q[wrong[p]] - q[bag[p]]) * scale[bag[p]]
    return out


def _b_short(case, want):
    """One row per id up to the largest id that occurs, instead of V rows."""
    ids = np.asarray(case.args[0])
    if ids.size == 0 or ids.max() + 1 >= want.shape[0]:
        return None
    return want[: ids.max() + 1]


BWD_MISTAKES = [
    Mistake(
        "short_gradient",
        f"{BWD} returned one row per id up to the largest id in ids; the gradient "
        "has one row for every row of the table, V rows (rows no bag uses are zeros)",
        _b_short,
    ),
    Mistake(
        "sum_for_mean",
        f'{BWD} with mode="mean" gave each id its bag\'s whole gradient, as for '
        'mode="sum": with mean pooling each id receives its bag\'s gradient divided by the bag size',
        _b_rescaled("mean", lambda s, n, b: s),
    ),
    Mistake(
        "mean_for_sum",
        f'{BWD} with mode="sum" divided by the bag size, as for mode="mean": '
        "with sum pooling each id receives its bag's whole gradient",
        _b_rescaled("sum", lambda s, n, b: 1.0 / s),
    ),
    Mistake(
        "divided_by_total",
        f"{BWD} divided by the total number of ids N = len(ids); with mean pooling "
        "an id in bag b receives grad_out[b] divided by the size of bag b",
        _b_rescaled("mean", lambda s, n, b: s / n if n > 1 else None),
    ),
    Mistake(
        "divided_by_bags",
        f"{BWD} divided by the number of bags B = len(offsets); with mean pooling "
        "an id in bag b receives grad_out[b] divided by the size of bag b",
        _b_rescaled("mean", lambda s, n, b: s / b if b > 1 else None),
    ),
    Mistake(
        "overwritten",
        f"{BWD} kept only one contribution for a repeated id: dE[ids] += rows with "
        "repeated ids writes each row once (the last write wins). Every occurrence must add up: "
        "use np.add.at or a loop",
        _b_overwritten,
    ),
    Mistake(
        "empty_nan",
        f"{BWD} returned NaN: an empty bag's size is 0, and 0/0 spread into the "
        "result. An empty bag has no ids, so it contributes nothing",
        _b_empty_nan,
    ),
    Mistake(
        "wrong_bag",
        f"{BWD} credited ids to the wrong bag when some bags are empty: equal "
        "offsets mean empty bags, so position n belongs to the last bag b with offsets[b] <= n",
        _b_wrong_bag,
    ),
    Mistake("last_bag_dropped", f"{BWD}: {LAST_BAG}", _b_last_dropped),
]


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
            msg = msg.rstrip(". ") + (
                f". Here the last offset equals len(ids), which makes the last bag empty; "
                f"np.add.reduceat rejects such an offset, so {fname} must handle empty bags itself."
            )
        return msg

    return wrapped


def mode_judge(case, got, want):
    if got.error_type == "NotImplementedError":
        return (
            f"{BWD} raised NotImplementedError for {case.label}; an unknown mode "
            "must raise ValueError (if this is still the stub, replace it with your code)."
        )
    return common_problems(case, got, want, BWD)


mean_judge = with_reduceat_hint(
    array_judge(MEAN, mistakes=FWD_MISTAKES, row_word="bag"), MEAN, 1, 2
)
mean_shape_judge = with_reduceat_hint(shape_judge(MEAN, FWD_MISTAKES[-2:-1]), MEAN, 1, 2)
backward_judge = with_reduceat_hint(array_judge(BWD, mistakes=BWD_MISTAKES), BWD, 0, 1)
backward_shape_judge = with_reduceat_hint(shape_judge(BWD, BWD_MISTAKES[:1]), BWD, 0, 1)

JUDGES = {
    MEAN: mean_judge,
    f"{MEAN}:shape": mean_shape_judge,
    BWD: backward_judge,
    f"{BWD}:shape": backward_shape_judge,
    f"{BWD}:mode": mode_judge,
}
expect = make_expect(JUDGES)
