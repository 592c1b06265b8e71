"""Sample answers for exercise 1: correct alternatives (full credit) and classic mistakes.

Each entry maps a function name to the complete source of a student's answer cell. Mistakes
list the test cells they must fail and a phrase the feedback must contain.
"""

from . import Mistake


def _costs(
    gather="8 * N * d + 8 * N",
    product="4 * (N * V + V * d + N * d)",
    flops="2 * N * V * d",
    n="math.prod(ids_shape)",
):
    """A lookup_costs that differs from a correct one in one count."""
    return f"""
import math

def lookup_costs(ids_shape, V, d):
    N = {n}
    {gather if gather.startswith("gather") else "gather = " + gather}
    return gather, 0, {product}, {flops}
"""


def _ratio(time, inverted=False):
    """A predicted_ratio whose time per formulation is ``time`` (of b, f)."""
    num, den = ("g", "p") if inverted else ("p", "g")
    return f"""
def predicted_ratio(costs, bandwidth, rate, overhead):
    def t(b, f):
        return {time}

    g, p = t(costs[0], costs[1]), t(costs[2], costs[3])
    return {num} / {den}
"""


ALTERNATIVES = {
    "np.take": {
        "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    return np.take(E, ids, axis=0)
""",
        "one_hot": """
def one_hot(ids, V):
    ids = np.asarray(ids)
    return np.eye(V)[ids]
""",
        "lookup_costs": """
def lookup_costs(ids_shape, V, d):
    N = 1
    for n in ids_shape:   # the number of ids, axis by axis
        N *= n
    f32, i64 = 4, 8
    rows = N * d * f32
    gather = rows + N * i64 + rows                   # read rows, read ids, write rows
    one_hot, table, out = N * V * f32, V * d * f32, N * d * f32
    return gather, 0, one_hot + table + out, 2 * (N * V * d)
""",
        "predicted_ratio": """
def predicted_ratio(costs, bandwidth, rate, overhead):
    gb, gf, pb, pf = costs

    def seconds(nbytes, flops):
        memory, arithmetic = nbytes / bandwidth, flops / rate
        return (memory if memory > arithmetic else arithmetic) + overhead

    return seconds(pb, pf) / seconds(gb, gf)
""",
    },
    "loop over positions": {
        "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    ids = np.asarray(ids)
    out = np.zeros(ids.shape + (E.shape[1],), dtype=E.dtype)
    for pos in np.ndindex(ids.shape):
        out[pos] = E[ids[pos]]
    return out
""",
        "one_hot": """
def one_hot(ids, V):
    ids = np.asarray(ids)
    out = np.zeros(ids.shape + (V,))
    for pos in np.ndindex(ids.shape):
        out[pos + (ids[pos],)] = 1.0
    return out
""",
        "lookup_costs": """
import numpy as np

def lookup_costs(ids_shape, V, d):
    N = int(np.prod(ids_shape, dtype=np.int64))   # np.prod(()) is 1 too
    item = np.dtype(np.float32).itemsize
    gather = 2 * N * d * item + N * np.dtype(np.int64).itemsize
    product = (N * V + V * d + N * d) * item
    return int(gather), 0, int(product), int(2 * N * V * d)
""",
        "predicted_ratio": """
import numpy as np

def predicted_ratio(costs, bandwidth, rate, overhead):
    c = np.array(costs, dtype=np.float64).reshape(2, 2)   # rows: gather, product
    t = np.maximum(c[:, 0] / bandwidth, c[:, 1] / rate) + overhead
    return float(t[1] / t[0])
""",
    },
    "one-hot matmul": {
        "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    ids = np.asarray(ids)
    oh = (ids[..., None] == np.arange(E.shape[0])).astype(E.dtype)
    return oh @ E
""",
        "one_hot": """
def one_hot(ids, V):
    ids = np.asarray(ids)
    flat = np.zeros((ids.size, V))
    flat[np.arange(ids.size), ids.ravel()] = 1
    return flat.reshape(ids.shape + (V,))
""",
        "lookup_costs": """
import math

def lookup_costs(ids_shape, V, d):
    N = math.prod(ids_shape)
    moved = {  # array: (numbers, bytes each) read or written by one call
        "gather": [(N * d, 4), (N, 8), (N * d, 4)],
        "product": [(N * V, 4), (V * d, 4), (N * d, 4)],
    }
    nbytes = {k: sum(n * b for n, b in v) for k, v in moved.items()}
    madds = N * V * d
    return nbytes["gather"], 0, nbytes["product"], madds + madds
""",
        "predicted_ratio": """
def predicted_ratio(costs, bandwidth, rate, overhead):
    times = [max(costs[i] / bandwidth, costs[i + 1] / rate) + overhead for i in (0, 2)]
    return times[1] / times[0]
""",
    },
}

MISTAKES = {
    "float64 result": Mistake(
        {
            "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    return np.array(E[ids], dtype=float)
"""
        },
        fails={"test_forward_values"},
        says="expected float32",
        id="wrong-dtype",
    ),
    "flat result (works only for 1-D ids)": Mistake(
        {
            "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    return E[np.ravel(ids)]
"""
        },
        fails={"test_forward_values"},
        says="lost the shape of ids",
        id="flattened",
    ),
    "off by one": Mistake(
        {
            "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    return E[np.asarray(ids) - 1]
"""
        },
        fails={"test_forward_values"},
        says="row before the right one",
        id="off-by-one",
    ),
    "one_hot returns int64 (astype(int))": Mistake(
        {
            "one_hot": """
def one_hot(ids, V):
    ids = np.asarray(ids)
    return (ids[..., None] == np.arange(V)).astype(np.int64)
"""
        },
        fails={"test_one_hot"},
        says="one_hot returns float64 whatever the dtype of ids",
        id="wrong-dtype",
    ),
    "one_hot flattens 2-D ids": Mistake(
        {
            "one_hot": """
def one_hot(ids, V):
    flat = np.ravel(ids)
    out = np.zeros((flat.size, V))
    out[np.arange(flat.size), flat] = 1.0
    return out
"""
        },
        fails={"test_one_hot"},
        says="one_hot lost the shape of ids",
        id="one-hot-flattened",
    ),
    "modifies the table": Mistake(
        {
            "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    E[-1] = 0.0  # "tidy up" the last row in place: the caller's table changes
    return E[ids]
"""
        },
        fails={"test_forward_values"},
        says="modified its input (E)",
        id="modified-input",
    ),
    "gather without the ids": Mistake(
        {"lookup_costs": _costs("gather = 8 * N * d   # the rows read and written")},
        fails={"test_costs_gather"},
        says="left the ids out",
        id="gather-no-ids",
    ),
    "ids counted as int32": Mistake(
        {"lookup_costs": _costs("gather = 8 * N * d + 4 * N")},
        fails={"test_costs_gather"},
        says="4 bytes per id",
        id="ids-int32",
    ),
    "multiply-adds counted as flops": Mistake(
        {"lookup_costs": _costs(flops="N * V * d")},
        fails={"test_costs_product"},
        says="counted multiply-adds where flops are due",
        id="madds-for-flops",
    ),
    "only the one-hot operand moved": Mistake(
        {"lookup_costs": _costs(product="4 * N * V")},
        fails={"test_costs_product"},
        says="counted only the one-hot operand",
        id="one-hot-operand-only",
    ),
    "building the one-hot counted in the product's bytes": Mistake(
        {
            "lookup_costs": """
import math

def lookup_costs(ids_shape, V, d):
    N = math.prod(ids_shape)
    build = 8 * N + 4 * N * V  # read the ids, write the (N x V) float32 one-hot
    product = build + 4 * (N * V + V * d + N * d)
    return 8 * N * d + 8 * N, 0, product, 2 * N * V * d
"""
        },
        fails={"test_costs_product"},
        says="counted building the one-hot in the product's bytes",
        id="one-hot-construction-counted",
    ),
    "N from the first axis only": Mistake(
        {"lookup_costs": _costs(n="ids_shape[0]")},
        fails={"test_costs_batch"},
        says="took N from one axis",
        id="one-axis-only",
    ),
    "int32 counts": Mistake(
        {
            "lookup_costs": """
import numpy as np

def lookup_costs(ids_shape, V, d):
    N, V, d = np.int32(np.prod(ids_shape, dtype=np.int32)), np.int32(V), np.int32(d)
    with np.errstate(over="ignore"):
        return 8 * N * d + 8 * N, 0, 4 * (N * V + V * d + N * d), 2 * N * V * d
"""
        },
        fails={"test_costs_product"},
        says="wrapped around like 32-bit integers",
        id="int32-overflow",
    ),
    "memory time plus arithmetic time": Mistake(
        {"predicted_ratio": _ratio("b / bandwidth + f / rate + overhead")},
        fails={"test_predicted_ratio"},
        says="added the memory time and the arithmetic time",
        id="sum-not-max",
    ),
    "no per-call overhead": Mistake(
        {"predicted_ratio": _ratio("max(b / bandwidth, f / rate)")},
        fails={"test_predicted_ratio"},
        says="left out the per-call overhead",
        id="no-overhead",
    ),
    "the overhead added to the product only": Mistake(
        {
            "predicted_ratio": """
def predicted_ratio(costs, bandwidth, rate, overhead):
    gather_bytes, gather_flops, product_bytes, product_flops = costs
    t_gather = max(gather_bytes / bandwidth, gather_flops / rate)
    t_product = max(product_bytes / bandwidth, product_flops / rate) + overhead
    return t_product / t_gather
"""
        },
        fails={"test_predicted_ratio"},
        says="added the per-call overhead to the product's time only",
        id="overhead-on-product-only",
    ),
    "the product timed by its flops alone": Mistake(
        {
            "predicted_ratio": """
def predicted_ratio(costs, bandwidth, rate, overhead):
    gather_bytes, gather_flops, product_bytes, product_flops = costs
    t_gather = max(gather_bytes / bandwidth, gather_flops / rate) + overhead
    t_product = product_flops / rate + overhead  # the product is compute-bound... usually
    return t_product / t_gather
"""
        },
        fails={"test_predicted_ratio"},
        says="timed the product by its flops alone",
        id="product-flops-only",
    ),
    "gather over product": Mistake(
        {"predicted_ratio": _ratio("max(b / bandwidth, f / rate) + overhead", inverted=True)},
        fails={"test_predicted_ratio"},
        says="the gather's time over the product's",
        id="inverted-ratio",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "float64 result"
