"""Sample answers for exercise 9: correct alternatives (full credit) and classic mistakes.

Each entry maps a function name to the complete source of a student's answer cell. Mistakes
list the test cells they must fail, a phrase the feedback must contain and the id grading records.
"""

from . import Mistake

QUANT_CELLS = {
    "test_quantize_8bit",
    "test_quantize_low_bits",
    "test_quantize_ties",
    "test_quantize_constant_rows",
    "test_quantize_types",
}

# A quantize_rows written from the docstring's arithmetic (a division by the scale, in float32),
# with one hook per classic mistake; each sample below passes its own variant of the pieces.
_QUANT = """
import numpy as np


def quantize_rows(E, bits=8):
    if bits not in (8, 4, 2):
        raise ValueError("bits must be 8, 4 or 2")
    E = np.asarray(E, dtype=np.float32)
    k = 2**bits - 1
    lo, hi = {minmax}
    if bits == 8:
        offset = lo
        scale = ((hi - lo) / np.float32({steps})).astype(np.float32)
        divisor = scale
    else:
        offset = lo.astype(np.float16)
        scale = ((hi - {origin}) / np.float32({steps})).astype(np.float16)
        {guard}
        divisor = scale.astype(np.float32)
    t = (E - {measure}[:, None]) / {safe}
    codes = {rounding}
    return {codes}, {scale_out}, {offset_out}
"""
_RIGHT = dict(
    minmax="E.min(axis=1), E.max(axis=1)",
    steps="k",
    origin="offset.astype(np.float32)",
    guard="scale[scale == 0] = 1",
    measure="offset.astype(np.float32)",
    safe="np.where(divisor > 0, divisor, 1)[:, None]",
    rounding="np.clip(np.rint(t), 0, k)",
    codes="codes.astype(np.uint8)",
    scale_out="scale",
    offset_out="offset",
)


def quant(**changes) -> str:
    return _QUANT.format(**{**_RIGHT, **changes})


