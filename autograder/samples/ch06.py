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


_LOSS = """
import math
import numpy as np

def initial_loss(E, W, ids, targets):
    x, y = np.ravel(ids), np.ravel(targets)
    Z = E[x].astype(np.float64) @ W.astype(np.float64).T
    m = Z.max(axis=1)
    return float(np.mean(m + np.log(np.exp(Z - m[:, None]).sum(axis=1)) - Z[np.arange(x.size), y]))
"""


def _loss(body: str) -> str:
    """An initial_loss whose per-position losses `per` (from the stable log-softmax `logp`) are
    reduced by ``body``."""
    return f"""
import math
import numpy as np

def initial_loss(E, W, ids, targets):
    ids, targets = np.asarray(ids), np.asarray(targets)
    Z = E[ids.reshape(-1)].astype(np.float64) @ W.astype(np.float64).T
    Z = Z - Z.max(axis=1, keepdims=True)
    logp = Z - np.log(np.exp(Z).sum(axis=1, keepdims=True))
    per = -logp[np.arange(ids.size), targets.reshape(-1)].reshape(ids.shape)
    {body}
"""


# A scale_for_initial_loss with its own correct loss: a sample with a wrong initial_loss keeps
# this one, so that it fails only initial_loss's cells.
_OWN_SCALE = """
import math
import numpy as np

def scale_for_initial_loss(E, W, ids, targets, tol=0.1):
    x, y = np.ravel(ids), np.ravel(targets)
    H, Wd, log_V = E[x].astype(np.float64), W.astype(np.float64), math.log(W.shape[0])

    def out(s):
        Z = s * H @ Wd.T
        m = Z.max(axis=1)
        loss = np.mean(m + np.log(np.exp(Z - m[:, None]).sum(axis=1)) - Z[np.arange(x.size), y])
        return abs(loss - log_V) > tol

    lo, hi = 0.0, 1e-3
    while not out(hi):  # the first scale out of the band, by doubling: the last one in is lo
        lo, hi = hi, 2 * hi
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if out(mid) else (mid, hi)
    return (lo + hi) / 2
"""


def _scale(inside: str, E: str = "E", W: str = "W", grid: str = "") -> str:
    """A scale_for_initial_loss that keeps a scale when ``inside`` (of loss, log_V, tol) holds,
    scanning outwards by doubling and bisecting the last step (or walking a fixed ``grid``)."""
    search = (
        f"""    s = 0.0
    for t in np.arange(0.0, 50.0, {grid}):
        if not inside(t):
            return float(s)
        s = t
    return float(s)"""
        if grid
        else """    lo, hi = 0.0, 1e-3
    while inside(hi):
        lo, hi = hi, 2 * hi
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if inside(mid) else (lo, mid)
    return (lo + hi) / 2"""
    )
    return f"""
import math
import numpy as np

def scale_for_initial_loss(E, W, ids, targets, tol=0.1):
    log_V = math.log(W.shape[0])

    def inside(s):
        loss = initial_loss(s * {E}, {W}, ids, targets)
        return {inside}

{search}
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
        "initial_loss": """
import numpy as np

def initial_loss(E, W, ids, targets):
    Z = E[np.ravel(ids)] @ W.T                          # (N, V)
    lse = np.logaddexp.reduce(Z, axis=1)                 # stable log-sum-exp
    return float(np.mean(lse - Z[np.arange(Z.shape[0]), np.ravel(targets)]))
""",
        "scale_for_initial_loss": _OWN_SCALE,
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
        "initial_loss": """
import math
import numpy as np

def initial_loss(E, W, ids, targets):
    # the chapter-1 view: one-hot rows select the table's rows, S @ E
    x, y = np.asarray(ids).ravel(), np.asarray(targets).ravel()
    S = (x[:, None] == np.arange(E.shape[0])).astype(np.float64)   # (N, V)
    Z = (S @ E) @ W.T
    per = [math.log(np.exp(z - z.max()).sum()) + z.max() - z[t] for z, t in zip(Z, y)]
    return sum(per) / len(per)
""",
        "scale_for_initial_loss": """
import math
import numpy as np

