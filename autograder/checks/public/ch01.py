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


FWD_MISTAKES = [
    Mistake(
        "flattened",
        "embedding_forward lost the shape of ids: it returned one row per id in a flat list. "
        "The result must have shape ids.shape + (d,): keep ids' shape (no reshape(-1) or ravel) "
        "or reshape back",
        _flattened,
    ),
    Mistake(
        "off_by_one",
        "embedding_forward picked the row before the right one: ids are 0-based row numbers, "
        "id i is row i",
        _shifted,
    ),
]

forward_judge = array_judge(FWD, mistakes=FWD_MISTAKES)
shape_only_judge = shape_judge(FWD, FWD_MISTAKES[:1])
one_hot_judge = array_judge("one_hot", row_word="position")

JUDGES = {FWD: forward_judge, f"{FWD}:shape": shape_only_judge, "one_hot": one_hot_judge}
expect = make_expect(JUDGES)