ALTERNATIVES = {
    "loop over rows in float64, FBGEMM's 1e-8": {
        "quantize_rows": """
import numpy as np


def quantize_rows(E, bits=8):
    if bits not in (2, 4, 8):
        raise ValueError(f"unsupported bits {bits}")
    E = np.asarray(E, dtype=np.float32)
    V, d = E.shape
    codes = np.zeros((V, d), dtype=np.uint8)
    ptype = np.float32 if bits == 8 else np.float16
    scale, offset = np.zeros(V, ptype), np.zeros(V, ptype)
    k = 2**bits - 1
    for i in range(V):
        row = E[i].astype(np.float64)
        off = ptype(row.min())
        s = ptype((row.max() - float(off)) / k)
        if bits < 8 and s == 0:
            s = ptype(1.0)
        if bits == 8:
            t = (row - float(off)) * (k / (row.max() - row.min() + 1e-8))
        else:
            t = (row - float(off)) / float(s)
        codes[i] = np.clip(np.round(t), 0, k).astype(np.uint8)
        scale[i], offset[i] = s, off
    return codes, scale, offset
""",
        "dequantize_rows": """
def dequantize_rows(codes, scale, offset):
    out = np.empty(codes.shape, dtype=np.float32)
    for i in range(codes.shape[0]):
        out[i] = codes[i].astype(np.float32) * np.float32(scale[i]) + np.float32(offset[i])
    return out
""",
        "sharded_lookup": """
def sharded_lookup(shards, batches):
    starts = [0]
    for shard in shards:
        starts.append(starts[-1] + len(shard))
    out = []
    for ids in batches:
        rows = np.zeros((len(ids), shards[0].shape[1]), dtype=shards[0].dtype)
        for n, x in enumerate(ids):
            s = next(r for r in range(len(shards)) if starts[r] <= x < starts[r + 1])
            rows[n] = shards[s][x - starts[s]]
        out.append(rows)
    return out
""",
        "sharded_backward": """
def sharded_backward(shard_rows, batches, grads):
    starts = np.concatenate([[0], np.cumsum(shard_rows)])
    d, dtype = grads[0].shape[1], grads[0].dtype
    dE = [np.zeros((int(n), d), dtype=dtype) for n in shard_rows]
    for ids, g in zip(batches, grads):
        for n, x in enumerate(ids):
            s = int(np.searchsorted(starts, x, side="right")) - 1
            dE[s][x - starts[s]] += g[n]
    return dE
""",
    },
    "vectorised division with an explicit constant-row branch": {
        "quantize_rows": quant(
            safe="divisor[:, None]",
            rounding="np.clip(np.rint(np.nan_to_num(t)), 0, k)",
        ).replace(
            "    t = (E", "    with np.errstate(divide='ignore', invalid='ignore'):\n        t = (E"
        ),
        "dequantize_rows": """
def dequantize_rows(codes, scale, offset):
    s = np.asarray(scale, dtype=np.float32).reshape(-1, 1)
    o = np.asarray(offset, dtype=np.float32).reshape(-1, 1)
    return np.add(np.multiply(codes, s, dtype=np.float32), o, dtype=np.float32)
""",
        "sharded_lookup": """
def sharded_lookup(shards, batches):
    # the exchange as the chapter's gloo worker does it: sort by owner, gather, unsort
    sizes = np.array([len(s) for s in shards])
    starts = np.cumsum(sizes) - sizes
    out = []
    for ids in batches:
        ids = np.asarray(ids, dtype=np.int64)
        owner = np.searchsorted(np.cumsum(sizes), ids, side="right")
        order = np.argsort(owner, kind="stable")
        sent, counts = ids[order], np.bincount(owner, minlength=len(shards))
        parts, at = [], 0
        for s, c in enumerate(counts):
            parts.append(shards[s][sent[at:at + c] - starts[s]])
            at += c
        back = np.concatenate(parts) if parts else np.zeros((0, shards[0].shape[1]))
        rows = np.empty_like(back, dtype=shards[0].dtype)
        rows[order] = back
        out.append(rows)
    return out
""",
        "sharded_backward": """
def sharded_backward(shard_rows, batches, grads):
    sizes = np.asarray(shard_rows, dtype=np.int64)
    V, d = int(sizes.sum()), grads[0].shape[1]
    total = np.zeros((V, d), dtype=np.float64)
    for ids, g in zip(batches, grads):
        for j in range(d):
            total[:, j] += np.bincount(np.asarray(ids, np.int64), weights=g[:, j], minlength=V)
    cuts = np.cumsum(sizes)[:-1]
    return [part.astype(grads[0].dtype) for part in np.split(total, cuts)]
""",
    },
    "one-hot routing matrices": {
        "quantize_rows": quant(
            minmax="np.sort(E, axis=1)[:, 0], np.sort(E, axis=1)[:, -1]",
            rounding="np.clip(np.round(t), 0, k)",
        ),
        "dequantize_rows": """
def dequantize_rows(codes, scale, offset):
    return (codes * scale.astype(np.float32)[:, np.newaxis]
            + offset.astype(np.float32)[:, np.newaxis]).astype(np.float32)
""",
        "sharded_lookup": """
def sharded_lookup(shards, batches):
    sizes = [len(s) for s in shards]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    out = []
    for ids in batches:
        ids = np.asarray(ids, dtype=int)
        rows = np.zeros((len(ids), shards[0].shape[1]))
        for s, shard in enumerate(shards):
            if sizes[s] == 0:
                continue
            local = ids - starts[s]
            hit = (local >= 0) & (local < sizes[s])
            onehot = np.zeros((len(ids), sizes[s]))
            onehot[np.flatnonzero(hit), local[hit]] = 1.0
            rows += onehot @ shard
        out.append(rows.astype(shards[0].dtype))
    return out
""",
        "sharded_backward": """
def sharded_backward(shard_rows, batches, grads):
    starts = np.concatenate([[0], np.cumsum(shard_rows)]).astype(int)
    out = []
    for s, n in enumerate(shard_rows):
        acc = np.zeros((int(n), grads[0].shape[1]))
        for ids, g in zip(batches, grads):
            local = np.asarray(ids, dtype=int) - starts[s]
            hit = (local >= 0) & (local < n)
            onehot = np.zeros((len(local), int(n)))
            onehot[np.flatnonzero(hit), local[hit]] = 1.0
            acc += onehot.T @ g
        out.append(acc.astype(grads[0].dtype))
    return out
""",
    },
}

