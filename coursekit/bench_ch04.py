"""Chapter 4 timing: F.embedding_bag (gather + segment mean) against the bag-count matrix
(B x V) @ E, over V. The bags all have the same length here, so the count matrix is built from
the (B, L) grid of ids and needs no offsets."""

from coursekit.timing import Cost, Method, matmul_cost, run_chapter  # noqa: F401  (inlined: these are defined above)

CH04_SIZES = dict(n_bags=512, bag_len=20, d=64, vocab=(1_000, 4_000, 16_000, 65_536))


def ch04_methods(B: int, L: int, d: int) -> list:
    def operands(V, device):
        import torch

        g = torch.Generator().manual_seed(0)
        E = torch.randn(V, d, generator=g).to(device)
        grid = torch.randint(0, V, (B, L), generator=g).to(device)  # bag b = grid[b]
        return E, grid, torch.arange(0, B * L, L, device=device)

    def count_matrix(E, grid, V):
        import torch

        # entry (b, i): how often id i occurs in bag b, over the bag length (B, V)
        C = torch.zeros(B, V, device=E.device, dtype=E.dtype)
        return C.scatter_add_(1, grid, torch.ones_like(grid, dtype=E.dtype)) / L

    def embedding_bag(V, device):
        import torch.nn.functional as F

        E, grid, offsets = operands(V, device)
        return lambda: F.embedding_bag(grid.reshape(-1), E, offsets, mode="mean")

    def build_counts(V, device):
        E, grid, _ = operands(V, device)
        return lambda: count_matrix(E, grid, V)

    def counts_matmul(V, device):
        E, grid, _ = operands(V, device)
        C = count_matrix(E, grid, V)  # built once, outside the timed call
        return lambda: C @ E

    def bag(V):  # read B L rows and ids, write B means
        return Cost(
            4 * V * d, 4 * B * L * d + 8 * B * L + 4 * B * d + 8 * B, B * L * d, fresh=4 * B * d
        )

    def counts(V):  # zeros (B x V), scatter B L ones, divide into a new (B x V)
        return Cost(4 * B * V, 3 * 4 * B * V + 12 * B * L, B * L + B * V, calls=4, fresh=8 * B * V)

    return [
        Method("F.embedding_bag", bag, embedding_bag),
        Method("build counts (B x V)", counts, build_counts),
        Method("counts (B x V) @ E", lambda V: matmul_cost(B, V, d), counts_matmul),
    ]


def timing(sizes=CH04_SIZES, min_run_time=0.1):
    """Time, predict and plot the formulations on this machine; nothing happens under nbgrader."""
    B, L, d = sizes["n_bags"], sizes["bag_len"], sizes["d"]
    title = f"mean of {B} bags of {L} ids from a (V, {d}) float32 table"
    return run_chapter(
        sizes["vocab"],
        ch04_methods(B, L, d),
        "V",
        "vocabulary size V",
        title,
        min_run_time=min_run_time,
    )
