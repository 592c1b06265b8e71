"""Sample answers for exercise 7: correct alternatives (full credit) and classic mistakes."""

from . import Mistake


def _cost(body: str) -> str:
    return "import math\n\ndef table_cost(V, d, tied, factor_m=None):\n" + body


# A correct best_dim that fits its own models: a sample with a wrong heldout_error keeps it, so
# that it fails only heldout_error's cells.
_OWN_BEST = """
import numpy as np

def best_dim(M_train, M_val, max_d):
    mu = M_train.mean()
    U, s, Vt = np.linalg.svd(M_train - mu, full_matrices=False)
    errors = [np.mean((mu + (U[:, :d] * s[:d]) @ Vt[:d] - M_val) ** 2) for d in range(max_d + 1)]
    return int(np.argmin(errors))
"""


def _held(
    prediction="mu + (U[:, :d] * s[:d]) @ Vt[:d]",
    score="np.mean((pred - M_val) ** 2)",
    center="M_train.mean()",
):
    """A heldout_error that differs from a correct one in its prediction, score or centering."""
    return f"""
import numpy as np

def heldout_error(M_train, M_val, d):
    mu = {center}
    U, s, Vt = np.linalg.svd(M_train - mu, full_matrices=False)
    pred = {prediction}
    return float({score})
"""


def _best(search: str) -> str:
    """A best_dim whose search over d is ``search`` (with errors(ds) = held-out errors)."""
    return f"""
import numpy as np

def best_dim(M_train, M_val, max_d):
    errors = lambda ds: [heldout_error(M_train, M_val, d) for d in ds]
    {search}
"""


def _dim(tf: str, fastai: str, header: str = "") -> str:
    return f"""import math
{header}
def suggest_dim(V, rule):
    if rule == "tf":
        return {tf}
    if rule == "fastai":
        return {fastai}
    raise ValueError(rule)
"""


ALTERNATIVES = {
    "count shapes with math.prod; sqrt of sqrt and int(x + 0.5)": {
        "table_cost": _cost("""
    if factor_m is None:
        shapes = [(V, d)]
    else:
        shapes = [(V, factor_m), (factor_m, d)]
    per_table = sum(math.prod(s) for s in shapes)
    n_tables = 1 if tied else 2
    params = n_tables * per_table
    bytes_per_param = 4 + 4 + 4 + 4   # weight, gradient, Adam m, Adam v
    return (params, params * bytes_per_param)
"""),
        "suggest_dim": _dim(
            "int(math.sqrt(math.sqrt(V)) + 0.5)",
            "min(600, int(1.6 * math.exp(0.56 * math.log(V)) + 0.5))",
        ),
        "heldout_error": """
import numpy as np

def heldout_error(M_train, M_val, d):
    # the right singular vectors from the Gram matrix's eigenvectors, largest eigenvalue first
    mu = np.mean(M_train)
    A = M_train - mu
    w, V = np.linalg.eigh(A.T @ A)
    V_d = V[:, ::-1][:, :d]
    return float(np.mean((mu + A @ V_d @ V_d.T - M_val) ** 2))
""",
        "best_dim": """
def best_dim(M_train, M_val, max_d):
    best, best_err = 0, heldout_error(M_train, M_val, 0)
    for d in range(1, max_d + 1):
        err = heldout_error(M_train, M_val, d)
        if err < best_err:     # strictly smaller: the first d wins a tie
            best, best_err = d, err
    return best
""",
    },
    "numpy int64 inside, converted with int(); numpy rounding": {
        "table_cost": """
import numpy as np

def table_cost(V, d, tied, factor_m=None):
    if factor_m:
        per = np.int64(V) * factor_m + np.int64(factor_m) * d
    else:
        per = np.int64(V) * d
    params = per * (1 if tied else 2)
    return int(params), int(params * 16)
""",
        "suggest_dim": """
import numpy as np

def suggest_dim(V, rule):
    if rule not in ("tf", "fastai"):
        raise ValueError(f"rule must be 'tf' or 'fastai', not {rule!r}")
    if rule == "tf":
        return int(np.round(np.power(V, 0.25)))
    return int(min(600, np.round(1.6 * np.power(float(V), 0.56))))
""",
        "heldout_error": """
import numpy as np

def heldout_error(M_train, M_val, d):
    mu = M_train.sum() / M_train.size
    U, s, Vt = np.linalg.svd(M_train - mu)
    pred = np.full(M_train.shape, mu)
    for k in range(d):          # one rank-one piece per kept direction
        pred += s[k] * np.outer(U[:, k], Vt[k])
    return float(np.linalg.norm(pred - M_val) ** 2 / M_val.size)
""",
        "best_dim": """
def best_dim(M_train, M_val, max_d):
    return min(range(max_d + 1), key=lambda d: heldout_error(M_train, M_val, d))
""",
    },
    "a list returned, V ** (1/4), a lookup table of rules": {
        "table_cost": _cost("""
    stored = [V * factor_m + factor_m * d if factor_m is not None else V * d]
    if not tied:
        stored = stored * 2
    params = sum(stored)
    return [params, 16 * params]
"""),
        "suggest_dim": """
RULES = {
    "tf": lambda V: round(V ** (1 / 4)),
    "fastai": lambda V: min(600, round(1.6 * V ** 0.56)),
}

def suggest_dim(V, rule):
    try:
        f = RULES[rule]
    except KeyError:
        raise ValueError(rule) from None
    return f(V)
""",
        "heldout_error": """
import numpy as np

def heldout_error(M_train, M_val, d):
    mu = np.mean(M_train)
    U, s, Vt = np.linalg.svd(M_train - mu, full_matrices=False)
    kept = np.where(np.arange(s.size) < d, s, 0.0)   # zero the singular values past d
    return float(((mu + (U * kept) @ Vt - M_val) ** 2).sum() / M_val.size)
""",
        "best_dim": """
import numpy as np

def best_dim(M_train, M_val, max_d):
    # the whole curve from one SVD, adding one rank-one piece per step
    mu = M_train.mean()
    U, s, Vt = np.linalg.svd(M_train - mu, full_matrices=False)
    pred = np.full(M_train.shape, mu)
    errors = [np.mean((pred - M_val) ** 2)]
    for k in range(max_d):
        pred = pred + s[k] * np.outer(U[:, k], Vt[k])
        errors.append(np.mean((pred - M_val) ** 2))
    return int(np.argmin(errors))
""",
    },
}

