"""Sample answers for exercise 4: correct alternatives (full credit) and classic mistakes.

Each entry maps a function name to the complete source of a student's answer cell. Mistakes
list the test cells they must fail and a phrase the feedback must contain.
"""

from . import Mistake

ALL_MEAN = {
    "test_bag_mean_shape",
    "test_bag_mean_values",
    "test_bag_mean_empty_bags",
    "test_bag_mean_dtype",
}
ALL_BACKWARD = {
    "test_bag_backward_shape",
    "test_bag_backward_mean",
    "test_bag_backward_sum",
    "test_bag_backward_empty_bags",
    "test_bag_backward_dtype",
}

ALTERNATIVES = {
    # The prompt's claim: a running sum passes when it runs in float64.
    "float64 prefix sum over all bags (np.cumsum)": {
        "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    ids, offsets = np.asarray(ids), np.asarray(offsets)
    ends = np.append(offsets[1:], len(ids))
    running = np.zeros((len(ids) + 1, E.shape[1]), dtype=np.float64)
    running[1:] = np.cumsum(E[ids].astype(np.float64), axis=0)
    sums = running[ends] - running[offsets]
    return (sums / np.maximum(ends - offsets, 1)[:, None]).astype(E.dtype)
"""
    },
    "loop over bags": {
        "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    B, N = len(offsets), len(ids)
    out = np.zeros((B, E.shape[1]), dtype=E.dtype)
    for b in range(B):
        start = offsets[b]
        end = offsets[b + 1] if b + 1 < B else N
        if end > start:
            out[b] = E[ids[start:end]].mean(axis=0)
    return out
""",
        "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError("unknown mode " + repr(mode))
    B, N = len(offsets), len(ids)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    for b in range(B):
        start = offsets[b]
        end = offsets[b + 1] if b + 1 < B else N
        for n in range(start, end):
            if mode == "mean":
                G[ids[n]] += grad_out[b] / (end - start)
            else:
                G[ids[n]] += grad_out[b]
    return G
""",
    },
    "np.add.reduceat with empty bags handled": {
        "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    N, d = len(ids), E.shape[1]
    sizes = np.diff(np.append(offsets, N))
    out = np.zeros((len(offsets), d), dtype=E.dtype)
    full = sizes > 0
    if N > 0:
        # reduceat only sees the non-empty bags: their starts are distinct and all < N
        sums = np.add.reduceat(E[ids], offsets[full], axis=0)
        out[full] = sums / sizes[full, None].astype(E.dtype)
    return out
""",
        "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode == "sum":
        scale = np.ones(len(offsets), dtype=grad_out.dtype)
    elif mode == "mean":
        sizes = np.diff(np.append(offsets, len(ids)))
        scale = (1.0 / np.maximum(sizes, 1)).astype(grad_out.dtype)
    else:
        raise ValueError(mode)
    bag = np.searchsorted(offsets, np.arange(len(ids)), side="right") - 1
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    for j in range(grad_out.shape[1]):
        G[:, j] = np.bincount(ids, weights=(grad_out[:, j] * scale)[bag], minlength=V)
    return G
""",
    },
    "bag index + np.add.at": {
        "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    N = len(ids)
    # position n belongs to the last bag that starts at or before n
    bag = np.searchsorted(offsets, np.arange(N), side="right") - 1
    sums = np.zeros((len(offsets), E.shape[1]), dtype=E.dtype)
    np.add.at(sums, bag, E[ids])
    counts = np.bincount(bag, minlength=len(offsets))
    counts[counts == 0] = 1
    return (sums / counts[:, None]).astype(E.dtype)
""",
        "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(f"bad mode {mode}")
    N = len(ids)
    bag = np.searchsorted(offsets, np.arange(N), side="right") - 1
    rows = grad_out[bag]
    if mode == "mean":
        counts = np.bincount(bag, minlength=len(offsets))
        rows = rows / counts[bag][:, None]
    G = np.zeros((V, grad_out.shape[1]))
    np.add.at(G, ids, rows)
    return G.astype(grad_out.dtype)
""",
    },
    "bag-count matrix": {
        "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    B, N, V = len(offsets), len(ids), E.shape[0]
    sizes = np.diff(np.append(offsets, N))
    C = np.zeros((B, V))
    np.add.at(C, (np.repeat(np.arange(B), sizes), ids), 1.0)
    C /= np.maximum(sizes, 1)[:, None]
    return (C @ E).astype(E.dtype)
""",
        "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    B, N = len(offsets), len(ids)
    sizes = np.diff(np.append(offsets, N))
    C = np.zeros((B, V))
    np.add.at(C, (np.repeat(np.arange(B), sizes), ids), 1.0)
    if mode == "mean":
        C /= np.maximum(sizes, 1)[:, None]
    elif mode != "sum":
        raise ValueError("mode must be sum or mean")
    return (C.T @ grad_out).astype(grad_out.dtype)
""",
    },
}

MISTAKES = {
    "divided by the number of ids": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    N = len(ids)
    sizes = np.diff(np.append(offsets, N))
    sums = np.zeros((len(offsets), E.shape[1]), dtype=E.dtype)
    np.add.at(sums, np.repeat(np.arange(len(offsets)), sizes), E[ids])
    return sums / E.dtype.type(max(N, 1))
"""
        },
        fails={"test_bag_mean_values"},
        says="total number of ids",
        id="divided-by-total",
    ),
    "divided by the number of bags": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    B, N = len(offsets), len(ids)
    out = np.zeros((B, E.shape[1]), dtype=E.dtype)
    for b in range(B):
        end = offsets[b + 1] if b + 1 < B else N
        out[b] = E[ids[offsets[b]:end]].sum(axis=0) / B
    return out
