"""Chapter 1's public judges and mistake models (pasted into the released notebook).

Every mistake is modelled from the case and the expected value, never from the reference: no
lookup of the table by the ids happens here. ``lookup_costs`` returns four exact counts (the
gather's bytes and flops, the product's bytes and flops); each of its cells grades some of them
(``check=``: "gather", "product", "batch" all four), and a wrong count is named from the
expected count and the shapes of the case. ``predicted_ratio``'s wrong models are the roofline
put together wrongly from the costs, bandwidth, rate and overhead the case passes it.
"""

from __future__ import annotations

import math

import numpy as np

from ..compare import expected
from ..judges import Mistake, array_judge, common_problems
from ..visible import make_expect

FWD = "embedding_forward"
COSTS = "lookup_costs"
RATIO = "predicted_ratio"


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


# ------------------------------------------------------------------------------------------
# lookup_costs: (gather bytes, gather flops, product bytes, product flops), exact counts
# ------------------------------------------------------------------------------------------
WHAT = ("the gather's bytes", "the gather's flops", "the product's bytes", "the product's flops")
PARTS = {"gather": (0, 1), "product": (2, 3), "batch": (0, 1, 2, 3)}
HINT = (
    "The gather reads N rows of d float32 numbers and the N int64 ids, and writes the N rows.",
    "The gather copies: it does no arithmetic.",
    "The product (N x V) @ (V x d) reads both operands (float32) and writes its (N x d) result.",
    "The product does V * d multiply-adds per id, 2 flops each, zeros included.",
)
NOT_FOUR = Mistake("not-four-counts", "lookup_costs does not return the four counts")
GATHER_NO_IDS = Mistake("gather-no-ids", "the gather's bytes leave out the ids it reads")
IDS_INT32 = Mistake("ids-int32", "4 bytes per id: the ids are int64, 8 bytes each")
GATHER_READS_ONLY = Mistake("gather-reads-only", "the gather's bytes count reads, not writes")
GATHER_WHOLE_TABLE = Mistake("gather-whole-table", "the gather counted as reading the whole table")
ONE_HOT_BUILT = Mistake(
    "one-hot-construction-counted", "building the one-hot counted in the product's bytes"
)
FLOAT64_BYTES = Mistake("float64-bytes", "8 bytes per number: the table is float32")
GATHER_FLOPS = Mistake("gather-flops", "the gather counted with arithmetic it does not do")
MADDS_FOR_FLOPS = Mistake("madds-for-flops", "multiply-adds counted where flops (2 each) are due")
USEFUL_FLOPS = Mistake("useful-flops-only", "only the multiplies by the one-hot's 1s counted")
OPERAND_ONLY = Mistake("one-hot-operand-only", "only the one-hot operand counted as moved")
PRODUCT_NO_TABLE = Mistake("product-no-table", "the product's bytes leave out reading the table")
PRODUCT_NO_OUTPUT = Mistake("product-no-output", "the product's bytes leave out its result")
ONE_HOT_INT64 = Mistake("one-hot-int64", "the one-hot counted as int64: the product's is float32")
ONE_AXIS = Mistake("one-axis-only", "N taken from one axis of ids_shape, not all of them")
INT32_OVERFLOW = Mistake("int32-overflow", "the counts wrapped around like 32-bit integers")


def _nvd(case):
    """(N, V, d) of a lookup_costs case: N is the number of ids, the product of the shape."""
    shape, V, d = case.args[0], case.args[1], case.args[2]
    return math.prod(tuple(shape)), V, d


def _wrap32(x: int) -> int:
    """What an int32 computation of x leaves (two's-complement wrap-around)."""
    return (x + 2**31) % 2**32 - 2**31


