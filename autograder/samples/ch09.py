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
    safe="np.where(divisor != 0, divisor, 1)[:, None]",
    rounding="np.clip(np.rint(t), 0, k)",
    codes="codes.astype(np.uint8)",
    scale_out="scale",
    offset_out="offset",
)


_QUIET = "    with np.errstate(divide='ignore', invalid='ignore'):\n        t = (E"


def quant(silenced=False, **changes) -> str:
    """The answer with ``changes`` to the right one; ``silenced``: its division inside numpy's
    errstate(divide, invalid ignored), as a student who computes 0 / 0 on purpose writes it."""
    text = _QUANT.format(**{**_RIGHT, **changes})
    return text.replace("    t = (E", _QUIET) if silenced else text


_ROUTE = """
def route(shard_rows, ids):
    sizes = np.asarray(shard_rows, dtype=np.int64)
    ends = np.cumsum(sizes)
    ids = np.asarray(ids).astype(np.int64)
    owner = np.searchsorted(ends, ids, side="right")
    order = {order}
    send = {send}
    return send, {counts}
"""
_ROUTE_RIGHT = dict(
    order='np.argsort(owner, kind="stable")',
    send="ids[order] - (ends - sizes)[owner[order]]",
    counts="np.bincount(owner, minlength=len(sizes))",
)


def route_src(**changes) -> str:
    return _ROUTE.format(**{**_ROUTE_RIGHT, **changes})


# The lookup and the backward as a student writes them from the docstrings, with one hook each.
_LOOKUP = """
def sharded_lookup(shards, send, counts, owner):
    at = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    d = shards[0].shape[1]
    back = np.concatenate([t[send[a:b]] for t, a, b in zip(shards, at[:-1], at[1:])]).reshape(-1, d)
    rows = np.empty_like(back)
    rows[np.argsort(owner, kind="stable")] = {back}
    return rows
"""
_BACKWARD = """
def sharded_backward(shard_rows, sends, counts, owners, grads):
    d, dtype = grads[0].shape[1], grads[0].dtype
    dE = [np.zeros((int(n), d), dtype=dtype) for n in shard_rows]
    for send, cnt, owner, g in zip(sends, counts, owners, grads):
        at = np.concatenate([[0], np.cumsum(cnt)]).astype(np.int64)
        g_sent = g[np.argsort(owner, kind="stable")]
        for s in range(len(dE)):
            block, part = send[at[s]:at[s + 1]], g_sent[at[s]:at[s + 1]]
            {add}
    return dE
"""


# Part C: a lazy step written from the docstring, with one hook per classic mistake.
_DECAY = """
def lazy_decay_step_(E, last, ids, grad_rows, lr, lam, t):
    ids = np.asarray(ids).astype(np.int64)
    if ids.size == 0:
        return None
    rows = np.unique(ids)
    G = np.zeros(E.shape)
    {accumulate}
    {catch_up}
    E[rows] -= lr * G[rows]
    {last}
    return None
"""
_DECAY_RIGHT = dict(
    accumulate="np.add.at(G, ids, grad_rows)",
    catch_up="E[rows] *= ((1 - lr * lam) ** (t - last[rows]))[:, None]",
    last="last[rows] = t",
)
_FLUSH = """
def flush_decay_(E, last, T, lr, lam):
    E *= ((1 - lr * lam) ** (T - last))[:, None]
    last[:] = T
"""