"""
        },
        fails={"test_bag_mean_values"},
        says="number of bags",
        id="divided-by-bags",
    ),
    "mean over the distinct ids (np.unique counts the bag)": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    ids, offsets = np.asarray(ids), np.asarray(offsets)
    ends = np.append(offsets[1:], len(ids))
    out = np.zeros((len(offsets), E.shape[1]), dtype=E.dtype)
    for b, (s, e) in enumerate(zip(offsets, ends)):
        if e > s:
            out[b] = E[ids[s:e]].sum(axis=0) / len(np.unique(ids[s:e]))
    return out
"""
        },
        fails={"test_bag_mean_values"},
        says="number of distinct ids in it",
        id="divided-by-distinct",
    ),
    "a bag treated as a set (mean over np.unique of the bag)": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    ids, offsets = np.asarray(ids), np.asarray(offsets)
    ends = np.append(offsets[1:], len(ids))
    out = np.zeros((len(offsets), E.shape[1]), dtype=E.dtype)
    for b, (s, e) in enumerate(zip(offsets, ends)):
        if e > s:
            out[b] = E[np.unique(ids[s:e])].mean(0)
    return out
"""
        },
        fails={"test_bag_mean_values"},
        says="a bag is a multiset",
        id="bag-as-set",
    ),
    "sum where mean was asked": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    sizes = np.diff(np.append(offsets, len(ids)))
    out = np.zeros((len(offsets), E.shape[1]), dtype=E.dtype)
    np.add.at(out, np.repeat(np.arange(len(offsets)), sizes), E[ids])
    return out
"""
        },
        fails={"test_bag_mean_values"},
        says="sum, not its mean",
        id="sum-not-mean",
    ),
    "np.add.reduceat without handling empty bags": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    sizes = np.diff(np.append(offsets, len(ids)))
    sums = np.add.reduceat(E[ids], offsets, axis=0)
    return sums / np.maximum(sizes, 1)[:, None].astype(E.dtype)
"""
        },
        fails={"test_bag_mean_empty_bags"},
        says="np.add.reduceat pitfall",
        id="reduceat-empty-bag",
    ),
    "mean of an empty bag is NaN": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    B, N = len(offsets), len(ids)
    out = np.zeros((B, E.shape[1]), dtype=E.dtype)
    for b in range(B):
        end = offsets[b + 1] if b + 1 < B else N
        with np.errstate(invalid="ignore", divide="ignore"):
            out[b] = E[ids[offsets[b]:end]].sum(axis=0) / (end - offsets[b])
    return out
"""
        },
        fails={"test_bag_mean_empty_bags"},
        says="NaN (or inf) for an empty bag",
        id="empty-bag-nan",
    ),
    "last bag dropped": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    rows = []
    for start, end in zip(offsets[:-1], offsets[1:]):
        rows.append(E[ids[start:end]].mean(axis=0) if end > start else np.zeros(E.shape[1], E.dtype))
    return np.array(rows, dtype=E.dtype).reshape(-1, E.shape[1])
