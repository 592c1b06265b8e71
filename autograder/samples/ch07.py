"""Sample answers for exercise 7: correct alternatives (full credit) and classic mistakes."""

from . import Mistake


def _cost(body: str) -> str:
    return "import math\n\ndef table_cost(V, d, tied, factor_m=None):\n" + body


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
        fails={"test_cost_bytes", "test_cost_python_ints"},
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
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "tied table counted twice"
