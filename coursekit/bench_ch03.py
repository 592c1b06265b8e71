"""Chapter 3 timing: four ways to accumulate N upstream rows into a (V, d) gradient, over N.

The buggy `dE[ids] += g` is timed too: it is fast because it is wrong (one write per repeated id).
The numpy methods run on the CPU; the PyTorch ones on the GPU when torch sees one. The model
predicts only the PyTorch pair: numpy's np.add.at pays a fixed cost per id in numpy's generic
loop machinery, which neither the bytes nor the flops describe.
"""

from coursekit.timing import Method, accumulate_methods, run_chapter, scatter_add_cost  # noqa: F401  (inlined above)

CH03_SIZES = dict(V=4_096, d=64, positions=(128, 512, 2_048, 8_192))


def ch03_methods(V: int, d: int) -> list:
    index_add, one_hot = accumulate_methods(lambda n: (n, V, d))

    def numpy_method(accumulate):
        def build(n, device):
            import numpy as np

            rng = np.random.default_rng(0)
            ids, g = rng.integers(0, V, size=n), rng.standard_normal((n, d)).astype(np.float32)
            return lambda: accumulate(np.zeros((V, d), dtype=np.float32), ids, g)

        return build

    def buggy(dE, ids, g):
        dE[ids] += g  # the trap: buffered, repeated ids keep one write
        return dE

    def add_at(dE, ids, g):
        import numpy as np

        np.add.at(dE, ids, g)  # unbuffered: every occurrence is added
        return dE

    cost = lambda n: scatter_add_cost(n, V, d)  # noqa: E731  (counted as for index_add_)
    return [
        index_add._replace(label="torch index_add_"),
        Method("np.add.at (CPU)", cost, numpy_method(add_at), predicted=False),
        Method("buggy dE[ids] += g (CPU)", cost, numpy_method(buggy), predicted=False),
        one_hot._replace(label="one-hot S^T G (torch)"),
    ]


def timing(sizes=CH03_SIZES, min_run_time=0.1):
    """Time and plot the four methods on this machine; nothing happens under nbgrader."""
    title = f"accumulating N rows into a ({sizes['V']:,}, {sizes['d']}) float32 gradient"
    xlabel = "positions N (rows of upstream gradient)"
    methods = ch03_methods(sizes["V"], sizes["d"])
    return run_chapter(sizes["positions"], methods, "N", xlabel, title, min_run_time=min_run_time)
