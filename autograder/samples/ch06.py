"""Sample answers for exercise 6: correct alternatives (full credit) and classic mistakes."""

from . import Mistake

_ROW_REF = """
import math

def expected_row_length(d, sigma):
    return sigma * math.sqrt(2.0) * math.exp(math.lgamma((d + 1) / 2) - math.lgamma(d / 2))
"""


def _init(
    sigma_expr: str, draw: str = "rng.normal(0.0, sigma, size=(V, d)).astype(np.float32)"
) -> str:
    """An init_embedding that differs from a correct one only in the transformer's sigma or the draw."""
    return f"""
import math
import numpy as np

def init_embedding(V, d, scheme, rng):
    if scheme == "pytorch":
        sigma = 1.0
    elif scheme == "gpt2":
        sigma = 0.02
    elif scheme == "transformer":
        sigma = {sigma_expr}
    else:
        raise ValueError(scheme)
    return {draw}
"""


ALTERNATIVES = {
    "float32 standard normals times sigma; binomial-coefficient chi mean": {
        "init_embedding": """
import numpy as np

STD = {"pytorch": lambda d: 1.0, "gpt2": lambda d: 0.02, "transformer": lambda d: 1 / np.sqrt(d)}

def init_embedding(V, d, scheme, rng):
    if scheme not in STD:
        raise ValueError(f"no scheme {scheme}")
    z = rng.standard_normal((V, d), dtype=np.float32)
    return z * np.float32(STD[scheme](d))
""",
        # Exact integer arithmetic: Gamma(k + 1/2) / Gamma(k) = k * C(2k, k) * sqrt(pi) / 4**k.
        "expected_row_length": """
import math

def expected_row_length(d, sigma):
    k = d // 2
    if d % 2 == 0:   # Gamma(k + 1/2) / Gamma(k)
        ratio = k * math.comb(2 * k, k) / 4**k * math.sqrt(math.pi)
    else:            # Gamma(k + 1) / Gamma(k + 1/2)
        ratio = 4**k / math.comb(2 * k, k) / math.sqrt(math.pi)
    return sigma * math.sqrt(2) * ratio
""",
    },
    "one row at a time; the recurrence m(d+1) = d / m(d)": {
        "init_embedding": """
import math
import numpy as np

def init_embedding(V, d, scheme, rng):
    scales = {"pytorch": 1.0, "gpt2": 0.02, "transformer": 1.0 / math.sqrt(d)}
    if scheme not in scales:
        raise ValueError("scheme must be pytorch, gpt2 or transformer")
    E = np.empty((V, d), dtype=np.float32)
    for i in range(V):
        E[i] = rng.normal(loc=0.0, scale=scales[scheme], size=d)
    return E
""",
        # The chi mean m(d) of sigma = 1 satisfies m(d) * m(d + 1) = d.
        "expected_row_length": """
import math

def expected_row_length(d, sigma):
    m = math.sqrt(2 / math.pi)   # d = 1
    for k in range(1, d):
        m = k / m
    return sigma * m
""",
    },
    "Box-Muller from rng.random; gamma for small d, lgamma beyond": {
        "init_embedding": """
import numpy as np

def init_embedding(V, d, scheme, rng):
    if scheme == "pytorch":
        s = 1.0
    elif scheme == "gpt2":
        s = 0.02
    elif scheme == "transformer":
        s = d ** -0.5
    else:
        raise ValueError("unknown scheme")
    u1 = 1.0 - rng.random((V, d))          # in (0, 1]: log is safe
    u2 = rng.random((V, d))
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2 * np.pi * u2)
    return (s * z).astype(np.float32)
""",
        "expected_row_length": """
import math

def expected_row_length(d, sigma):
    if d < 300:
        return sigma * math.sqrt(2) * math.gamma((d + 1) / 2) / math.gamma(d / 2)
    return sigma * math.sqrt(2) * math.exp(math.lgamma((d + 1) / 2) - math.lgamma(d / 2))
""",
    },
}

