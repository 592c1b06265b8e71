"""Chapter 3 timing: four ways to accumulate N upstream rows into a (V, d) gradient, over N.

The buggy `G[ids] += g` is timed too: it is fast because it is wrong (one write per repeated id).
The numpy methods run on the CPU; the PyTorch ones on the GPU when torch sees one.
"""

from coursekit.timing import grading, report, sweep  # noqa: F401  (inlined above)

CH03_SIZES = dict(V=4_096, d=64, positions=(128, 512, 2_048, 8_192))


def ch03_methods(V: int, d: int):
    import numpy as np
    import torch

    def operands(n):
        rng = np.random.default_rng(0)
        return rng.integers(0, V, size=n), rng.standard_normal((n, d)).astype(np.float32)

    def buggy(n, device):
        ids, g = operands(n)

        def run():
            G = np.zeros((V, d), dtype=np.float32)
            G[ids] += g  # the trap: buffered, repeated ids keep one write
            return G

        return run, 4 * V * d

    def add_at(n, device):
        ids, g = operands(n)

        def run():
            G = np.zeros((V, d), dtype=np.float32)
            np.add.at(G, ids, g)  # unbuffered: every occurrence is added
            return G

        return run, 4 * V * d

    def index_add(n, device):
        ids, g = (torch.from_numpy(a).to(device) for a in operands(n))
        return (lambda: torch.zeros(V, d, device=device).index_add_(0, ids, g)), 4 * V * d

    def one_hot(n, device):
        ids, g = (torch.from_numpy(a).to(device) for a in operands(n))
        S = torch.nn.functional.one_hot(ids, V).to(g.dtype)  # (N, V), built outside the timing
        return (lambda: S.T @ g), 4 * (n * V + V * d)

    return {
        "np.add.at (CPU)": add_at,
        "buggy G[ids] += g (CPU)": buggy,
        "torch index_add_": index_add,
        "one-hot S^T G (torch)": one_hot,
    }


def timing(sizes=CH03_SIZES, min_run_time=0.15):
    """Time and plot the four methods on this machine; nothing happens under nbgrader."""
    if grading():
        print("Timing is skipped while nbgrader validates or grades this notebook.")
        return None
    result = sweep(
        sizes["positions"], ch03_methods(sizes["V"], sizes["d"]), min_run_time=min_run_time
    )
    report(
        result,
        xlabel="positions N (rows of upstream gradient)",
        xname="N",
        baseline="torch index_add_",
        compare=["np.add.at (CPU)", "buggy G[ids] += g (CPU)", "one-hot S^T G (torch)"],
        title=f"accumulating N rows into a ({sizes['V']:,}, {sizes['d']}) float32 gradient",
    )
    return result
