"""Chapter 5 timing: where a tied bigram model's forward time goes, over V.

The input path is a gather E[x] (or, the same numbers, the one-hot product one_hot(x) @ E); the
output path is the dense logits H @ E.T, one dot product per (position, token) pair, which no
indexing trick avoids. The table is the same for both paths: that is weight tying.
"""

from coursekit.timing import grading, report, sweep  # noqa: F401  (inlined: these are defined above)

CH05_SIZES = dict(n_tokens=512, d=64, vocab=(1_000, 4_000, 16_000, 65_536))


def ch05_methods(n_tokens: int, d: int):
    import torch
    import torch.nn.functional as F

    def operands(V, device):
        g = torch.Generator().manual_seed(0)
        E = torch.randn(V, d, generator=g).to(device)
        x = torch.randint(0, V, (n_tokens,), generator=g).to(device)
        return E, x

    def gather(V, device):
        E, x = operands(V, device)
        return (lambda: E[x]), 4 * V * d

    def one_hot_matmul(V, device):
        E, x = operands(V, device)
        S = F.one_hot(x, V).to(E.dtype)  # built once, outside the timed call
        return (lambda: S @ E), 4 * (n_tokens * V + V * d)

    def logits(V, device):
        E, x = operands(V, device)
        H = E[x]  # (N, d): the looked-up rows, as in the bigram model
        return (lambda: H @ E.T), 4 * (n_tokens * V + V * d)

    return {
        "input: gather E[x]": gather,
        "input: one_hot(x) @ E": one_hot_matmul,
        "output: logits H @ E.T": logits,
    }


def timing(sizes=CH05_SIZES, min_run_time=0.1, repeats=2):
    """Time and plot the input and output paths on this machine; nothing happens under nbgrader.

    The sweep runs ``repeats`` times and keeps each point's fastest time (coursekit/timing.py).
    """
    if grading():
        print("Timing is skipped while nbgrader validates or grades this notebook.")
        return None
    methods = ch05_methods(sizes["n_tokens"], sizes["d"])
    result = sweep(sizes["vocab"], methods, min_run_time=min_run_time, repeats=repeats)
    report(
        result,
        xlabel="vocabulary size V",
        xname="V",
        baseline="input: gather E[x]",
        compare=["output: logits H @ E.T", "input: one_hot(x) @ E"],
        title=f"Tied bigram forward: {sizes['n_tokens']} tokens, a (V, {sizes['d']}) float32 table",
    )
    return result
