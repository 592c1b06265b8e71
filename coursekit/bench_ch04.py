"""Chapter 4 timing, over V: the fused F.embedding_bag against the unfused gather + segment sum
that it replaces (F.embedding, then index_add_ by bag), and the backward pass of the bag with a
dense gradient against sparse=True. The bags have different sizes, as real bags do."""

from coursekit.timing import Cost, Method, run_chapter  # noqa: F401  (inlined: these are defined above)

CH04_SIZES = dict(n_bags=512, bag_len=20, d=64, vocab=(1_000, 4_000, 16_000, 65_536))


def bag_sizes(B: int, L: int) -> list:
    """B bag sizes from 1 to 2L - 1, spread evenly (mean about L), the same on every machine."""
    return [1 + (7 * b) % (2 * L - 1) for b in range(B)]


def bag_operands(V: int, B: int, L: int, d: int, device):
    """A seeded (V, d) table, the flat ids and offsets of bag_sizes(B, L), the bag of every
    position, the sizes as a (B, 1) float column and an upstream gradient Q of shape (B, d)."""
    import torch

    g = torch.Generator().manual_seed(0)
    sizes = torch.tensor(bag_sizes(B, L))
    E = torch.randn(V, d, generator=g)
    ids = torch.randint(0, V, (int(sizes.sum()),), generator=g)
    Q = torch.randn(B, d, generator=g)
    offsets = torch.cumsum(sizes, 0) - sizes
    bag_of = torch.repeat_interleave(torch.arange(B), sizes)
    column = sizes.to(E.dtype)[:, None]
    return [t.to(device) for t in (E, ids, offsets, bag_of, column, Q)]


def bag_cost(V: int, N: int, B: int, d: int) -> Cost:
    """F.embedding_bag: read N rows and ids and the B offsets, write B means."""
    return Cost(4 * V * d, 4 * N * d + 8 * N + 4 * B * d + 8 * B, N * d, fresh=4 * B * d)


def unfused_cost(V: int, N: int, B: int, d: int) -> Cost:
    """F.embedding writes the N rows out; zeros(B, d); index_add_ reads them and the N bag
    indices and reads and writes their B target rows; the division reads and writes B rows."""
    gather = 4 * N * d + 8 * N + 4 * N * d
    moved = gather + 4 * B * d + 4 * N * d + 8 * N + 8 * N * d + 8 * B * d
    return Cost(4 * V * d + 4 * N * d, moved, N * d + B * d, calls=4, fresh=4 * N * d + 8 * B * d)


def backward_cost(V: int, N: int, B: int, d: int, sparse: bool) -> Cost:
    """The forward, then the backward: read Q; dense, a zero (V, d) gradient and N rows added
    into it; sparse, N value rows and their N ids written, whatever V is."""
    fwd = bag_cost(V, N, B, d)
    if sparse:
        extra, fresh = 4 * B * d + 4 * N * d + 8 * N, 4 * N * d + 8 * N
    else:
        extra, fresh = 4 * B * d + 4 * V * d + 8 * N * d + 8 * N, 4 * V * d
    return Cost(2 * fwd.operand, fwd.moved + extra, fwd.flops + N * d, 3, fresh=fwd.fresh + fresh)


def ch04_methods(B: int, L: int, d: int) -> list:
    N = sum(bag_sizes(B, L))

    def fused(V, device):
        import torch.nn.functional as F

        E, ids, offsets, *_ = bag_operands(V, B, L, d, device)
        return lambda: F.embedding_bag(ids, E, offsets, mode="mean")

    def unfused(V, device):
        import torch
        import torch.nn.functional as F

        E, ids, _, bag_of, column, _ = bag_operands(V, B, L, d, device)
        zeros = lambda: torch.zeros(B, d, device=E.device)  # noqa: E731
        return lambda: zeros().index_add_(0, bag_of, F.embedding(ids, E)) / column

    def training(sparse):
        def build(V, device):
            import torch.nn.functional as F

            E, ids, offsets, *_, Q = bag_operands(V, B, L, d, device)
            E.requires_grad_(True)

            def step():
                E.grad = None  # a fresh gradient each call, as after zero_grad(set_to_none=True)
                F.embedding_bag(ids, E, offsets, mode="mean", sparse=sparse).backward(Q)

            return step

        return build

    dense, sparse = (lambda V, s=s: backward_cost(V, N, B, d, s) for s in (False, True))
    return [
        Method("F.embedding_bag", lambda V: bag_cost(V, N, B, d), fused),
        Method("F.embedding + index_add_", lambda V: unfused_cost(V, N, B, d), unfused),
        Method("fwd + bwd, dense grad", dense, training(False)),
        Method("fwd + bwd, sparse=True", sparse, training(True)),
    ]


def timing(sizes=CH04_SIZES, min_run_time=0.1):
    """Time, predict and plot the four methods on this machine; nothing happens under nbgrader."""
    B, L, d = sizes["n_bags"], sizes["bag_len"], sizes["d"]
    title = f"mean of {B} bags of 1 to {2 * L - 1} ids from a (V, {d}) float32 table"
    return run_chapter(
        sizes["vocab"],
        ch04_methods(B, L, d),
        "V",
        "vocabulary size V",
        title,
        min_run_time=min_run_time,
    )