def scale_for_initial_loss(E, W, ids, targets, tol=0.1):
    log_V = math.log(W.shape[0])
    inside = lambda s: abs(initial_loss(s * E, W, ids, targets) - log_V) <= tol
    hi = 1.0
    while inside(hi):
        hi *= 2
    lo = 0.0
    for _ in range(4):  # a grid of 20 steps, refined around the first step that leaves the band
        grid = np.linspace(lo, hi, 21)
        k = next(i for i, s in enumerate(grid) if not inside(s))
        lo, hi = grid[k - 1], grid[k]
    return float((lo + hi) / 2)
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
        "initial_loss": """
import numpy as np

def initial_loss(E, W, ids, targets):
    H = np.take(E, np.asarray(ids).ravel(), axis=0)
    Z = np.einsum("vd,nd->nv", W, H).astype(np.float64)
    Z -= Z.max(axis=1, keepdims=True)
    log_softmax = Z - np.log(np.sum(np.exp(Z), axis=1, keepdims=True))
    picked = np.take_along_axis(log_softmax, np.asarray(targets).reshape(-1, 1), axis=1)
    return -float(picked.mean())
""",
        "scale_for_initial_loss": """
import math

def scale_for_initial_loss(E, W, ids, targets, tol=0.1):
    log_V = math.log(W.shape[0])
    f = lambda s: abs(initial_loss(s * E, W, ids, targets) - log_V) - tol
    step, s = 0.01, 0.0
    while f(s + step) <= 0:       # walk out in steps of 0.01 ...
        s += step
    a, b = s, s + step           # ... then regula falsi (Illinois) between the last two
    fa, fb = f(a), f(b)
    for _ in range(60):
        c = b - fb * (b - a) / (fb - fa)
        fc = f(c)
        if abs(fc) < 1e-12 or abs(b - a) < 1e-12:
            return c
        if fc * fb < 0:
            a, fa = b, fb
        else:
            fa /= 2
        b, fb = c, fc
    return b
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
        fails={"test_init_embedding"},
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
        fails={"test_init_embedding"},
        says="as the variance",
        id="variance-for-std",
    ),
    "transformer std 1/d": Mistake(
        {"init_embedding": _init("1.0 / d")},
        fails={"test_init_embedding"},
        says="std 1/d",
        id="std-one-over-d",
    ),
    "V instead of d": Mistake(
        {"init_embedding": _init("1.0 / math.sqrt(V)")},
        fails={"test_init_embedding"},
        says="vocabulary size V",
        id="v-for-d",
    ),
    "float64 table": Mistake(
        {"init_embedding": _init("d ** -0.5", draw="rng.normal(0.0, sigma, size=(V, d))")},
        fails={"test_init_embedding"},
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
        fails={"test_init_embedding"},
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
        fails={"test_init_embedding"},
        says="look uniform",
        id="uniform-not-normal",
    ),
    "rng.random": Mistake(
        {
            "init_embedding": _init(
                "d ** -0.5", draw="(sigma * rng.random((V, d))).astype(np.float32)"
            )
        },
        fails={"test_init_embedding"},
        says="rng.random",
        id="uniform-draws",
    ),
    "global np.random instead of rng": Mistake(
        {
            "init_embedding": _init(
                "d ** -0.5", draw="(sigma * np.random.standard_normal((V, d))).astype(np.float32)"
            )
        },
        fails={"test_init_embedding"},
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
        fails={"test_init_embedding"},
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
    "loss in bits (log2)": Mistake(
        {
            "initial_loss": _loss("return float(np.mean(per) / math.log(2))"),
            "scale_for_initial_loss": _OWN_SCALE,
        },
        fails={"test_initial_loss_values", "test_initial_loss_batch", "test_initial_loss_large"},
        says="in bits",
        id="log2-loss",
    ),
    # The same mistake with the reference search, which calls it: the search is right for the
    # student's own loss in bits, so Part D excuses it (Part C charges the mistake, once).
    "loss in bits (log2), used by the scale search": Mistake(
        {"initial_loss": _loss("return float(np.mean(per) / math.log(2))")},
        fails={"test_initial_loss_values", "test_initial_loss_batch", "test_initial_loss_large"},
        says="in bits",
        id="log2-loss",
    ),
    "summed over positions": Mistake(
        {"initial_loss": _loss("return float(np.sum(per))"), "scale_for_initial_loss": _OWN_SCALE},
        fails={"test_initial_loss_values", "test_initial_loss_batch", "test_initial_loss_large"},
        says="summed the per-position losses",
        id="sum-over-positions",
    ),
    # Summed, with the reference search: on a table of zeros that loss is N log V, out of the
    # band at s = 0, and the reference search returns 0 for it: right for that loss, so Part D
    # excuses it (Part C charges the mistake, once).
    "summed over positions, used by the scale search": Mistake(
        {"initial_loss": _loss("return float(np.sum(per))")},
        fails={"test_initial_loss_values", "test_initial_loss_batch", "test_initial_loss_large"},
        says="summed the per-position losses",
        id="sum-over-positions",
    ),
    "mean over the batch axis only": Mistake(
        {
            "initial_loss": _loss("return float(per.reshape(per.shape[0], -1).sum(axis=1).mean())"),
            "scale_for_initial_loss": _OWN_SCALE,
        },
        fails={"test_initial_loss_batch"},
        says="averaged over the first axis only",
        id="mean-over-first-axis",
    ),
    "softmax without the max": Mistake(
        {
            "initial_loss": """
