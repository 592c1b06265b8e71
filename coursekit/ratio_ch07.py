"""Chapter 7's reading of the predicted time ratio of the one-hot product to the gather, done
from whatever calibration the run measured. The page asserts these claims on its own run, and
tests/test_ch07_ratio.py holds them over a grid of calibrations, so no machine's speed can make
the page's build fail.

With bandwidth B and the product's rate r (chapter 1's model), N ids into a (V, d) table:

* the gather moves 8N(d + 1) bytes: it takes 8N(d + 1)/B;
* the one-hot product reads the (N, V) one-hot matrix and the table and writes (N, d): it takes
  max(4(NV + Vd + Nd)/B, 2NVd/r). It is compute-bound when d > about 2r/B.

Compute-bound, the ratio is V B/(4r) d/(d + 1): V alone, as d cancels. Memory-bound (small d),
it is about V/(2(d + 1)): reading the one-hot matrix costs the same whatever d is, so the ratio
falls as d grows at a fixed V. The call overhead (added to both) pulls the ratio towards 1.
"""

SLOW, FAST = "one_hot(ids) @ E", "gather E[ids]"


def regimes(result, slow: str = SLOW, fast: str = FAST) -> list:
    """One dict per point of a chapter-7 timing result (in its V * d order): V, d, the predicted
    ratio, whether the product is compute-bound, whether the point is "clean" (compute-bound and
    the overhead at most a tenth of the gather's memory time, where the ratio is near its limit),
    and the limit V B / (4 r)."""
    cal = result["calibration"]
    bw, overhead = cal["bandwidth"], cal["overhead"]
    rate = cal["rates"][cal["rate_of"][slow]]
    pairs = zip(
        result["costs"][slow],
        result["costs"][fast],
        result["predicted"][slow],
        result["predicted"][fast],
        strict=True,
    )
    rows = []
    for c, g, t_slow, t_fast in pairs:
        _, V, d = c.shape
        compute_bound = c.flops / rate > c.moved / bw
        rows.append(
            dict(
                V=V,
                d=d,
                ratio=t_slow / t_fast,
                compute_bound=compute_bound,
                clean=compute_bound and overhead <= 0.1 * g.moved / bw,
                limit=V * bw / (4 * rate),
            )
        )
    return rows


def d_star(result, slow: str = SLOW) -> float:
    """About how wide a table must be for the product to be compute-bound: 2 r / B."""
    cal = result["calibration"]
    return 2 * cal["rates"][cal["rate_of"][slow]] / cal["bandwidth"]


def check_claims(result, slow: str = SLOW, fast: str = FAST) -> list:
    """Assert what the page says about the predicted ratio; return regimes(result).

    * at the clean points it is within 20% below V B/(4r), and so (nearly) rises with V: where
      a larger table (in the plotted V * d) has a quarter fewer rows, it has the smaller ratio;
    * at a memory-bound point it is at most (V(1 + d/N) + d)/(2(d + 1)), about V/(2d) for d much
      less than N: the one-hot read, not the product's work, sets it.
    """
    rows = regimes(result, slow, fast)
    clean = sorted((r for r in rows if r["clean"]), key=lambda r: r["V"])
    for r in clean:
        assert 0.8 * r["limit"] <= r["ratio"] <= r["limit"], r
    assert all(b["ratio"] >= 0.9 * a["ratio"] for a, b in zip(clean, clean[1:], strict=False)), (
        clean
    )
    n = result["costs"][slow][0].shape[0]
    for r in rows:
        if not r["compute_bound"]:
            V, d = r["V"], r["d"]
            assert r["ratio"] <= (V * (1 + d / n) + d) / (2 * (d + 1)), r
    return rows
