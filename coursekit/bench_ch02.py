"""Chapter 2 timing: PyTorch's own embedding backward against the one-hot form S^T G, over V."""

from coursekit.timing import Method, accumulate_methods, run_chapter, scatter_add_cost  # noqa: F401  (inlined above)

CH02_SIZES = dict(n_tokens=512, d=64, vocab=(1_000, 4_000, 16_000, 65_536))


def ch02_methods(n_tokens: int, d: int) -> list:
    index_add, one_hot = accumulate_methods(lambda V: (n_tokens, V, d))

    def torch_backward(V, device):
        # The kernel autograd runs for F.embedding / nn.Embedding (padding_idx -1 means none).
        import torch

        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, V, (n_tokens,), generator=g).to(device)
        G = torch.randn(n_tokens, d, generator=g).to(device)  # upstream gradients, (N, d)
        return lambda: torch.ops.aten.embedding_dense_backward(G, ids, V, -1, False)

    cost = lambda V: scatter_add_cost(n_tokens, V, d, calls=1)  # noqa: E731  (zeros + add inside)
    return [Method("torch embedding backward", cost, torch_backward), one_hot, index_add]


def timing(sizes=CH02_SIZES, min_run_time=0.1):
    """Time, predict and plot the formulations on this machine; nothing happens under nbgrader."""
    title = f"gradient of a (V, {sizes['d']}) float32 table from {sizes['n_tokens']} upstream rows"
    methods = ch02_methods(sizes["n_tokens"], sizes["d"])
    return run_chapter(
        sizes["vocab"], methods, "V", "vocabulary size V", title, min_run_time=min_run_time
    )