def decay_src(**changes) -> str:
    return _DECAY.format(**{**_DECAY_RIGHT, **changes})


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
        "route": """
def route(shard_rows, ids):
    starts = [0]
    for n in shard_rows:
        starts.append(starts[-1] + int(n))
    groups = [[] for _ in shard_rows]
    for x in ids:
        s = next(r for r in range(len(shard_rows)) if starts[r] <= x < starts[r + 1])
        groups[s].append(int(x) - starts[s])
    send = np.array([v for g in groups for v in g], dtype=np.int64)
    return send, np.array([len(g) for g in groups], dtype=np.int64)
""",
        "sharded_lookup": """
def sharded_lookup(shards, send, counts, owner):
    rows = np.zeros((len(owner), shards[0].shape[1]), dtype=shards[0].dtype)
    at = 0
    for s in range(len(shards)):
        positions = [n for n in range(len(owner)) if owner[n] == s]  # batch order, as routed
        for k, n in enumerate(positions):
            rows[n] = shards[s][send[at + k]]
        at += counts[s]
    return rows
""",
        "sharded_backward": """
def sharded_backward(shard_rows, sends, counts, owners, grads):
    d, dtype = grads[0].shape[1], grads[0].dtype
    dE = [np.zeros((int(n), d), dtype=dtype) for n in shard_rows]
    for send, cnt, owner, g in zip(sends, counts, owners, grads):
        at = 0
        for s in range(len(dE)):
            positions = [n for n in range(len(owner)) if owner[n] == s]
            for k, n in enumerate(positions):
                dE[s][send[at + k]] += g[n]
            at += cnt[s]
    return dE
""",
    },
    "vectorised division with an explicit constant-row branch": {
        "quantize_rows": quant(
            silenced=True,
            safe="divisor[:, None]",
            rounding="np.clip(np.rint(np.nan_to_num(t)), 0, k)",
        ),
        "dequantize_rows": """
def dequantize_rows(codes, scale, offset):
    s = np.asarray(scale, dtype=np.float32).reshape(-1, 1)
    o = np.asarray(offset, dtype=np.float32).reshape(-1, 1)
    return np.add(np.multiply(codes, s, dtype=np.float32), o, dtype=np.float32)
""",
        "route": """
def route(shard_rows, ids):
    sizes = np.asarray(shard_rows)
    starts = np.cumsum(sizes) - sizes
    ids = np.asarray(ids, dtype=np.int64)
    owner = np.searchsorted(starts, ids, side="right") - 1
    parts = [ids[owner == s] - starts[s] for s in range(len(sizes))]
    return np.concatenate(parts).astype(np.int32), np.array([len(p) for p in parts])
""",
        "sharded_lookup": """
def sharded_lookup(shards, send, counts, owner):
    # undo the grouping on the local rows first, then read the whole table once
    sizes = np.array([len(t) for t in shards])
    starts = np.cumsum(sizes) - sizes
    owner = np.asarray(owner, dtype=np.int64)
    local = np.empty(len(owner), dtype=np.int64)
    local[np.argsort(owner, kind="stable")] = send
    table = np.concatenate(shards)
    return table[starts[owner] + local].reshape(len(owner), shards[0].shape[1])
""",
        "sharded_backward": """
def sharded_backward(shard_rows, sends, counts, owners, grads):
    sizes = np.asarray(shard_rows, dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    V, d = int(sizes.sum()), grads[0].shape[1]
    total = np.zeros((V, d), dtype=np.float64)
    for send, cnt, owner, g in zip(sends, counts, owners, grads):
        ids = np.asarray(send, np.int64) + np.repeat(starts, cnt)  # grouped, as sent
        g_sent = g[np.argsort(owner, kind="stable")]
        for j in range(d):
            total[:, j] += np.bincount(ids, weights=g_sent[:, j], minlength=V)
    cuts = np.cumsum(sizes)[:-1]
    return [part.astype(grads[0].dtype) for part in np.split(total, cuts)]
""",
    },
    "0 / 0 computed, the NaN replaced with np.where before the cast": {
        "quantize_rows": quant(
            silenced=True,
            safe="divisor[:, None]",
            rounding="np.clip(np.rint(np.where(np.isnan(t), 0, t)), 0, k)",
        ),
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
        "route": """
def route(shard_rows, ids):
    sizes = np.asarray(shard_rows, dtype=int)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    ids = np.asarray(ids, dtype=int)
    member = (ids[None, :] >= starts[:-1, None]) & (ids[None, :] < starts[1:, None])  # (R, N)
    send = np.concatenate([ids[m] - starts[s] for s, m in enumerate(member)])
    return send, member.sum(axis=1)
""",
        "sharded_lookup": """
def sharded_lookup(shards, send, counts, owner):
    # what comes back, then a permutation matrix P: P[n, k] = 1 where back[k] belongs at n
    at = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    d = shards[0].shape[1]
    back = np.zeros((len(owner), d))
    for s, shard in enumerate(shards):
        block = np.asarray(send[at[s]:at[s + 1]], dtype=int)
        onehot = np.zeros((len(block), len(shard)))
        onehot[np.arange(len(block)), block] = 1.0
        back[at[s]:at[s + 1]] = onehot @ shard
    P = np.zeros((len(owner), len(owner)))
    P[np.argsort(owner, kind="stable"), np.arange(len(owner))] = 1.0
    return (P @ back).astype(shards[0].dtype)
""",
        "sharded_backward": """
def sharded_backward(shard_rows, sends, counts, owners, grads):
    out = [np.zeros((int(n), grads[0].shape[1])) for n in shard_rows]
    for send, cnt, owner, g in zip(sends, counts, owners, grads):
        P = np.zeros((len(owner), len(owner)))
        P[np.argsort(owner, kind="stable"), np.arange(len(owner))] = 1.0
        g_sent = P.T @ g  # the rows in the order of send
        at = np.concatenate([[0], np.cumsum(cnt)]).astype(int)
        for s, n in enumerate(shard_rows):
            block = np.asarray(send[at[s]:at[s + 1]], dtype=int)
            onehot = np.zeros((len(block), int(n)))
            onehot[np.arange(len(block)), block] = 1.0
            out[s] += onehot.T @ g_sent[at[s]:at[s + 1]]
    return [o.astype(grads[0].dtype) for o in out]
""",
    },
    "lazy decay: np.unique + np.add.at, catch-up by np.power": {
        "lazy_decay_step_": decay_src(
            catch_up="E[rows] = np.power(1 - lr * lam, t - last[rows])[:, None] * E[rows]"
        ),
        "flush_decay_": _FLUSH,
    },
    "lazy decay: a loop over the occurrences, catch-up by repeated multiplication": {
        "lazy_decay_step_": """
def lazy_decay_step_(E, last, ids, grad_rows, lr, lam, t):
    for n, i in enumerate(ids):
        for _ in range(t - int(last[i])):  # one factor per step the row missed
            E[i] = E[i] * (1 - lr * lam)
        last[i] = t  # a second occurrence owes nothing more
        E[i] = E[i] - lr * grad_rows[n]
""",
        "flush_decay_": """
def flush_decay_(E, last, T, lr, lam):
    for i in range(len(last)):
        while last[i] < T:
            E[i] = E[i] * (1 - lr * lam)
            last[i] += 1
""",
    },
    "lazy decay: np.bincount per column, a dense factor only for the touched rows": {
        "lazy_decay_step_": """
def lazy_decay_step_(E, last, ids, grad_rows, lr, lam, t):
    ids = np.ravel(ids).astype(np.intp)
    V, d = E.shape
    counts = np.bincount(ids, minlength=V)
    touched = counts > 0
    G = np.stack([np.bincount(ids, weights=grad_rows[:, j], minlength=V) for j in range(d)], axis=1)
    factor = np.exp((t - last[touched]) * np.log1p(-lr * lam)) if lr * lam < 1 else 0.0
    E[touched] = (factor * E[touched].T).T - lr * G[touched]
    last[touched] = t
""",
        "flush_decay_": """
def flush_decay_(E, last, T, lr, lam):
    for i in np.flatnonzero(last < T):
        E[i] *= (1 - lr * lam) ** int(T - last[i])
    last.fill(T)
    return None
""",
    },
}