MISTAKES = {
    "one scale for the whole table": Mistake(
        {"quantize_rows": quant(minmax="np.full(len(E), E.min()), np.full(len(E), E.max())")},
        fails=QUANT_CELLS,
        says="one scale and offset for the whole table",
        id="global-scale",
    ),
    "truncated instead of rounded": Mistake(
        {"quantize_rows": quant(rounding="np.clip(np.floor(t), 0, k)")},
        fails=QUANT_CELLS,
        says="truncated the codes",
        id="truncated",
    ),
    "ties rounded half up": Mistake(
        {"quantize_rows": quant(rounding="np.clip(np.floor(t + 0.5), 0, k)")},
        fails={"test_quantize_ties"},
        says="rounded exact ties up",
        id="ties-half-up",
    ),
    "2^b levels instead of 2^b - 1": Mistake(
        {"quantize_rows": quant(steps="k + 1")},
        fails=QUANT_CELLS,
        says="2^b instead of 2^b - 1",
        id="levels-2b",
    ),
    "a constant row divides by zero": Mistake(
        {
            "quantize_rows": quant(guard="pass", safe="divisor[:, None]").replace(
                "    t = (E",
                "    with np.errstate(divide='ignore', invalid='ignore'):\n        t = (E",
            )
        },
        fails={"test_quantize_constant_rows"},
        says="constant row",
        id="constant-row",
    ),
    "codes not clipped (unsigned wrap-around)": Mistake(
        {"quantize_rows": quant(rounding="np.rint(t)")},
        fails={"test_quantize_low_bits"},
        says="wrapped around",
        id="wrap-around",
    ),
    "codes stored as int8": Mistake(
        {"quantize_rows": quant(codes="codes.astype(np.int8)")},
        fails=QUANT_CELLS,
        says="int8",
        id="signed-codes",
    ),
    "float32 scale and offset for 4 bits": Mistake(
        {
            "quantize_rows": quant(
                scale_out="scale.astype(np.float32)", offset_out="offset.astype(np.float32)"
            )
        },
        fails=QUANT_CELLS - {"test_quantize_8bit"},
        says="float16",
        id="scale-dtype",
    ),
    "codes from the exact minimum, offset stored in float16": Mistake(
        {"quantize_rows": quant(origin="lo", measure="lo")},
        fails={"test_quantize_low_bits", "test_quantize_constant_rows", "test_quantize_types"},
        says="exact minimum",
        id="offset-not-rounded",
    ),
    "dequantize forgets the offset": Mistake(
        {
            "dequantize_rows": """
def dequantize_rows(codes, scale, offset):
    return codes.astype(np.float32) * scale.astype(np.float32)[:, None]
"""
        },
        fails={"test_dequantize"},
        says="left out the offset",
        id="no-offset",
    ),
    "dequantize in float16": Mistake(
        {
            "dequantize_rows": """
def dequantize_rows(codes, scale, offset):
    return codes * scale[:, None] + offset[:, None]
"""
        },
        fails={"test_dequantize"},
        says="computed in float16",
        id="float16-arithmetic",
    ),
    "rows not put back in order": Mistake(
        {
            "sharded_lookup": """
def sharded_lookup(shards, batches):
    starts = np.concatenate([[0], np.cumsum([len(s) for s in shards])])
    out = []
    for ids in batches:
        ids = np.asarray(ids, dtype=np.int64)
        owner = np.searchsorted(starts, ids, side="right") - 1
        parts = [shards[s][ids[owner == s] - starts[s]] for s in range(len(shards))]
        out.append(np.concatenate(parts).astype(shards[0].dtype))
    return out
"""
        },
        fails={"test_sharded_lookup", "test_sharded_lookup_uneven"},
        says="grouped by the shard",
        id="rows-not-reordered",
    ),
    "rows dealt out cyclically (id % R)": Mistake(
        {
            "sharded_lookup": """
def sharded_lookup(shards, batches):
    R = len(shards)
    return [np.array([shards[x % R][x // R] for x in ids],
                     dtype=shards[0].dtype).reshape(len(ids), shards[0].shape[1])
            for ids in batches]
"""
        },
        fails={"test_sharded_lookup", "test_sharded_lookup_uneven"},
        says="routed ids to the wrong shard",
        id="wrong-owner",
    ),
    "a repeated id's gradient counted once": Mistake(
        {
            "sharded_backward": """
def sharded_backward(shard_rows, batches, grads):
    starts = np.concatenate([[0], np.cumsum(shard_rows)]).astype(np.int64)
    dE = [np.zeros((int(n), grads[0].shape[1]), dtype=grads[0].dtype) for n in shard_rows]
    for ids, g in zip(batches, grads):
        owner = np.searchsorted(starts, ids, side="right") - 1
        for s in range(len(dE)):
            mine = owner == s
            dE[s][ids[mine] - starts[s]] += g[mine]
    return dE
"""
        },
        fails={"test_sharded_backward", "test_sharded_backward_uneven"},
        says="kept one upstream row",
        id="repeated-overwritten",
    ),
    "each rank overwrites the shard gradients": Mistake(
        {
            "sharded_backward": """
def sharded_backward(shard_rows, batches, grads):
    starts = np.concatenate([[0], np.cumsum(shard_rows)]).astype(np.int64)
    dE = [None] * len(shard_rows)
    for ids, g in zip(batches, grads):
        owner = np.searchsorted(starts, ids, side="right") - 1
        for s, n in enumerate(shard_rows):
            dE[s] = np.zeros((int(n), g.shape[1]), dtype=g.dtype)
            np.add.at(dE[s], ids[owner == s] - starts[s], g[owner == s])
    return dE
"""
        },
        fails={"test_sharded_backward", "test_sharded_backward_uneven"},
        says="only the last rank's contributions",
        id="ranks-overwrite",
    ),
    "one gradient for the whole table": Mistake(
        {
            "sharded_backward": """
def sharded_backward(shard_rows, batches, grads):
    V = int(np.sum(shard_rows))
    dE = np.zeros((V, grads[0].shape[1]), dtype=grads[0].dtype)
    for ids, g in zip(batches, grads):
        np.add.at(dE, ids, g)
    return [dE for _ in shard_rows]
"""
        },
        fails={"test_sharded_backward", "test_sharded_backward_uneven"},
        says="as tall as the whole table",
        id="full-table-gradient",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "one scale for the whole table"
