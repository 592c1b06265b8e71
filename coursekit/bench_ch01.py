"""Chapter 1 timing: the gather E[ids] against the one-hot matmul one_hot(ids) @ E, over V."""

from coursekit.timing import Cost, Method, lookup_methods, lookup_operands, run_chapter  # noqa: F401  (inlined: these are defined above)

CH01_SIZES = dict(n_tokens=512, d=64, vocab=(1_000, 4_000, 16_000, 65_536))


def ch01_methods(n_tokens: int, d: int) -> list:
    gather, product = lookup_methods(lambda V: (n_tokens, V, d))

    def build_one_hot(V, device):
        import torch.nn.functional as F

        E, ids = lookup_operands(V, d, n_tokens, device)
        return lambda: F.one_hot(ids, V).to(E.dtype)

    def one_hot_cost(V):
        # int64 zeros written, read again by .to(float32), which writes the float32 copy
        return Cost(operand=4 * n_tokens * V, moved=(8 + 8 + 4) * n_tokens * V, calls=2)

    return [gather, Method("build one_hot(ids)", one_hot_cost, build_one_hot), product]


def timing(sizes=CH01_SIZES, min_run_time=0.15):
    """Time, predict and plot the formulations on this machine; nothing happens under nbgrader."""
    title = f"{sizes['n_tokens']} lookups into a (V, {sizes['d']}) float32 table"
    methods = ch01_methods(sizes["n_tokens"], sizes["d"])
    return run_chapter(
        sizes["vocab"], methods, "V", "vocabulary size V", title, min_run_time=min_run_time
    )