"""
        },
        fails={"test_bag_mean_values"},
        says="last bag was left out",
        id="last-bag-dropped",
    ),
    # The last bag's ids or size wrong, every other bag right: the values cell names it, the
    # empty-bags and dtype cells (whose cases have last bags too) excuse it.
    "last bag taken as ids[offsets[-1]:-1]": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    B = len(offsets)
    out = np.zeros((B, E.shape[1]), dtype=E.dtype)
    for b in range(B):
        bag = ids[offsets[b]:offsets[b + 1]] if b + 1 < B else ids[offsets[b]:-1]
        if len(bag):
            out[b] = E[bag].mean(axis=0)
    return out
"""
        },
        fails={"test_bag_mean_values"},
        says="ids[offsets[-1]:-1] leaves out the last id",
        id="last-bag-size",
    ),
    "last bag divided by a wrong count (np.diff(offsets, append=offsets[-1] + 1))": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    B, N = len(offsets), len(ids)
    counts = np.diff(offsets, append=offsets[-1] + 1)
    out = np.zeros((B, E.shape[1]), dtype=E.dtype)
    for b in range(B):
        end = offsets[b + 1] if b + 1 < B else N
        if end > offsets[b]:
            out[b] = E[ids[offsets[b]:end]].sum(axis=0) / max(counts[b], 1)
    return out
"""
        },
        fails={"test_bag_mean_values"},
        says="its sum was divided by 1",
        id="last-bag-size",
    ),
    "last bag's size taken as len(ids) - offsets[-2]": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    B, N = len(offsets), len(ids)
    sizes = np.append(np.diff(offsets), N - offsets[-2] if B > 1 else N)
    out = np.zeros((B, E.shape[1]), dtype=E.dtype)
    for b in range(B):
        end = offsets[b + 1] if b + 1 < B else N
        if end > offsets[b]:
            out[b] = E[ids[offsets[b]:end]].sum(axis=0) / max(sizes[b], 1)
    return out
"""
        },
        fails={"test_bag_mean_values"},
        says="its size is len(ids) - offsets[-1]",
        id="last-bag-size",
    ),
    # A running sum over every bag, then differences at the offsets: exact in real numbers,
    # but in float32 a short bag after a long one loses its digits.
    "float32 prefix sum over all bags (np.cumsum)": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    ids, offsets = np.asarray(ids), np.asarray(offsets)
    ends = np.append(offsets[1:], len(ids))
    running = np.zeros((len(ids) + 1, E.shape[1]), dtype=E.dtype)
    running[1:] = np.cumsum(E[ids], axis=0)
    sums = running[ends] - running[offsets]
    return sums / np.maximum(ends - offsets, 1).astype(E.dtype)[:, None]
"""
        },
        fails={"test_bag_mean_dtype"},
        says="a float32 running sum over all the bags",
        id="float32-drift",
    ),
    "float64 result": Mistake(
        {
            "embedding_bag_mean": """
import numpy as np

def embedding_bag_mean(E, ids, offsets):
    sizes = np.diff(np.append(offsets, len(ids)))
    sums = np.zeros((len(offsets), E.shape[1]), dtype=E.dtype)
    np.add.at(sums, np.repeat(np.arange(len(offsets)), sizes), E[ids])
    return sums / np.maximum(sizes, 1)[:, None]
"""
        },
        fails={"test_bag_mean_dtype"},
        says="expected float32",
        id="wrong-dtype",
    ),
    "backward: the last bag's size taken as len(ids) - offsets[-2]": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    N = len(ids)
    bag = np.searchsorted(offsets, np.arange(N), side="right") - 1
    rows = grad_out[bag]
    if mode == "mean":
        sizes = np.append(np.diff(offsets), N - offsets[-2] if len(offsets) > 1 else N)
        rows = rows / np.maximum(sizes, 1)[bag][:, None]
    G = np.zeros((V, grad_out.shape[1]))
    np.add.at(G, ids, rows)
    return G.astype(grad_out.dtype)
"""
        },
        fails={"test_bag_backward_mean"},
        says="divided the last bag's gradient by a wrong size",
        id="grad-last-bag-size",
    ),
    "backward: the last bag's size from np.diff(offsets, append=len(offsets)) (B instead of N)": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    N = len(ids)
    bag = np.searchsorted(offsets, np.arange(N), side="right") - 1
    rows = grad_out[bag]
    if mode == "mean":
        sizes = np.diff(offsets, append=len(offsets)).astype(np.float64)
        rows = rows / sizes[bag][:, None]
    G = np.zeros((V, grad_out.shape[1]))
    np.add.at(G, ids, rows)
    return G.astype(grad_out.dtype)