MISTAKES = {
    "one scale for the whole table": Mistake(
        {"quantize_rows": quant(minmax="np.full(len(E), E.min()), np.full(len(E), E.max())")},
        fails=QUANT_CELLS - {"test_quantize_types"},
        says="one scale and offset for the whole table",
        id="global-scale",
    ),
    "truncated instead of rounded": Mistake(
        {"quantize_rows": quant(rounding="np.clip(np.floor(t), 0, k)")},
        fails=QUANT_CELLS - {"test_quantize_types"},
        says="truncated the codes",
        id="truncated",
    ),
    "ties rounded half up": Mistake(
        {"quantize_rows": quant(rounding="np.clip(np.floor(t + 0.5), 0, k)")},
        fails={"test_quantize_ties"},
        says="rounded exact ties up",
        id="ties-half-up",
    ),
    "codes from the float32 scale, its float16 rounding returned (not a tie mistake)": Mistake(
        {
            "quantize_rows": quant(
                guard="scale[scale == 0] = 1\n"
                "        unrounded = (hi - offset.astype(np.float32)) / np.float32(k)",
                safe="(np.where(divisor != 0, divisor, 1) if bits == 8 "
                "else np.where(scale == 1, 1, unrounded))[:, None]",
            )
        },
        fails={"test_quantize_low_bits"},
        says="computed the codes with the float32 scale",
        id="scale-not-rounded",
    ),
    "2^b levels instead of 2^b - 1": Mistake(
        {"quantize_rows": quant(steps="k + 1")},
        fails=QUANT_CELLS - {"test_quantize_types"},
        says="2^b instead of 2^b - 1",
        id="levels-2b",
    ),
    "a constant row divides by zero": Mistake(
        {"quantize_rows": quant(silenced=True, guard="pass", safe="divisor[:, None]")},
        fails={"test_quantize_constant_rows"},
        says="constant row",
        id="constant-row",
    ),
    "a constant row divides by zero at 8 bits (NaN codes cast to uint8 give 0)": Mistake(
        {"quantize_rows": quant(silenced=True, safe="divisor[:, None]")},
        fails={"test_quantize_constant_rows"},
        says="divided by zero",
        id="constant-row",
    ),
    "a constant row special-cased (max == min) at 4 bits": Mistake(
        {"quantize_rows": quant(guard="scale[(hi == lo) | (scale == 0)] = 1")},
        fails={"test_quantize_constant_rows"},
        says="float16 cannot hold",
        id="constant-row-shortcut",
    ),
    "a constant row's scale guarded with scale <= 0 (4 and 2 bits)": Mistake(
        {"quantize_rows": quant(guard="scale[scale <= 0] = 1")},
        fails={"test_quantize_constant_rows"},
        says="float16 cannot hold",
        id="constant-row-shortcut",
    ),
    # A guard that avoids 0 / 0 but stores another scale than FBGEMM's rule
    "the low-bit guard (scale 1) applied at 8 bits too": Mistake(
        {
            "quantize_rows": quant().replace(
                "        divisor = scale\n",
                "        scale[scale == 0] = 1\n        divisor = scale\n",
            )
        },
        fails={"test_quantize_constant_rows"},
        says="at 8 bits the scale stays 0",
        id="scale-zero-rule",
    ),
    "a constant row's 8-bit scale set to an eps (1e-8)": Mistake(
        {
            "quantize_rows": quant().replace(
                "        divisor = scale\n",
                "        scale[scale == 0] = 1e-8\n        divisor = scale\n",
            )
        },
        fails={"test_quantize_constant_rows"},
        says="not the format's stored scale",
        id="scale-zero-rule",
    ),
    "a float16 scale of 0 replaced by float16's smallest normal number": Mistake(
        {"quantize_rows": quant(guard="scale[scale == 0] = np.finfo(np.float16).tiny")},
        fails={"test_quantize_constant_rows"},
        says="replaced by exactly 1",
        id="scale-zero-rule",
    ),
    "a 4-bit scale guarded before its float16 rounding": Mistake(
        {
            "quantize_rows": quant(
                guard="pass",
                safe="(divisor if bits < 8 else np.where(divisor != 0, divisor, 1))[:, None]",
            )
            .replace(
                "        scale = ((hi - offset.astype(np.float32)) / np.float32(k)).astype(np.float16)",
                "        scale = (hi - offset.astype(np.float32)) / np.float32(k)\n"
                "        scale[scale == 0] = 1  # guarded in float32, then rounded\n"
                "        scale = scale.astype(np.float16)",
            )
            .replace("    t = (E", _QUIET)
        },
        fails={"test_quantize_constant_rows"},
        says="before it is rounded to float16",
        id="scale-guard-before-fp16",
    ),
    "codes not clipped (unsigned wrap-around)": Mistake(
        {"quantize_rows": quant(rounding="np.rint(t)")},
        fails={"test_quantize_low_bits"},
        says="wrapped around",
        id="wrap-around",
    ),
    "codes stored as int8": Mistake(
        {"quantize_rows": quant(codes="codes.astype(np.int8)")},
        # 4- and 2-bit codes (at most 15) and the constant rows' codes (0) fit in int8
        fails={"test_quantize_8bit", "test_quantize_ties", "test_quantize_types"},
        says="int8",
        id="signed-codes",
    ),
    "the right codes returned as float32": Mistake(
        {"quantize_rows": quant(codes="codes.astype(np.float32)")},
        fails={"test_quantize_types"},
        says="another dtype than uint8",
        id="codes-dtype",
    ),
    "float32 scale and offset for 4 bits": Mistake(
        {
            "quantize_rows": quant(
                scale_out="scale.astype(np.float32)", offset_out="offset.astype(np.float32)"
            )
        },
        fails={"test_quantize_types"},
        says="float16",
        id="scale-dtype",
    ),
    "8-bit scale and offset returned as float16 (the low-bit rule at 8 bits)": Mistake(
        {
            "quantize_rows": quant(
                scale_out="scale.astype(np.float16)", offset_out="offset.astype(np.float16)"
            )
        },
        # the 8-bit cells (a scale of 2^20 overflows float16); the constant rows' 8-bit scale 0
        # and offsets 0, 3, -7.5 float16 holds
        fails={"test_quantize_8bit", "test_quantize_ties", "test_quantize_types"},
        says="keeps a float32 scale and offset",
        id="float16-at-8-bits",
    ),
    "8-bit scale and offset rounded to float16, returned as float32": Mistake(
        {
            "quantize_rows": quant(
                scale_out="scale.astype(np.float16).astype(scale.dtype)",
                offset_out="offset.astype(np.float16).astype(offset.dtype)",
            )
        },
        fails={"test_quantize_8bit", "test_quantize_ties"},
        says="keeps a float32 scale and offset",
        id="float16-at-8-bits",
    ),
    "codes from the exact minimum, offset stored in float16": Mistake(
        {"quantize_rows": quant(origin="lo", measure="lo")},
        fails={"test_quantize_low_bits", "test_quantize_constant_rows"},
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
    "dequantize multiplies in float16, then converts": Mistake(
        {
            "dequantize_rows": """
def dequantize_rows(codes, scale, offset):
    return (codes * scale[:, None] + offset[:, None]).astype(np.float32)
"""
        },
        fails={"test_dequantize"},
        says="multiplied and added in float16",
        id="float16-products",
    ),
    "route sends the global ids": Mistake(
        {"route": route_src(send="ids[order]")},
        fails={"test_route"},
        says="sent the global ids",
        id="route-global-ids",
    ),
    "route leaves the ids in batch order": Mistake(
        {"route": route_src(send="ids - (ends - sizes)[owner]")},
        fails={"test_route"},
        says="in the batch's order",
        id="route-not-grouped",
    ),
    "route counts with np.unique": Mistake(
        {"route": route_src(counts="np.unique(owner, return_counts=True)[1]")},
        fails={"test_route"},
        says="fewer counts than there are shards",
        id="route-counts-short",
    ),
    "route groups with an unstable sort (heapsort, like np.argsort's default)": Mistake(
        {"route": route_src(order='np.argsort(owner, kind="heapsort")')},
        fails={"test_route"},
        says="changed their order within a group",
        id="route-unstable-order",
    ),
    "route sorts the ids within each owner": Mistake(
        {"route": route_src(order="np.lexsort((ids, owner))")},
        fails={"test_route"},
        says="changed their order within a group",
        id="route-unstable-order",
    ),
    "route's owner found with side='left' (an id at a boundary stays on the shard before)": Mistake(
        {"route": route_src().replace('side="right"', 'side="left"')},
        fails={"test_route"},
        says="a local row it does not have",
        id="route-row-outside-shard",
    ),
    "route sends an id at the start of the shard after an empty one to the empty shard": Mistake(
        {
            "route": route_src().replace(
                '    owner = np.searchsorted(ends, ids, side="right")',
                "    starts = ends - sizes\n"
                '    owner = np.searchsorted(starts, ids, side="left")  # a shard starting at x\n'
                "    owner = np.where(starts[np.minimum(owner, len(sizes) - 1)] == ids, owner, owner - 1)",
            )
        },
        fails={"test_route"},
        says="a local row it does not have",
        id="route-row-outside-shard",
    ),
    "route assumes TorchRec's equal blocks of ceil(V / R) rows": Mistake(
        {
            "route": route_src(send="ids[order] - (owner * block)[order]").replace(
                '    owner = np.searchsorted(ends, ids, side="right")',
                "    block = -(-int(sizes.sum()) // len(sizes))  # TorchRec's block size\n"
                "    owner = ids // block",
            )
        },
        fails={"test_route"},
        says="equal blocks",
        id="equal-blocks",
    ),
    "route uses blocks of shard_rows[0] rows": Mistake(
        {
            "route": route_src(send="ids[order] - (owner * sizes[0])[order]").replace(
                '    owner = np.searchsorted(ends, ids, side="right")',
                "    owner = ids // sizes[0]",
            )
        },
        fails={"test_route"},
        says="equal blocks",
        id="equal-blocks",
    ),
    "route subtracts each shard's end (np.cumsum) instead of its start": Mistake(
        {"route": route_src(send="ids[order] - ends[owner[order]]")},
        fails={"test_route"},
        says="a local row it does not have",
        id="route-row-outside-shard",
    ),
    "rows not put back in order": Mistake(
        {
            "sharded_lookup": _LOOKUP.format(back="back").replace(
                'rows[np.argsort(owner, kind="stable")] = back', "rows[:] = back"
            )
        },
        fails={"test_sharded_lookup"},  # the uneven cell excuses it (check="uneven")
        says="grouped by shard",
        id="rows-not-reordered",
    ),
    "the grouping applied again instead of undone": Mistake(
        {
            "sharded_lookup": _LOOKUP.format(back="back").replace(
                'rows[np.argsort(owner, kind="stable")] = back',
                'rows = back[np.argsort(owner, kind="stable")]',
            )
        },
        fails={"test_sharded_lookup"},  # the uneven cell excuses it (check="uneven")
        says="instead of undoing it",
        id="unroute-not-inverted",
    ),
    # np.argsort's default (what a student writes) orders ties by the CPU's sort (introsort, or
    # a SIMD one): heapsort is as unstable and the same on any machine, so the fails hold anywhere
    "the unroute's order from an unstable sort (heapsort, like np.argsort's default)": Mistake(
        {
            "sharded_lookup": _LOOKUP.format(back="back").replace(
                'rows[np.argsort(owner, kind="stable")] = back',
                'rows[np.argsort(owner, kind="heapsort")] = back',
            )
        },
        fails={"test_sharded_lookup"},  # the uneven cell excuses it (check="uneven")
        says="a sort that is not stable",
        id="unroute-unstable",
    ),
    "send's local rows read as table ids": Mistake(
        {
            "sharded_lookup": """
def sharded_lookup(shards, send, counts, owner):
    table = np.concatenate(shards)
    rows = np.empty((len(owner), table.shape[1]), dtype=table.dtype)
    rows[np.argsort(owner, kind="stable")] = table[send]
    return rows
"""
        },
        fails={"test_sharded_lookup"},  # the uneven cell excuses it (check="uneven")
        says="local rows",
        id="local-rows-as-ids",
    ),
    "route deals rows out cyclically (id % R)": Mistake(
        {
            "route": route_src(
                order='np.argsort(ids % len(sizes), kind="stable")',
                send="ids[order] // len(sizes)",
                counts="np.bincount(ids % len(sizes), minlength=len(sizes))",
            )
        },
        fails={"test_route"},
        says="routed ids to the wrong shard",
        id="wrong-owner",
    ),
    "a repeated id's gradient counted once": Mistake(
        {"sharded_backward": _BACKWARD.format(add="dE[s][block] += part")},
        fails={"test_sharded_backward"},  # the uneven cell excuses it (check="uneven")
        says="kept one upstream row",
        id="repeated-overwritten",
    ),
    "each rank overwrites the shard gradients": Mistake(
        {
            "sharded_backward": _BACKWARD.format(add="np.add.at(dE[s], block, part)").replace(
                "        at = np.concatenate",
                "        dE = [np.zeros((int(n), d), dtype=dtype) for n in shard_rows]\n"
                "        at = np.concatenate",
            )
        },
        fails={"test_sharded_backward"},  # the uneven cell excuses it (check="uneven")
        says="only one rank's contributions",
        id="ranks-overwrite",
    ),
    "only the first rank's gradients": Mistake(
        {
            "sharded_backward": _BACKWARD.format(add="np.add.at(dE[s], block, part)").replace(
                "zip(sends, counts, owners, grads)",
                "zip(sends[:1], counts[:1], owners[:1], grads[:1])",
            )
        },
        fails={"test_sharded_backward"},  # the uneven cell excuses it (check="uneven")
        says="only one rank's contributions",
        id="ranks-overwrite",
    ),
    "gradients sent in batch order": Mistake(
        {
            "sharded_backward": _BACKWARD.format(add="np.add.at(dE[s], block, part)").replace(
                'g[np.argsort(owner, kind="stable")]', "g"
            )
        },
        fails={"test_sharded_backward"},  # the uneven cell excuses it (check="uneven")
        says="in the batch's order",
        id="grads-not-routed",
    ),
    "each rank's gradient rows reordered in place (the caller's grads)": Mistake(
        {
            "sharded_backward": _BACKWARD.format(add="np.add.at(dE[s], block, part)").replace(
                '        g_sent = g[np.argsort(owner, kind="stable")]',
                '        g[:] = g[np.argsort(owner, kind="stable")]  # in the order of send\n'
                "        g_sent = g",
            )
        },
        fails={"test_sharded_backward", "test_sharded_backward_uneven"},
        says="modified its input (grads)",
        id="modified-input",
    ),
    "one gradient for the whole table": Mistake(
        {
            "sharded_backward": """
def sharded_backward(shard_rows, sends, counts, owners, grads):
    starts = np.cumsum(shard_rows) - np.asarray(shard_rows)
    V = int(np.sum(shard_rows))
    dE = np.zeros((V, grads[0].shape[1]), dtype=grads[0].dtype)
    for send, cnt, owner, g in zip(sends, counts, owners, grads):
        ids = np.asarray(send, np.int64) + np.repeat(starts, cnt)
        np.add.at(dE, ids, g[np.argsort(owner, kind="stable")])
    return [dE for _ in shard_rows]
"""
        },
        fails={"test_sharded_backward", "test_sharded_backward_uneven"},
        says="as tall as the whole table",
        id="full-table-gradient",
    ),
    "lazy decay: one factor per step instead of the catch-up": Mistake(
        {"lazy_decay_step_": decay_src(catch_up="E[rows] *= 1 - lr * lam")},
        fails={"test_decay_step"},
        says="instead of catching it up",
        id="decay-once",
    ),
    "lazy decay: the catch-up one step too long (t - last + 1)": Mistake(
        {
            "lazy_decay_step_": decay_src(
                catch_up="E[rows] *= ((1 - lr * lam) ** (t - last[rows] + 1))[:, None]"
            )
        },
        fails={"test_decay_step"},
        says="one factor too many or too few",
        id="catch-up-off-by-one",
    ),
    "lazy decay: the catch-up one step short (t - last - 1)": Mistake(
        {
            "lazy_decay_step_": decay_src(
                catch_up="E[rows] *= ((1 - lr * lam) ** (t - last[rows] - 1))[:, None]"
            )
        },
        fails={"test_decay_step"},
        says="one factor too many or too few",
        id="catch-up-off-by-one",
    ),
    "lazy decay: a repeated id caught up once per occurrence (np.multiply.at)": Mistake(
        {
            "lazy_decay_step_": decay_src(
                catch_up="np.multiply.at(E, ids, ((1 - lr * lam) ** (t - last[ids]))[:, None])"
            )
        },
        fails={"test_decay_repeats"},
        says="once per occurrence",
        id="decay-per-occurrence",
    ),
    "lazy decay: a loop that writes last after all the occurrences": Mistake(
        {
            "lazy_decay_step_": """
def lazy_decay_step_(E, last, ids, grad_rows, lr, lam, t):
    for n, i in enumerate(ids):
        E[i] = (1 - lr * lam) ** (t - last[i]) * E[i] - lr * grad_rows[n]
    last[ids] = t
"""
        },
        fails={"test_decay_repeats"},
        says="once per occurrence",
        id="decay-per-occurrence",
    ),
    "lazy decay: G[ids] = grad_rows keeps one row per repeated id": Mistake(
        {"lazy_decay_step_": decay_src(accumulate="G[ids] = grad_rows")},
        fails={"test_decay_repeats"},
        says="kept one gradient row",
        id="repeated-gradient-once",
    ),
    "lazy decay: E[ids] -= lr * grad_rows (the fancy-indexing trap)": Mistake(
        {
            "lazy_decay_step_": decay_src(accumulate="G[ids] = grad_rows").replace(
                "    E[rows] -= lr * G[rows]", "    E[ids] -= lr * grad_rows"
            )
        },
        fails={"test_decay_repeats"},
        says="kept one gradient row",
        id="repeated-gradient-once",
    ),
    "lazy decay: the gradient step first, then the catch-up": Mistake(
        {
            "lazy_decay_step_": decay_src(
                catch_up="E[rows] -= lr * G[rows]\n"
                "    E[rows] *= ((1 - lr * lam) ** (t - last[rows]))[:, None]\n"
                "    G[rows] = 0"
            )
        },
        fails={"test_decay_step"},
        says="after the gradient step",
        id="decay-after-gradient",
    ),
    "lazy decay: last never written": Mistake(
        {"lazy_decay_step_": decay_src(last="pass")},
        fails={"test_decay_lazy"},
        says="did not update last",
        id="last-not-updated",
    ),
    "lazy decay: every row caught up at every step (dense)": Mistake(
        {
            "lazy_decay_step_": decay_src(
                catch_up="E *= ((1 - lr * lam) ** (t - last))[:, None]", last="last[:] = t"
            ).replace("    if ids.size == 0:\n        return None\n", "")
        },
        fails={"test_decay_lazy"},
        says="changed rows that ids does not touch",
        id="dense-decay",
    ),
    "lazy decay: the step returns E": Mistake(
        {"lazy_decay_step_": decay_src().replace("    return None\n", "    return E\n")},
        fails={"test_decay_lazy"},
        says="returns None",
        id="decay-returns-value",
    ),
    "flush: only the rows some batch looked up (last > 0)": Mistake(
        {
            "flush_decay_": """
def flush_decay_(E, last, T, lr, lam):
    seen = last > 0
    E[seen] *= ((1 - lr * lam) ** (T - last[seen]))[:, None]
    last[seen] = T
"""
        },
        fails={"test_decay_flush"},
        says="no batch looked up",
        id="flush-skips-unseen",
    ),
    "flush: every row multiplied by one factor (1 - lr * lam)": Mistake(
        {
            "flush_decay_": """
def flush_decay_(E, last, T, lr, lam):
    E *= 1 - lr * lam
    last[:] = T
"""
        },
        fails={"test_decay_flush"},
        says="multiplied every row by one factor",
        id="flush-once",
    ),
    "flush: last never set": Mistake(
        {
            "flush_decay_": """
def flush_decay_(E, last, T, lr, lam):
    E *= ((1 - lr * lam) ** (T - last))[:, None]
"""
        },
        fails={"test_decay_flush"},
        says="did not set last",
        id="flush-last-not-updated",
    ),
    # Rebinding the names: the right arithmetic, but the caller's arrays never change
    "flush: E and last rebound (E = ..., last = ...)": Mistake(
        {
            "flush_decay_": """
def flush_decay_(E, last, T, lr, lam):
    E = ((1 - lr * lam) ** (T - last))[:, None] * E
    last = np.full_like(last, T)
"""
        },
        fails={"test_decay_flush"},
        says="binds a new array to the function's local name",
        id="not-in-place",
    ),
    "flush: E rebound, last written in place": Mistake(
        {
            "flush_decay_": """
def flush_decay_(E, last, T, lr, lam):
    E = E * ((1 - lr * lam) ** (T - last))[:, None]
    last[:] = T
"""
        },
        fails={"test_decay_flush"},
        says="the caller's E did not change",
        id="not-in-place",
    ),
    "lazy decay: E rebound to an updated copy": Mistake(
        {
            "lazy_decay_step_": """
def lazy_decay_step_(E, last, ids, grad_rows, lr, lam, t):
    rows, slot = np.unique(ids, return_inverse=True)
    G = np.zeros((rows.size, E.shape[1]))
    np.add.at(G, slot.reshape(-1), grad_rows)
    E = E.copy()
    E[rows] = (1 - lr * lam) ** (t - last[rows])[:, None] * E[rows] - lr * G
    last[rows] = t
"""
        },
        # in place is test_decay_lazy's property: the value cells excuse it
        fails={"test_decay_lazy"},
        says="the caller's E did not change",
        id="not-in-place",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "one scale for the whole table"


# Alternatives written as a one-line edit of another (same template, same author): not independent
# answers, so the class report's similarity must flag them like a copy (tests/test_report.py).
VARIANTS = {
    "0 / 0 computed, the NaN replaced with np.where before the cast": (
        "vectorised division with an explicit constant-row branch"
    ),
}