def _one_axis(case, w):
    """N read from a single axis of a shape with several: the counts proportional to N."""
    shape, (N, _, _) = tuple(case.args[0]), _nvd(case)
    out = []
    for n in {shape[0], shape[-1]} if len(shape) > 1 and N else ():
        out.append({0: w[0] // N * n, 3: w[3] // N * n})
    return out


# mistake -> [(model(case, N, V, d, w) -> {index: the count it gives})]: what each gives
COST_MODELS = [
    (GATHER_NO_IDS, lambda c, N, V, d, w: [{0: w[0] - 8 * N}]),
    (IDS_INT32, lambda c, N, V, d, w: [{0: w[0] - 4 * N}]),
    (GATHER_READS_ONLY, lambda c, N, V, d, w: [{0: w[0] - 4 * N * d}]),
    (
        GATHER_WHOLE_TABLE,
        lambda c, N, V, d, w: [{0: w[0] + 4 * V * d - 4 * N * d}, {0: w[0] + 4 * V * d}],
    ),
    # building the one-hot: reading the ids (8N) and writing it (4NV), or as the chapter's timing
    # counts F.one_hot(ids, V).to(float32): int64 written, read again, float32 written (20NV).
    # Writing it alone (4NV) gives ONE_HOT_INT64's count, whose message names both readings.
    (
        ONE_HOT_BUILT,
        lambda c, N, V, d, w: [
            {2: w[2] + 4 * N * V + 8 * N},
            {2: w[2] + 20 * N * V},
            {2: w[2] + 20 * N * V + 8 * N},
        ],
    ),
    (FLOAT64_BYTES, lambda c, N, V, d, w: [{0: w[0] + 8 * N * d}, {2: 2 * w[2]}]),
    (MADDS_FOR_FLOPS, lambda c, N, V, d, w: [{3: w[3] // 2}]),
    (USEFUL_FLOPS, lambda c, N, V, d, w: [{3: 2 * N * d}, {3: N * d}]),
    (OPERAND_ONLY, lambda c, N, V, d, w: [{2: 4 * N * V}]),
    (PRODUCT_NO_TABLE, lambda c, N, V, d, w: [{2: w[2] - 4 * V * d}]),
    (PRODUCT_NO_OUTPUT, lambda c, N, V, d, w: [{2: w[2] - 4 * N * d}]),
    (ONE_HOT_INT64, lambda c, N, V, d, w: [{2: w[2] + 4 * N * V}]),
    (ONE_AXIS, lambda c, N, V, d, w: _one_axis(c, w)),
    (
        INT32_OVERFLOW,
        lambda c, N, V, d, w: [{i: _wrap32(w[i]) for i in range(4) if _wrap32(w[i]) != w[i]}],
    ),
]
COST_MESSAGES = {
    GATHER_NO_IDS: "left the ids out of the gather's bytes: E[ids] reads the N int64 ids (8 "
    "bytes each) besides the rows",
    IDS_INT32: "counted 4 bytes per id: the ids are int64 (torch.long, numpy's default "
    "integers), 8 bytes each",
    GATHER_READS_ONLY: "counted only what the gather reads: it also writes the N rows it "
    "copies, and a byte moved is a byte read or written",
    GATHER_WHOLE_TABLE: "counted the whole table for the gather: it reads only the N rows it "
    "copies, so V does not enter the gather's bytes",
    ONE_HOT_BUILT: "counted building the one-hot in the product's bytes: the product starts "
    "from a one-hot already built and moves its operands and result only, the (N x V) one-hot "
    "and the (V x d) table read and the (N x d) result written; the chapter times building it "
    "(F.one_hot) as a method of its own",
    FLOAT64_BYTES: "counted 8 bytes per number: the table, the one-hot and the results are "
    "float32, 4 bytes per number",
    MADDS_FOR_FLOPS: "counted multiply-adds where flops are due: each multiply-add is 2 "
    "floating-point operations",
    USEFUL_FLOPS: "counted only the multiplies by the one-hot's 1s: the product multiplies "
    "every entry, zeros included, V * d multiply-adds per id",
    OPERAND_ONLY: "counted only the one-hot operand: the product also reads the table and "
    "writes its (N x d) result",
    PRODUCT_NO_TABLE: "left out reading the table: the product reads both of its operands, "
    "the (N x V) one-hot and the (V x d) table",
    PRODUCT_NO_OUTPUT: "left out the product's result: it writes N x d float32 numbers",
    ONE_HOT_INT64: "counted the one-hot as int64 (8 bytes a number), or counted writing it "
    "besides reading it (the same 4 * N * V bytes more): the product reads a float32 one-hot "
    "already built (F.one_hot's int64 is converted before the timed product), and building it "
    "is not the product's cost",
    ONE_AXIS: "took N from one axis of ids_shape: N is the number of ids, the product of all "
    "the shape's entries (B * T for a (B, T) batch, 1 for a 0-d id)",
    INT32_OVERFLOW: "overflowed: the counts wrapped around like 32-bit integers (np.int32 holds "
    "at most 2,147,483,647). Compute with Python ints, which never overflow",
}


def _count_values(case, got, want):
    """(problem, the student's four counts, the expected four)."""
    problem = common_problems(case, got, want, COSTS)
    if problem:
        return problem, None, None
    if not got.is_tuple or len(got.values) != 4 or any(v.shape != () for v in got.values):
        what = ", ".join(got.types) or "nothing"
        return (
            NOT_FOUR.said(
                f"{COSTS} should return a tuple of four numbers (gather_bytes, gather_flops, "
                f"product_bytes, product_flops) for {case.label}; got {what}."
            ),
            None,
            None,
        )
    return None, [v.item() for v in got.values], [int(v.item()) for v in want.values]


def _named_count(case, g, w, graded):
    """The first mistake whose model gives every wrong graded count the student returned."""
    wrong = [i for i in graded if g[i] != w[i]]
    if wrong and 1 in wrong and 0 not in wrong:
        return GATHER_FLOPS.said(
            f"{COSTS} counted {g[1]:,} flops for the gather for {case.label}: E[ids] copies rows "
            "and does no arithmetic, 0 flops."
        )
    N, V, d = _nvd(case)
    for mistake, model in COST_MODELS:
        for alt in model(case, N, V, d, w):
            hits = [i for i in wrong if i in alt and alt[i] != w[i] and g[i] == alt[i]]
            if hits and all(i in hits or g[i] == w[i] for i in graded if i in alt):
                return mistake.said(f"{COSTS} {COST_MESSAGES[mistake]} (for {case.label}).")
    return None


def batch_companion(case):
    """The call of the student's own lookup_costs a batch case asks for (Outcome.companion, the
    whole return): the same N ids as one flat (N,) batch."""
    N, V, d = _nvd(case)
    return (COSTS, [((N,), V, d)], "whole")


def _own_flat(got):
    """The four counts the student's lookup_costs gave for the flat (N,) batch, or None."""
    own = (got.companion or [None])[0]
    if not own or len(own) != 4 or any(len(v) != 1 for *_, v in own):
        return None
    return [v[0] for *_, v in own]


def costs_judge(part):
    """The counts of one part of lookup_costs ("gather", "product", or "batch": all four). The
    batch cell grades what it adds, N taken from the whole shape: counts equal to the student's
    own for the same N ids as a flat (N,) batch pass there (their values are the gather's and the
    product's cells' to grade)."""
    graded = PARTS[part]

    def judge(case, got, want):
        problem, g, w = _count_values(case, got, want)
        if problem:
            return problem
        if all(g[i] == w[i] for i in graded):
            return None
        if part == "batch" and _own_flat(got) == g:
            return None
        named = _named_count(case, g, w, graded)
        if named:
            return named
        i = next(i for i in graded if g[i] != w[i])
        return (
            f"{COSTS} returned {g[i]:,} for {WHAT[i]} for {case.label}"
            f"{expected(case, f'{w[i]:,}')}. {HINT[i]}"
        )

    return judge


COST_MISTAKES = [NOT_FOUR, GATHER_FLOPS, *(m for m, _ in COST_MODELS)]


# ------------------------------------------------------------------------------------------
# predicted_ratio: the roofline, t = max(bytes / bandwidth, flops / rate) + overhead
# ------------------------------------------------------------------------------------------
def _roofline_variant(time):
    """A wrong ratio: time(bytes, flops, bandwidth, rate, overhead) for each formulation."""

    def model(case, want):
        costs, bw, rate, t0 = case.args
        gb, gf, pb, pf = (float(c) for c in costs)
        t_gather = time(gb, gf, bw, rate, t0)
        return None if t_gather == 0 else np.float64(time(pb, pf, bw, rate, t0) / t_gather)

    return model


SUM_NOT_MAX = Mistake(
    "sum-not-max",
    "predicted_ratio added the memory time and the arithmetic time: the roofline takes the "
    "larger of the two, max(bytes / bandwidth, flops / rate), since memory and arithmetic "
    "overlap",
    _roofline_variant(lambda b, f, bw, r, t0: b / bw + f / r + t0),
)
NO_OVERHEAD = Mistake(
    "no-overhead",
    "predicted_ratio left out the per-call overhead: each formulation's time is "
    "max(bytes / bandwidth, flops / rate) + overhead (one call each)",
    _roofline_variant(lambda b, f, bw, r, t0: max(b / bw, f / r)),
)
INVERTED = Mistake(
    "inverted-ratio",
    "predicted_ratio returned the gather's time over the product's: the ratio is "
    "t_product / t_gather, how many times slower the one-hot product is",
    lambda case, want: None if want == 0 else np.float64(1.0 / want),
)
BYTES_ONLY = Mistake(
    "bytes-only",
    "predicted_ratio timed both formulations by their bytes alone: the product's arithmetic, "
    "flops / rate, is usually the larger bound",
    _roofline_variant(lambda b, f, bw, r, t0: b / bw + t0),
)


def _overhead_on_product(case):
    """Both formulations by the roofline, the overhead added to the product's time alone."""
    costs, bw, rate, t0 = case.args
    gb, gf, pb, pf = (float(c) for c in costs)
    t_gather = max(gb / bw, gf / rate)
    return None if t_gather == 0 else np.float64((max(pb / bw, pf / rate) + t0) / t_gather)


OVERHEAD_PRODUCT_ONLY = Mistake(
    "overhead-on-product-only",
    "predicted_ratio added the per-call overhead to the product's time only: the gather is a "
    "call too, so each formulation's time is max(bytes / bandwidth, flops / rate) + overhead",
    lambda case, want: _overhead_on_product(case),
)
FLOPS_ONLY = Mistake(
    "flops-only",
    "predicted_ratio timed both formulations by their flops alone: the gather does no "
    "arithmetic, so its time is its bytes over the bandwidth (plus the overhead)",
    _roofline_variant(lambda b, f, bw, r, t0: f / r + t0),
)


def _product_by_flops(case, want):
    """The gather by the roofline, the product by its arithmetic alone (its bytes ignored)."""
    costs, bw, rate, t0 = case.args
    gb, gf, pb, pf = (float(c) for c in costs)
    t_gather = max(gb / bw, gf / rate) + t0
    return None if t_gather == 0 else np.float64((pf / rate + t0) / t_gather)


PRODUCT_FLOPS_ONLY = Mistake(
    "product-flops-only",
    "predicted_ratio timed the product by its flops alone and left out its bytes: the product "
    "moves its operands and its result too, and where the arithmetic rate is high next to the "
    "bandwidth, bytes / bandwidth is the larger bound. Each formulation's time is "
    "max(bytes / bandwidth, flops / rate) + overhead",
    _product_by_flops,
)
RATIO_MISTAKES = [
    SUM_NOT_MAX,
    NO_OVERHEAD,
    INVERTED,
    BYTES_ONLY,
    OVERHEAD_PRODUCT_ONLY,
    FLOPS_ONLY,
    PRODUCT_FLOPS_ONLY,
]

# Every mistake this chapter recognises (judges.COMMON besides): ids unique within the chapter.
MISTAKES = [*FWD_MISTAKES, ONE_HOT_FLAT, *COST_MISTAKES, *RATIO_MISTAKES]

forward_judge = array_judge(FWD, mistakes=FWD_MISTAKES)
one_hot_judge = array_judge(
    "one_hot", row_word="position", mistakes=[ONE_HOT_FLAT], dtype_hint=ONE_HOT_DTYPE
)

ratio_judge = array_judge(RATIO, check_dtype=False, mistakes=RATIO_MISTAKES, row_word="value")

JUDGES = {FWD: forward_judge, "one_hot": one_hot_judge}
JUDGES |= {f"{COSTS}:{part}": costs_judge(part) for part in PARTS}
JUDGES[RATIO] = ratio_judge
expect = make_expect(JUDGES, MISTAKES, {f"{COSTS}:batch": batch_companion})