MISTAKES = {
    "tied table counted twice": Mistake(
        {
            "table_cost": _cost("""
    per = V * d if factor_m is None else V * factor_m + factor_m * d
    params = 2 * per   # input table + output layer, always two
    return params, 16 * params
""")
        },
        fails={"test_cost_tied", "test_cost_factorized"},
        says="counted the tied table twice",
        id="tied-counted-twice",
    ),
    "bytes for the weights only": Mistake(
        {
            "table_cost": _cost("""
    per = V * d if factor_m is None else V * factor_m + factor_m * d
    params = per if tied else 2 * per
    return params, 4 * params   # float32
""")
        },
        fails={"test_cost_bytes"},
        says="only the float32 weights",
        id="bytes-weights-only",
    ),
    "weights and gradients, no Adam moments": Mistake(
        {
            "table_cost": _cost("""
    per = V * d if factor_m is None else V * factor_m + factor_m * d
    params = per if tied else 2 * per
    return params, 8 * params
""")
        },
        fails={"test_cost_bytes"},
        says="not Adam's two moment",
        id="bytes-no-moments",
    ),
    "factorization without its projection": Mistake(
        {
            "table_cost": _cost("""
    per = V * d if factor_m is None else V * factor_m
    params = per if tied else 2 * per
    return params, 16 * params
""")
        },
        fails={"test_cost_factorized"},
        says="forgot the m x d projection",
        id="no-projection",
    ),
    "one projection shared by untied tables": Mistake(
        {
            "table_cost": _cost("""
    if factor_m is None:
        params = V * d if tied else 2 * V * d
    else:
        params = (1 if tied else 2) * V * factor_m + factor_m * d
    return params, 16 * params
""")
        },
        fails={"test_cost_factorized"},
        says="its own m x d projection",
        id="shared-projection",
    ),
    "int32 arithmetic overflows": Mistake(
        {
            "table_cost": """
import numpy as np

def table_cost(V, d, tied, factor_m=None):
    V, d = np.int32(V), np.int32(d)
    per = V * d if factor_m is None else V * np.int32(factor_m) + np.int32(factor_m) * d
    params = per if tied else np.int32(2) * per
    return params, np.int32(16) * params
"""
        },
        fails={"test_cost_python_ints"},  # the bytes cell leaves the overflow to the ints cell
        says="overflowed",
        id="int32-overflow",
    ),
    "numpy int64 returned": Mistake(
        {
            "table_cost": """
import numpy as np

def table_cost(V, d, tied, factor_m=None):
    shapes = [(V, d)] if factor_m is None else [(V, factor_m), (factor_m, d)]
    per = sum(np.prod(s) for s in shapes)
    params = per if tied else 2 * per
    return params, 16 * params
"""
        },
        fails={"test_cost_python_ints"},
        says="Python ints",
        id="numpy-ints",
    ),
    "floats returned": Mistake(
        {
            "table_cost": _cost("""
    per = V * d if factor_m is None else V * factor_m + factor_m * d
    params = per * (1.0 if tied else 2.0)
    return params, params * 16
""")
        },
        fails={"test_cost_python_ints"},
        says="integer arithmetic",
        id="float-counts",
    ),
    "truncation instead of rounding": Mistake(
        {"suggest_dim": _dim("int(V ** 0.25)", "min(600, int(1.6 * V ** 0.56))")},
        fails={"test_suggest_tf", "test_suggest_fastai"},
        says="truncated instead of rounding",
        id="truncated",
    ),
    # V ** 1/4 is (V ** 1) / 4 = V / 4: no rounding mistake, though it is one off at V = 1
    # (round(0.25) = 0): the generic message, which names no mistake (id "").
    "V ** 1/4 (V / 4)": Mistake(
        {"suggest_dim": _dim("round(V ** 1/4)", "min(600, round(1.6 * V ** 0.56))")},
        fails={"test_suggest_tf"},
        says="which is not V ** 0.25 rounded",
    ),
    # round(sqrt(V)) for tf is one off at V = 10 (3, not 2), and no ceil either (ceil(1.78) = 2).
    "round(sqrt(V)) for tf": Mistake(
        {"suggest_dim": _dim("round(math.sqrt(V))", "min(600, round(1.6 * V ** 0.56))")},
        fails={"test_suggest_tf"},
        says="which is not V ** 0.25 rounded",
    ),
    "fastai without its cap": Mistake(
        {"suggest_dim": _dim("round(V ** 0.25)", "round(1.6 * V ** 0.56)")},
        fails={"test_suggest_fastai"},
        says="forgot fastai's cap",
        id="no-cap",
    ),
    "(1.6 V) ** 0.56": Mistake(
        {"suggest_dim": _dim("round(V ** 0.25)", "min(600, round((1.6 * V) ** 0.56))")},
        fails={"test_suggest_fastai"},
        says="to the power 0.56",
        id="power-of-product",
    ),
    "np.round returns a float": Mistake(
        {
            "suggest_dim": _dim(
                "np.round(V ** 0.25)",
                "min(600.0, np.round(1.6 * V ** 0.56))",
                header="import numpy as np\n",
            )
        },
        fails={"test_suggest_contract"},
        says="a width is an int",
        id="float-width",
    ),
    "unknown rule returns None": Mistake(
        {
            "suggest_dim": """
def suggest_dim(V, rule):
    if rule == "tf":
        return round(V ** 0.25)
    if rule == "fastai":
        return min(600, round(1.6 * V ** 0.56))
"""
        },
        fails={"test_suggest_contract"},
        says="should raise ValueError",
        id="rule-not-checked",
    ),
    "scored on the training split": Mistake(
        {"heldout_error": _held(score="np.mean((pred - M_train) ** 2)"), "best_dim": _OWN_BEST},
        fails={"test_heldout_values", "test_heldout_centering"},
        says="measured the error on the training split",
        id="train-split",
    ),
    "one direction too many": Mistake(
        {
            "heldout_error": _held(prediction="mu + (U[:, : d + 1] * s[: d + 1]) @ Vt[: d + 1]"),
            "best_dim": _OWN_BEST,
        },
        fails={"test_heldout_values", "test_heldout_centering", "test_heldout_edges"},
        says="kept d + 1 or d - 1 directions",
        id="rank-off-by-one",
    ),
    "one direction too few": Mistake(
        {
            "heldout_error": _held(
                prediction="mu + (U[:, : max(d - 1, 0)] * s[: max(d - 1, 0)]) @ Vt[: max(d - 1, 0)]"
            ),
            "best_dim": _OWN_BEST,
        },
        fails={"test_heldout_values", "test_heldout_centering", "test_heldout_edges"},
        says="kept d + 1 or d - 1 directions",
        id="rank-off-by-one",
    ),
    "the smallest directions (eigh's ascending order kept)": Mistake(
        {
            "heldout_error": """
import numpy as np

def heldout_error(M_train, M_val, d):
    mu = M_train.mean()
    A = M_train - mu
    w, V = np.linalg.eigh(A.T @ A)   # ascending: the smallest eigenvalue first
    V_d = V[:, :d]
    return float(np.mean((mu + A @ V_d @ V_d.T - M_val) ** 2))
""",
            "best_dim": _OWN_BEST,
        },
        fails={"test_heldout_values", "test_heldout_centering"},
        says="reverse them",
        id="smallest-directions",
    ),
    "fitted on M_val": Mistake(
        {
            "heldout_error": _held(center="M_val.mean()").replace(
                "svd(M_train - mu", "svd(M_val - mu"
            ),
            "best_dim": _OWN_BEST,
        },
        fails={"test_heldout_values", "test_heldout_centering"},
        says="fitted the model on M_val",
        id="fitted-on-m-val",
    ),
    "computed in float32": Mistake(
        {
            "heldout_error": """
import numpy as np

def heldout_error(M_train, M_val, d):
    A = M_train.astype(np.float32)
    mu = A.mean()
    U, s, Vt = np.linalg.svd(A - mu, full_matrices=False)
    pred = mu + (U[:, :d] * s[:d]) @ Vt[:d]
    return float(np.mean((pred - M_val.astype(np.float32)) ** 2))
""",
            "best_dim": _OWN_BEST,
        },
        fails={"test_heldout_centering"},
        says="Compute in float64",
        id="float32",
    ),
    "no centering": Mistake(
        {"heldout_error": _held(center="0.0"), "best_dim": _OWN_BEST},
        fails={"test_heldout_values", "test_heldout_centering"},
        says="fitted the SVD to M_train itself",
        id="not-centered",
    ),
    "centered with the held-out split's mean": Mistake(
        {"heldout_error": _held(center="M_val.mean()"), "best_dim": _OWN_BEST},
        fails={"test_heldout_values", "test_heldout_centering"},
        says="centered with the held-out split's mean",
        id="validation-mean",
    ),
    "centered by each column's mean": Mistake(
        {"heldout_error": _held(center="M_train.mean(axis=0)"), "best_dim": _OWN_BEST},
        fails={"test_heldout_values", "test_heldout_centering"},
        says="centered each column (or each row) by its own mean",
        id="mean-per-column-or-row",
    ),
    "centered by each row's mean": Mistake(
        {
            "heldout_error": _held(center="M_train.mean(axis=1, keepdims=True)"),
            "best_dim": _OWN_BEST,
        },
        fails={"test_heldout_values", "test_heldout_centering"},
        says="centered each column (or each row) by its own mean",
        id="mean-per-column-or-row",
    ),
    "sum of squares": Mistake(
        {"heldout_error": _held(score="np.sum((pred - M_val) ** 2)")},
        fails={"test_heldout_values", "test_heldout_centering", "test_heldout_edges"},
        says="summed the squared errors",
        id="sum-not-mean",
    ),
    "chosen by the training error": Mistake(
        {
            "best_dim": """
import numpy as np

def best_dim(M_train, M_val, max_d):
    errors = [heldout_error(M_train, M_train, d) for d in range(max_d + 1)]
    return int(np.argmin(errors))
"""
        },
        fails={"test_best_dim_rank", "test_best_dim_edges"},
        says="what the training error picks",
        id="chose-by-train-error",
    ),
    "range(max_d) misses max_d": Mistake(
        {"best_dim": _best("return int(np.argmin(errors(range(max_d))))")},
        fails={"test_best_dim_edges"},
        says="range(max_d) never tries it",
        id="max-d-excluded",
    ),
    "d = 0 never tried": Mistake(
        {"best_dim": _best("return 1 + int(np.argmin(errors(range(1, max_d + 1))))")},
        fails={"test_best_dim_edges"},
        says="never tried d = 0",
        id="zero-excluded",
    ),
    "the position in a list from d = 1": Mistake(
        {"best_dim": _best("return int(np.argmin(errors(range(1, max_d + 1))))")},
        fails={"test_best_dim_rank", "test_best_dim_edges"},
        says="is one off the best d",
        id="index-not-dim",
    ),
    "a tie goes to the last minimum": Mistake(
        {
            "best_dim": """
def best_dim(M_train, M_val, max_d):
    best, best_err = 0, float("inf")
    for d in range(max_d + 1):
        err = heldout_error(M_train, M_val, d)
        if err <= best_err:          # <=: a later d with the same error replaces the earlier
            best, best_err = d, err
    return best
"""
        },
        fails={"test_best_dim_edges"},
        says="on a tie the smallest d wins",
        id="tie-not-smallest",
    ),
    # A correct search over a heldout_error scored on the training split: the mistake is in Part
    # C, whose cells charge it; the best_dim cells pass.
    "a correct best_dim over a heldout_error on the training split": Mistake(
        {"heldout_error": _held(score="np.mean((pred - M_train) ** 2)")},
        fails={"test_heldout_values", "test_heldout_centering"},
        says="measured the error on the training split",
        id="train-split",
    ),
    # A correct search over an uncentered heldout_error: Part C's cells name the mistake and take
    # its points; the best_dim cells pass (best_dim picks the smallest of the student's own errors).
    "a correct best_dim over an uncentered heldout_error": Mistake(
        {"heldout_error": _held(center="0.0")},
        fails={"test_heldout_values", "test_heldout_centering"},
        says="fitted the SVD to M_train itself",
        id="not-centered",
    ),
    # A correct search over a heldout_error that keeps d - 1 (or d + 1) directions: Part C's cells
    # name the mistake and take its points; the best_dim cells pass, as Part D promises.
    "a correct best_dim over a heldout_error keeping d - 1 directions": Mistake(
        {
            "heldout_error": _held(
                prediction="mu + (U[:, : max(d - 1, 0)] * s[: max(d - 1, 0)]) @ Vt[: max(d - 1, 0)]"
            )
        },
        fails={"test_heldout_values", "test_heldout_centering", "test_heldout_edges"},
        says="kept d + 1 or d - 1 directions",
        id="rank-off-by-one",
    ),
    "a correct best_dim over a heldout_error keeping d + 1 directions": Mistake(
        {"heldout_error": _held(prediction="mu + (U[:, : d + 1] * s[: d + 1]) @ Vt[: d + 1]")},
        fails={"test_heldout_values", "test_heldout_centering", "test_heldout_edges"},
        says="kept d + 1 or d - 1 directions",
        id="rank-off-by-one",
    ),
    # A constant heldout_error is no named mistake of Part C: a best_dim that returns its argmin
    # (0) does not earn Part D; the message says the search is right and sends it to Part C.
    "a correct best_dim over a constant heldout_error": Mistake(
        {
            "heldout_error": """
def heldout_error(M_train, M_val, d):
    return 1.0
"""
        },
        fails={
            "test_heldout_values",
            "test_heldout_centering",
            "test_heldout_edges",
            "test_best_dim_rank",
            "test_best_dim_edges",
        },
        says="heldout_error",  # Part D's cells add: "best_dim's search is right for your ..."
        id="heldout-error-carried-over",
    ),
    # A heldout_error that centres M_train in place (M_train -= mu): the caller's matrix changes.
    # Its own cells charge it (modified-input). Part D's cells excuse it: the reference best_dim
    # calls it, so best_dim changes M_train too and every call after the first sees a centred
    # M_train (best_dim returns the smallest of those errors, as held_curve_calls models).
    "centres M_train in place": Mistake(
        {
            "heldout_error": """
import numpy as np

def heldout_error(M_train, M_val, d):
    mu = M_train.mean()
    M_train -= mu                  # changes the caller's matrix
    U, s, Vt = np.linalg.svd(M_train, full_matrices=False)
    pred = mu + (U[:, :d] * s[:d]) @ Vt[:d]
    return float(np.mean((pred - M_val) ** 2))
"""
        },
        fails={"test_heldout_values", "test_heldout_centering", "test_heldout_edges"},
        says="modified its input (M_train)",
        id="modified-input",
    ),
    "argmax": Mistake(
        {"best_dim": _best("return int(np.argmax(errors(range(max_d + 1))))")},
        fails={"test_best_dim_rank", "test_best_dim_edges"},
        says="the largest held-out error",
        id="argmax-not-argmin",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "tied table counted twice"