"""
        },
        fails={"test_bag_backward_mean"},
        says="divided the last bag's gradient by a wrong size",
        id="grad-last-bag-size",
    ),
    "backward: the last bag's size from np.diff(offsets, append=offsets[-1]) (a last size of 0)": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    N = len(ids)
    bag = np.searchsorted(offsets, np.arange(N), side="right") - 1
    rows = grad_out[bag]
    if mode == "mean":
        sizes = np.diff(offsets, append=offsets[-1]).astype(np.float64)
        rows = rows / sizes[bag][:, None]
    G = np.zeros((V, grad_out.shape[1]))
    np.add.at(G, ids, rows)
    return G.astype(grad_out.dtype)
"""
        },
        fails={"test_bag_backward_mean"},
        says="divided the last bag's gradient by a wrong size",
        id="grad-last-bag-size",
    ),
    "backward: the last bag's size from the bag before it (its size copied)": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    N = len(ids)
    bag = np.searchsorted(offsets, np.arange(N), side="right") - 1
    rows = grad_out[bag]
    if mode == "mean":
        sizes = np.diff(offsets, append=len(ids)).astype(np.float64)
        if len(offsets) > 1:
            sizes[-1] = sizes[-2]
        sizes = np.maximum(sizes, 1)
        rows = rows / sizes[bag][:, None]
    G = np.zeros((V, grad_out.shape[1]))
    np.add.at(G, ids, rows)
    return G.astype(grad_out.dtype)
"""
        },
        fails={"test_bag_backward_mean"},
        says="divided the last bag's gradient by a wrong size",
        id="grad-last-bag-size",
    ),
    "backward ignores mode (always sums)": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    sizes = np.diff(np.append(offsets, len(ids)))
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    np.add.at(G, ids, grad_out[np.repeat(np.arange(len(offsets)), sizes)])
    return G
"""
        },
        fails={"test_bag_backward_mean"},
        says="whole gradient, as for",
        id="grad-sum-not-mean",
    ),
    "backward always divides (mean where sum was asked)": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    sizes = np.diff(np.append(offsets, len(ids)))
    bag = np.repeat(np.arange(len(offsets)), sizes)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    np.add.at(G, ids, grad_out[bag] / sizes[bag][:, None].astype(grad_out.dtype))
    return G
"""
        },
        fails={"test_bag_backward_sum"},
        says="divided by the bag size, as for",
        id="grad-mean-not-sum",
    ),
    "repeated ids overwritten": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    sizes = np.diff(np.append(offsets, len(ids)))
    bag = np.repeat(np.arange(len(offsets)), sizes)
    rows = grad_out[bag]
    if mode == "mean":
        rows = rows / sizes[bag][:, None].astype(grad_out.dtype)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    G[ids] += rows
    return G
"""
        },
        # the cells about empty bags and dtypes use distinct ids, and the sum cell excuses what
        # the student's mode="mean" answer on its bags shows the mean cell charges: the trap
        # costs the mean cell only
        fails={"test_bag_backward_mean"},
        says="chapter 3's fancy-indexing trap",
        id="grad-overwritten",
    ),
    'repeated ids overwritten in mode="sum" only': Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    sizes = np.diff(np.append(offsets, len(ids)))
    bag = np.repeat(np.arange(len(offsets)), sizes)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    if mode == "mean":
        np.add.at(G, ids, grad_out[bag] / sizes[bag][:, None].astype(grad_out.dtype))
    else:
        G[ids] += grad_out[bag]
    return G
"""
        },
        # the mean cell sees mode="mean" only, where this answer is right: the sum cell charges it
        fails={"test_bag_backward_sum"},
        says="chapter 3's fancy-indexing trap",
        id="grad-overwritten",
    ),
    "backward treats a bag as a set (each distinct id once)": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    B, N = len(offsets), len(ids)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    for b in range(B):
        end = offsets[b + 1] if b + 1 < B else N
        bag = ids[offsets[b]:end]
        for i in set(bag.tolist()):
            G[i] += grad_out[b] / len(bag) if mode == "mean" else grad_out[b]
    return G
"""
        },
        fails={"test_bag_backward_mean"},
        says="treated a bag as a set",
        id="grad-bag-as-set",
    ),
    "backward: a bag's distinct ids share its gradient (np.unique)": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    B, N = len(offsets), len(ids)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    for b in range(B):
        end = offsets[b + 1] if b + 1 < B else N
        u = np.unique(ids[offsets[b]:end])
        if len(u):
            G[u] += grad_out[b] / len(u) if mode == "mean" else grad_out[b]
    return G