import numpy as np

def initial_loss(E, W, ids, targets):
    Z = E[np.ravel(ids)] @ W.T
    p = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    return float(-np.mean(np.log(p[np.arange(Z.shape[0]), np.ravel(targets)])))
""",
            "scale_for_initial_loss": _OWN_SCALE,
        },
        fails={"test_initial_loss_large"},
        says="subtract each row's largest logit",
        id="no-max-subtraction",
    ),
    # Exercise 5's global-max: one shift for every row. The x1000 example (equal row maxima)
    # passes; the example whose row maxima are far apart gives log(0) = -inf.
    "the batch's maximum subtracted, not each row's": Mistake(
        {
            "initial_loss": """
import numpy as np

def initial_loss(E, W, ids, targets):
    x, y = np.ravel(ids), np.ravel(targets)
    Z = E[x].astype(np.float64) @ W.astype(np.float64).T
    Z = Z - Z.max()   # one maximum for the whole batch
    return float(np.mean(np.log(np.exp(Z).sum(axis=1)) - Z[np.arange(x.size), y]))
""",
            "scale_for_initial_loss": _OWN_SCALE,
        },
        fails={"test_initial_loss_large"},
        says="one maximum for the whole batch was subtracted",
        id="global-max",
    ),
    "only the upper edge of the band": Mistake(
        {"scale_for_initial_loss": _scale("loss <= log_V + tol")},
        fails={"test_scale_band", "test_scale_tolerance"},
        says="the band is two-sided",
        id="one-sided-band",
    ),
    # Brackets from s = 1 (double while the loss is in the band) but bisects on the upper edge
    # only: where the loss is already below log V - tol at s = 1, it returns about 1.
    "only the upper edge, bracketed from s = 1": Mistake(
        {
            "scale_for_initial_loss": """
import math

def scale_for_initial_loss(E, W, ids, targets, tol=0.1):
    log_V = math.log(W.shape[0])

    def gap(s):
        return initial_loss(s * E, W, ids, targets) - log_V

    hi = 1.0
    while abs(gap(hi)) < tol:
        hi *= 2.0
    lo = 0.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gap(mid) < tol else (lo, mid)
    return (lo + hi) / 2
"""
        },
        fails={"test_scale_band", "test_scale_tolerance"},
        says="the band is two-sided",
        id="one-sided-band",
    ),
    "the scale where the loss is log V": Mistake(
        {"scale_for_initial_loss": _scale("loss < log_V")},
        fails={"test_scale_values", "test_scale_band", "test_scale_tolerance"},
        says="a scale where the loss equals log V",
        id="targets-log-v-exactly",
    ),
    "W scaled too": Mistake(
        {"scale_for_initial_loss": _scale("abs(loss - log_V) <= tol", W="s * W")},
        fails={"test_scale_values", "test_scale_band", "test_scale_tolerance"},
        says="scaled W as well as E",
        id="scaled-both-tables",
    ),
    "a fixed grid of 0.001": Mistake(
        {"scale_for_initial_loss": _scale("abs(loss - log_V) <= tol", grid="0.001")},
        fails={"test_scale_values", "test_scale_band", "test_scale_tolerance"},
        says="not within the relative 1e-3",
        id="not-precise-enough",
    ),
    "the small-scale rule": Mistake(
        {
            "scale_for_initial_loss": """
import math
import numpy as np

def scale_for_initial_loss(E, W, ids, targets, tol=0.1):
    # loss ~ log V + s**2 Var(z) / 2 for small s: a logit std of sqrt(2 tol)
    Z = E[np.ravel(ids)] @ W.T
    return math.sqrt(2 * tol / Z.var(axis=1).mean())
"""
        },
        fails={"test_scale_values", "test_scale_band", "test_scale_tolerance"},
        says="small-scale expansion",
        id="small-scale-approximation",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "sqrt(d) multiplier in the table"