MISTAKES = {
    "sqrt(d) multiplier in the table": Mistake(
        {
            "init_embedding": _init(
                "d ** -0.5 * math.sqrt(d)  # 'the Transformer multiplies by sqrt(d)'"
            )
        },
        fails={"test_init_scale"},
        says="belongs to the lookup",
        id="sqrt-d-in-table",
    ),
    "0.02 used as the variance": Mistake(
        {
            "init_embedding": """
import math
import numpy as np

def init_embedding(V, d, scheme, rng):
    var = {"pytorch": 1.0, "gpt2": 0.02, "transformer": 1.0 / d}
    if scheme not in var:
        raise ValueError(scheme)
    return rng.normal(0.0, np.sqrt(var[scheme]) if scheme != "gpt2" else np.sqrt(0.02), (V, d)).astype(np.float32)
"""
        },
        fails={"test_init_scale"},
        says="as the variance",
        id="variance-for-std",
    ),
    "transformer std 1/d": Mistake(
        {"init_embedding": _init("1.0 / d")},
        fails={"test_init_scale"},
        says="std 1/d",
        id="std-one-over-d",
    ),
    "V instead of d": Mistake(
        {"init_embedding": _init("1.0 / math.sqrt(V)")},
        fails={"test_init_scale"},
        says="vocabulary size V",
        id="v-for-d",
    ),
    "float64 table": Mistake(
        {"init_embedding": _init("d ** -0.5", draw="rng.normal(0.0, sigma, size=(V, d))")},
        fails={"test_init_contract"},
        says="should be float32",
        id="wrong-dtype",
    ),
    "unknown scheme falls back to pytorch": Mistake(
        {
            "init_embedding": """
import math
import numpy as np

def init_embedding(V, d, scheme, rng):
    sigma = {"gpt2": 0.02, "transformer": d ** -0.5}.get(scheme, 1.0)
    return rng.normal(0.0, sigma, size=(V, d)).astype(np.float32)
"""
        },
        fails={"test_init_contract"},
        says="should raise ValueError",
        id="scheme-not-checked",
    ),
    "uniform with the right std": Mistake(
        {
            "init_embedding": _init(
                "d ** -0.5",
                draw="rng.uniform(-sigma * 3 ** 0.5, sigma * 3 ** 0.5, size=(V, d)).astype(np.float32)",
            )
        },
        fails={"test_init_distribution"},
        says="look uniform",
        id="uniform-not-normal",
    ),
    "rng.random": Mistake(
        {
            "init_embedding": _init(
                "d ** -0.5", draw="(sigma * rng.random((V, d))).astype(np.float32)"
            )
        },
        fails={"test_init_scale", "test_init_distribution"},
        says="rng.random",
        id="uniform-draws",
    ),
    "global np.random instead of rng": Mistake(
        {
            "init_embedding": _init(
                "d ** -0.5", draw="(sigma * np.random.standard_normal((V, d))).astype(np.float32)"
            )
        },
        fails={"test_init_uses_rng"},
        says="same seed",
        id="global-rng",
    ),
    "a fixed seed inside": Mistake(
        {
            "init_embedding": _init(
                "d ** -0.5",
                draw="np.random.default_rng(0).normal(0.0, sigma, (V, d)).astype(np.float32)",
            )
        },
        fails={"test_init_uses_rng"},
        says="ignores the rng argument",
        id="fixed-seed",
    ),
    "sqrt(d) * sigma approximation": Mistake(
        {
            "expected_row_length": "import math\n\ndef expected_row_length(d, sigma):\n    return math.sqrt(d) * sigma\n"
        },
        fails={"test_row_length_small_d", "test_row_length_large_d"},
        says="approximation sqrt(d) * sigma",
        id="sqrt-d-approximation",
    ),
    "math.gamma overflows": Mistake(
        {
            "expected_row_length": "import math\n\ndef expected_row_length(d, sigma):\n"
            "    return sigma * math.sqrt(2) * math.gamma((d + 1) / 2) / math.gamma(d / 2)\n"
        },
        fails={"test_row_length_large_d"},
        says="Take the ratio in logarithms: subtract first, then exp once",
        id="gamma-overflow",
    ),
    # lgamma is taken, but exp comes before the division: exp(lgamma(x)) is Gamma(x), which
    # overflows exactly where math.gamma does (OverflowError from math.exp once d >= 343)
    "exp of each lgamma, then their ratio": Mistake(
        {
            "expected_row_length": "import math\n\ndef expected_row_length(d, sigma):\n"
            "    top = math.exp(math.lgamma((d + 1) / 2))\n"
            "    return sigma * math.sqrt(2) * top / math.exp(math.lgamma(d / 2))\n"
        },
        fails={"test_row_length_large_d"},
        says="exp(lgamma(a)) / exp(lgamma(b)) overflows like gamma(a) / gamma(b)",
        id="gamma-overflow",
    ),
    # Exact Gamma functions while they fit a float (d <= 171), an asymptotic series above: the
    # series is off by up to 8e-9 for 172 <= d < 343, more than the 1e-9 the exercise asks for.
    "math.gamma up to d = 171, a series above": Mistake(
        {
            "expected_row_length": """import math

def expected_row_length(d, sigma):
    if d <= 171:
        return sigma * math.sqrt(2) * math.gamma((d + 1) / 2) / math.gamma(d / 2)
    return sigma * math.sqrt(d) * (1 - 1 / (4 * d) + 1 / (32 * d * d))
"""
        },
        fails={"test_row_length_large_d"},
        says="not within the relative 1e-9 the exercise asks for",
        id="not-exact-enough",
    ),
    "squared length": Mistake(
        {"expected_row_length": "def expected_row_length(d, sigma):\n    return d * sigma ** 2\n"},
        fails={"test_row_length_small_d", "test_row_length_large_d"},
        says="squared length",
        id="squared-length",
    ),
    "sigma forgotten": Mistake(
        {"expected_row_length": _ROW_REF.replace("return sigma * ", "return ")},
        fails={"test_row_length_small_d", "test_row_length_large_d"},
        says="ignored sigma",
        id="no-sigma",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "sqrt(d) multiplier in the table"
