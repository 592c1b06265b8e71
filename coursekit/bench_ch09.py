"""Chapter 9 timing: F.embedding(ids, E), the float32 lookup that PyTorch's quantized lookups
replace, is the baseline (the first method: every ratio is to it); beside it the gather E[ids]
(on a CPU, its advanced indexing costs more per call than F.embedding's index_select), the
dequantizing gathers of the same table stored row-wise in 8 and 4 bits, and the one-hot product,
over V.

The quantized tables are PyTorch's own fused row-wise formats (``quantized::embedding_bag_byte``
and ``_4bit``: each row holds its codes, then its scale and offset; FBGEMM's layout), looked up by
PyTorch's fused kernels with one id per bag, which gather a row and dequantize it in one pass. The
tables are quantized on the CPU and moved to the device; a device without those kernels times
them on the CPU.
"""

from coursekit.timing import Cost, Method, gather_cost, lookup_methods, lookup_operands, run_chapter  # noqa: F401  (inlined: these are defined above)

CH09_SIZES = dict(n_tokens=512, d=64, vocab=(1_000, 4_000, 16_000, 65_536))


def fused_row_bytes(d: int, bits: int) -> int:
    """Bytes of one fused row, FBGEMM's layout: the codes (packed 8 // bits to a byte), then a
    float32 scale and offset for 8 bits, float16 ones for 4 and 2. Other bit widths (3, say) have
    no such format: ValueError."""
    if bits not in (8, 4, 2):
        raise ValueError(f"FBGEMM's fused row-wise formats have 8, 4 or 2 bits, not {bits!r}")
    if bits == 8:
        return d + 8
    per = 8 // bits
    return (d + per - 1) // per + 4


def dequantizing_gather(bits: int, n_tokens: int, d: int) -> Method:
    """The fused lookup of a row-wise quantized table: read N packed rows, write N float32 rows."""
    row = fused_row_bytes(d, bits)

    def build(V, device):
        import torch

        E, ids = lookup_operands(V, d, n_tokens, "cpu")
        q = torch.ops.quantized
        pack = q.embedding_bag_byte_prepack if bits == 8 else q.embedding_bag_4bit_prepack
        look = (
            q.embedding_bag_byte_rowwise_offsets
            if bits == 8
            else q.embedding_bag_4bit_rowwise_offsets
        )
        packed, offsets = pack(E), torch.arange(n_tokens)  # one id per bag: a plain lookup
        try:
            args = [t.to(device) for t in (packed, ids, offsets)]
            look(*args, False, 0, False, None, None, False)
        except (NotImplementedError, RuntimeError):  # no such kernel on this device
            args = [packed, ids, offsets]
        return lambda: look(*args, False, 0, False, None, None, False)

    def cost(V):  # the packed rows, the ids and the offsets read; N float32 rows written
        moved = n_tokens * row + 16 * n_tokens + 4 * n_tokens * d
        return Cost(operand=V * row, moved=moved, fresh=4 * n_tokens * d)

    return Method(f"dequantizing gather ({bits}-bit rows)", cost, build)


def embedding_gather(n_tokens: int, d: int) -> Method:
    """F.embedding(ids, E): the same bytes as E[ids], through index_select."""

    def build(V, device):
        import torch.nn.functional as F

        E, ids = lookup_operands(V, d, n_tokens, device)
        return lambda: F.embedding(ids, E)

    return Method("F.embedding(ids, E)", lambda V: gather_cost(n_tokens, V, d), build)


def ch09_methods(n_tokens: int, d: int) -> list:
    """F.embedding first: the production lookup is the baseline every ratio is taken against."""
    gather, product = lookup_methods(lambda V: (n_tokens, V, d))
    return [
        embedding_gather(n_tokens, d),
        gather,
        dequantizing_gather(8, n_tokens, d),
        dequantizing_gather(4, n_tokens, d),
        product,
    ]


def timing(sizes=CH09_SIZES, min_run_time=0.1):
    """Time, predict and plot the formulations on this machine; nothing happens under nbgrader."""
    title = (
        f"{sizes['n_tokens']} lookups into a (V, {sizes['d']}) table: float32, 8-bit, 4-bit rows"
    )
    methods = ch09_methods(sizes["n_tokens"], sizes["d"])
    return run_chapter(
        sizes["vocab"], methods, "V", "vocabulary size V", title, min_run_time=min_run_time
    )