"""
        },
        fails={"test_bag_backward_mean"},
        says="treated a bag as a set",
        id="grad-bag-as-set",
    ),
    "backward: dE[ids[s:e]] += per bag (the trap inside each bag)": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    B, N = len(offsets), len(ids)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    for b in range(B):
        s, e = offsets[b], offsets[b + 1] if b + 1 < B else N
        if e > s:
            G[ids[s:e]] += grad_out[b] / (e - s) if mode == "mean" else grad_out[b]
    return G
"""
        },
        fails={"test_bag_backward_mean"},
        says="treated a bag as a set",
        id="grad-bag-as-set",
    ),
    "backward divided by the number of ids": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    sizes = np.diff(np.append(offsets, len(ids)))
    rows = grad_out[np.repeat(np.arange(len(offsets)), sizes)]
    if mode == "mean":
        rows = rows / grad_out.dtype.type(len(ids))
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    np.add.at(G, ids, rows)
    return G
"""
        },
        fails={"test_bag_backward_mean"},
        says="total number of ids",
        id="grad-divided-by-total",
    ),
    "backward divided by the number of bags": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    B = len(offsets)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    for b in range(B):
        end = offsets[b + 1] if b + 1 < B else len(ids)
        for n in range(offsets[b], end):
            G[ids[n]] += grad_out[b] / B if mode == "mean" else grad_out[b]
    return G
"""
        },
        fails={"test_bag_backward_mean"},
        says="number of bags B",
        id="grad-divided-by-bags",
    ),
    "backward drops the last bag": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    for b, (start, end) in enumerate(zip(offsets[:-1], offsets[1:])):
        for n in range(start, end):
            G[ids[n]] += grad_out[b] / (end - start) if mode == "mean" else grad_out[b]
    return G
"""
        },
        fails={"test_bag_backward_mean", "test_bag_backward_sum"},
        says="last bag was left out",
        id="grad-last-bag-dropped",
    ),
    "gradient only as tall as the largest id": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    sizes = np.diff(np.append(offsets, len(ids)))
    bag = np.repeat(np.arange(len(offsets)), sizes)
    rows = grad_out[bag] / (sizes[bag][:, None].astype(grad_out.dtype) if mode == "mean" else 1)
    G = np.zeros((int(ids.max()) + 1 if len(ids) else 0, grad_out.shape[1]), dtype=grad_out.dtype)
    np.add.at(G, ids, rows)
    return G
"""
        },
        fails=ALL_BACKWARD - {"test_bag_backward_dtype"},
        says="up to the largest id",
        id="grad-short",
    ),
    "count matrix divided by zero for empty bags": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    B, N = len(offsets), len(ids)
    sizes = np.diff(np.append(offsets, N))
    C = np.zeros((B, V))
    np.add.at(C, (np.repeat(np.arange(B), sizes), ids), 1.0)
    if mode == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            C = C / sizes[:, None]
    return (C.T @ grad_out).astype(grad_out.dtype)
"""
        },
        fails={"test_bag_backward_empty_bags"},
        says="returned NaN",
        id="grad-empty-bag-nan",
    ),
    "bag index that skips empty bags": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    N = len(ids)
    sizes = np.diff(np.append(offsets, N))
    bag = np.cumsum(np.isin(np.arange(N), offsets)) - 1   # one step per distinct start
    true_bag = np.repeat(np.arange(len(offsets)), sizes)
    rows = grad_out[bag]
    if mode == "mean":
        rows = rows / sizes[true_bag][:, None].astype(grad_out.dtype)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    np.add.at(G, ids, rows)
    return G
"""
        },
        fails={"test_bag_backward_empty_bags"},
        says="credited ids to the wrong bag",
        id="grad-wrong-bag",
    ),
    "backward accepts any mode": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    sizes = np.diff(np.append(offsets, len(ids)))
    bag = np.repeat(np.arange(len(offsets)), sizes)
    rows = grad_out[bag]
    if mode != "sum":
        rows = rows / sizes[bag][:, None].astype(grad_out.dtype)
    G = np.zeros((V, grad_out.shape[1]), dtype=grad_out.dtype)
    np.add.at(G, ids, rows)
    return G
"""
        },
        fails={"test_bag_backward_mode"},
        says="should raise ValueError",
        id="mode-not-checked",
    ),
    "backward returns float64": Mistake(
        {
            "embedding_bag_backward": """
def embedding_bag_backward(ids, offsets, grad_out, V, mode="mean"):
    if mode not in ("sum", "mean"):
        raise ValueError(mode)
    sizes = np.diff(np.append(offsets, len(ids)))
    bag = np.repeat(np.arange(len(offsets)), sizes)
    rows = grad_out[bag] / (sizes[bag][:, None] if mode == "mean" else 1)
    G = np.zeros((V, grad_out.shape[1]))
    np.add.at(G, ids, rows)
    return G
"""
        },
        fails={"test_bag_backward_dtype"},
        says="expected float32",
        id="wrong-dtype",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "divided by the number of ids"
