"""Chapter 1's public judges and mistake models (pasted into the released notebook).

Every mistake is modelled from the case and the expected value, never from the reference: no
lookup of the table by the ids happens here.
"""

from __future__ import annotations

import numpy as np

from ..judges import Mistake, array_judge, shape_judge
from ..visible import make_expect

FWD = "embedding_forward"


# ------------------------------------------------------------------------------------------
# Classic wrong answers, each modelled from the case and the expected value
# ------------------------------------------------------------------------------------------
def _flattened(case, want):
    """One row per id in a flat list: the expected rows with the shape of ids lost."""
    E, ids = case.args
    return want.reshape(-1, np.shape(E)[1]) if np.ndim(ids) != 1 else None


def _shifted(case, want):
    """Every expected row replaced by the table row just before it (id i read as row i - 1; id 0
    wraps around to the last row, as E[-1] does). Needs distinct table rows to tell them apart."""
    E = np.asarray(case.args[0])
    if want.size == 0 or E.ndim != 2:
        return None
    before = {E[v].tobytes(): E[v - 1] for v in range(E.shape[0])}
    if len(before) < E.shape[0]:
        return None
    rows = want.reshape(-1, E.shape[1])
    if any(r.tobytes() not in before for r in rows):
        return None
    return np.array([before[r.tobytes()] for r in rows]).reshape(want.shape)


def _one_hot_flat(case, want):
    """One one-hot row per id in a flat list: the expected rows with the shape of ids lost."""
    ids, V = case.args
    return want.reshape(-1, V) if np.ndim(ids) != 1 else None


FLATTENED = Mistake(
    "flattened",
    "embedding_forward lost the shape of ids: it returned one row per id in a flat list. "
    "The result must have shape ids.shape + (d,): keep ids' shape (no reshape(-1) or ravel) "
    "or reshape back",
    _flattened,
)
OFF_BY_ONE = Mistake(
    "off-by-one",
    "embedding_forward picked the row before the right one: ids are 0-based row numbers, "
    "id i is row i",
    _shifted,
)
ONE_HOT_FLAT = Mistake(
    "one-hot-flattened",
    "one_hot lost the shape of ids: it returned one row per id in a flat list, shape "
    "(ids.size, V). The result must have shape ids.shape + (V,): for ids of shape (B, T), "
    "(B, T, V)",
    _one_hot_flat,
)
# The dtype sentence for one_hot, whose dtype is not its input's (ids are integers).
ONE_HOT_DTYPE = (
    "one_hot returns float64 whatever the dtype of ids: comparisons give booleans and "
    "np.zeros(..., dtype=int) or counting give integers, so build the result in float64 "
    "(np.zeros(shape), np.eye(V)) or convert it with .astype(np.float64)."
)

FWD_MISTAKES = [FLATTENED, OFF_BY_ONE]
# Every mistake this chapter recognises (judges.COMMON besides): ids unique within the chapter.
MISTAKES = [*FWD_MISTAKES, ONE_HOT_FLAT]

forward_judge = array_judge(FWD, mistakes=FWD_MISTAKES)
shape_only_judge = shape_judge(FWD, [FLATTENED])
one_hot_judge = array_judge(
    "one_hot", row_word="position", mistakes=[ONE_HOT_FLAT], dtype_hint=ONE_HOT_DTYPE
)

JUDGES = {FWD: forward_judge, f"{FWD}:shape": shape_only_judge, "one_hot": one_hot_judge}
expect = make_expect(JUDGES, MISTAKES)
