"""Sample answers for exercise 2: correct alternatives (full credit) and classic mistakes.

Each entry maps a function name to the complete source of a student's answer cell. Mistakes
list the test cells they must fail and a phrase the feedback must contain.
"""

from . import Mistake

PART_A = {
    "test_backward_distinct",
    "test_backward_repeated",
    "test_backward_shapes_and_edges",
    "test_backward_padding",
    "test_backward_dtype",
}

ALTERNATIVES = {
    "np.add.at, masking the padding rows first": {
        "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    ids = np.asarray(ids).ravel()
    g = np.asarray(grad_out).reshape(ids.size, np.shape(grad_out)[-1])
    if padding_idx is not None:
        keep = ids != padding_idx % V
        ids, g = ids[keep], g[keep]
    out = np.zeros((V, np.shape(grad_out)[-1]), dtype=grad_out.dtype)
    np.add.at(out, ids, g)
    return out
""",
    },
    "bincount per column": {
        "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    d = grad_out.shape[-1]
    flat = np.ravel(ids).astype(np.intp)
    g = grad_out.reshape(flat.size, d)
    cols = [np.bincount(flat, weights=g[:, j], minlength=V) for j in range(d)]
    out = np.stack(cols, axis=1) if d else np.zeros((V, 0))
    if padding_idx is not None:
        out[padding_idx] = 0.0
    return out.astype(grad_out.dtype)
""",
        "embedding_backward_rows": """
def embedding_backward_rows(ids, grad_out):
    flat = np.ravel(ids)
    d = np.shape(grad_out)[-1]
    g = np.reshape(grad_out, (flat.size, d))
    rows, slot = np.unique(flat, return_inverse=True)
    slot = slot.ravel()
    values = np.stack([np.bincount(slot, weights=g[:, j], minlength=rows.size) for j in range(d)], axis=1)
    return rows, values.astype(grad_out.dtype)
""",
    },
    "sort + np.add.reduceat": {
        "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    d = grad_out.shape[-1]
    g = grad_out.reshape(flat.size, d)
    out = np.zeros((V, d), dtype=grad_out.dtype)
    if flat.size:
        order = np.argsort(flat, kind="stable")
        s = flat[order]
        starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
        out[s[starts]] = np.add.reduceat(g[order], starts, axis=0)
    if padding_idx is not None:
        out[padding_idx] = 0
    return out
""",
        "embedding_backward_rows": """
def embedding_backward_rows(ids, grad_out):
    flat = np.asarray(ids).reshape(-1)
    d = grad_out.shape[-1]
    if flat.size == 0:
        return flat.copy(), np.zeros((0, d), dtype=grad_out.dtype)
    order = np.argsort(flat, kind="stable")
    s = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    return s[starts], np.add.reduceat(grad_out.reshape(flat.size, d)[order], starts, axis=0)
""",
    },
    "a plain loop over positions": {
        "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    ids = np.asarray(ids)
    out = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    for pos in np.ndindex(ids.shape):
        if padding_idx is not None and ids[pos] == padding_idx % V:
            continue
        out[ids[pos]] += grad_out[pos]
    return out
""",
        "embedding_backward_rows": """
def embedding_backward_rows(ids, grad_out):
    ids = np.asarray(ids)
    sums = {}
    for pos in np.ndindex(ids.shape):
        i = int(ids[pos])
        sums[i] = sums.get(i, 0) + grad_out[pos]
    rows = sorted(sums)
    values = np.array([sums[i] for i in rows], dtype=grad_out.dtype).reshape(len(rows), grad_out.shape[-1])
    return np.array(rows, dtype=np.int64), values
""",
    },
    "one-hot product S^T G": {
        "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    S = (flat[:, None] == np.arange(V)).astype(grad_out.dtype)   # (N, V)
    if padding_idx is not None:
        S[:, padding_idx] = 0
    return S.T @ grad_out.reshape(flat.size, grad_out.shape[-1])
""",
        "embedding_backward_rows": """
def embedding_backward_rows(ids, grad_out):
    flat = np.asarray(ids).reshape(-1)
    rows = np.unique(flat)
    S = (flat[:, None] == rows).astype(grad_out.dtype)   # (N, number of distinct rows)
    return rows, S.T @ grad_out.reshape(flat.size, grad_out.shape[-1])
""",
    },
}

MISTAKES = {
    "repeated ids overwrite (the fancy-indexing trap)": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    out = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    out[flat] += grad_out.reshape(-1, grad_out.shape[-1])
    if padding_idx is not None:
        out[padding_idx] = 0
    return out
"""
        },
        fails={"test_backward_repeated"},
        says="repeated ids overwrote each other instead of accumulating",
        id="trap-overwrite",
    ),
    "repeated ids averaged": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    out = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    np.add.at(out, flat, grad_out.reshape(-1, grad_out.shape[-1]))
    counts = np.bincount(flat, minlength=V)[:, None]
    out = (out / np.maximum(counts, 1)).astype(grad_out.dtype)
    if padding_idx is not None:
        out[padding_idx] = 0
    return out
"""
        },
        fails={"test_backward_repeated"},
        says="averaged instead of summed",
        id="averaged",
    ),
    "padding_idx ignored": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    out = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    np.add.at(out, flat, grad_out.reshape(-1, grad_out.shape[-1]))
    return out
"""
        },
        fails={"test_backward_padding"},
        says="the padding row got gradient",
        id="padding-ignored",
    ),
    "the padding row zeroed before the accumulation": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    out = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    if padding_idx is not None:
        out[padding_idx] = 0  # too early: np.add.at below adds the padding ids' gradients back
    np.add.at(out, flat, grad_out.reshape(-1, grad_out.shape[-1]))
    return out
"""
        },
        # the same values as padding_idx ignored on every case: the same mistake id
        fails={"test_backward_padding"},
        says="zeroing it before np.add.at",
        id="padding-ignored",
    ),
    "`if padding_idx:` skips padding row 0": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    out = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    np.add.at(out, flat, grad_out.reshape(-1, grad_out.shape[-1]))
    if padding_idx:
        out[padding_idx] = 0
    return out
"""
        },
        fails={"test_backward_padding"},
        says="`if padding_idx:` is False when padding_idx is 0",
        id="padding-zero-skipped",
    ),
    "negative padding_idx ignored (mask compares ids with -1)": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    g = grad_out.reshape(-1, grad_out.shape[-1])
    if padding_idx is not None:
        keep = flat != padding_idx
        flat, g = flat[keep], g[keep]
    out = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    np.add.at(out, flat, g)
    return out
"""
        },
        fails={"test_backward_padding"},
        says="a negative padding_idx counts from the end",
        id="padding-negative-ignored",
    ),
    "zeroes grad_out in place for padding": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    ids = np.asarray(ids)
    if padding_idx is not None:
        grad_out[ids == padding_idx % V] = 0   # changes the caller's array
    out = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    np.add.at(out, ids.reshape(-1), grad_out.reshape(-1, grad_out.shape[-1]))
    return out
"""
        },
        fails={"test_backward_padding"},
        says="modified its input (grad_out)",
        id="modified-input",
    ),
    "works only for 1-D ids": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    out = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    for n in range(len(ids)):
        out[ids[n]] += grad_out[n]
    if padding_idx is not None:
        out[padding_idx] = 0
    return out
"""
        },
        fails={"test_backward_repeated", "test_backward_shapes_and_edges"},
        says="it works only for 1-D ids",
        id="only-1d-ids",
    ),
    "transposed result (G^T S)": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    S = (flat[:, None] == np.arange(V)).astype(grad_out.dtype)   # (N, V)
    out = grad_out.reshape(-1, grad_out.shape[-1]).T @ S                    # (d, V): transposed
    if padding_idx is not None:
        out[:, padding_idx] = 0
    return out
"""
        },
        fails=PART_A,
        says="transposed",
        id="transposed-gradient",
    ),
    "reshape(N, -1) breaks on empty ids": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    out = np.zeros((V, grad_out.shape[-1]), dtype=grad_out.dtype)
    np.add.at(out, flat, grad_out.reshape(flat.size, -1))
    if padding_idx is not None:
        out[padding_idx] = 0
    return out
"""
        },
        fails={"test_backward_shapes_and_edges"},
        says="cannot work out the -1",
        id="reshape-empty",
    ),
    "returns only the rows that occur (wrong shape)": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    rows, slot = np.unique(flat, return_inverse=True)
    out = np.zeros((rows.size, grad_out.shape[-1]), dtype=grad_out.dtype)
    np.add.at(out, slot.ravel(), grad_out.reshape(-1, grad_out.shape[-1]))
    return out
"""
        },
        fails=PART_A,
        says="returned only the rows of ids that occur",
        id="touched-rows-only",
    ),
    "float64 result for float32 gradients": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    flat = np.asarray(ids).reshape(-1)
    out = np.zeros((V, grad_out.shape[-1]))
    np.add.at(out, flat, grad_out.reshape(-1, grad_out.shape[-1]))
    if padding_idx is not None:
        out[padding_idx] = 0
    return out
"""
        },
        fails={"test_backward_dtype"},
        says="float64 result for float32 gradients",
        id="float64-zeros",
    ),
    "rows: float64 values for float32 gradients": Mistake(
        {
            "embedding_backward_rows": """
def embedding_backward_rows(ids, grad_out):
    flat = np.asarray(ids).reshape(-1)
    g = grad_out.reshape(flat.size, grad_out.shape[-1])
    rows, slot = np.unique(flat, return_inverse=True)
    values = np.zeros((rows.size, g.shape[1]))  # float64 by default
    np.add.at(values, slot.ravel(), g)
    return rows, values
"""
        },
        # charged once, by the values cell (its float32 case): the empty-ids cell excuses it
        fails={"test_backward_rows"},
        says="float64 result for float32 gradients",
        id="float64-zeros",
    ),
    "rows: float64 values for empty ids only": Mistake(
        {
            "embedding_backward_rows": """
def embedding_backward_rows(ids, grad_out):
    flat = np.asarray(ids).reshape(-1)
    d = grad_out.shape[-1]
    if flat.size == 0:
        return flat.astype(np.int64), np.zeros((0, d))  # float64 whatever grad_out's dtype
    g = grad_out.reshape(flat.size, d)
    rows, slot = np.unique(flat, return_inverse=True)
    values = np.zeros((rows.size, d), dtype=grad_out.dtype)
    np.add.at(values, slot.ravel(), g)
    return rows, values
"""
        },
        fails={"test_backward_rows_empty"},
        says="float64 result for float32 gradients",
        id="float64-zeros",
    ),
    "rows not coalesced (one entry per position)": Mistake(
        {
            "embedding_backward_rows": """
def embedding_backward_rows(ids, grad_out):
    flat = np.asarray(ids).reshape(-1)
    return flat, grad_out.reshape(-1, grad_out.shape[-1])
"""
        },
        fails={"test_backward_rows"},
        says="more than once",
        id="rows-not-coalesced",
    ),
    "the width taken from grad_out.shape[1] (T, not d, for ids of shape (B, T))": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    ids = np.asarray(ids).reshape(-1)
    grad_out = np.asarray(grad_out)
    d = grad_out.shape[1] if grad_out.ndim > 1 else grad_out.shape[0]
    g = grad_out.reshape(-1, d)
    if padding_idx is not None:
        keep = ids != padding_idx % V
        ids, g = ids[keep], g[keep]
    out = np.zeros((V, d), dtype=grad_out.dtype)
    np.add.at(out, ids, g)
    return out
"""
        },
        # it raises wherever T != d: every cell with ids of two or more axes
        fails={
            "test_backward_repeated",
            "test_backward_shapes_and_edges",
            "test_backward_padding",
            "test_backward_dtype",
        },
        says="the width d was taken from grad_out.shape[1]",
        id="width-from-axis-1",
    ),
    "rows in order of first appearance": Mistake(
        {
            "embedding_backward_rows": """
def embedding_backward_rows(ids, grad_out):
    flat = np.asarray(ids).reshape(-1)
    g = grad_out.reshape(-1, grad_out.shape[-1])
    rows = list(dict.fromkeys(flat.tolist()))
    values = np.zeros((len(rows), g.shape[1]), dtype=grad_out.dtype)
    for n, i in enumerate(flat.tolist()):
        values[rows.index(i)] += g[n]
    return np.array(rows, dtype=np.int64), values
"""
        },
        fails={"test_backward_rows"},
        says="sorted ascending",
        id="rows-unsorted",
    ),
    "rows: repeated ids overwrite": Mistake(
        {
            "embedding_backward_rows": """
def embedding_backward_rows(ids, grad_out):
    flat = np.asarray(ids).reshape(-1)
    rows, slot = np.unique(flat, return_inverse=True)
    values = np.zeros((rows.size, grad_out.shape[-1]), dtype=grad_out.dtype)
    values[slot.ravel()] += grad_out.reshape(-1, grad_out.shape[-1])
    return rows, values
"""
        },
        fails={"test_backward_rows"},
        says="repeated ids overwrote each other",
        id="rows-trap-overwrite",
    ),
    "rows: reshape(N, -1) breaks on empty ids": Mistake(
        {
            "embedding_backward_rows": """
def embedding_backward_rows(ids, grad_out):
    flat = np.asarray(ids).reshape(-1)
    g = grad_out.reshape(flat.size, -1)
    rows, slot = np.unique(flat, return_inverse=True)
    values = np.zeros((rows.size, g.shape[1]), dtype=grad_out.dtype)
    np.add.at(values, slot.ravel(), g)
    return rows, values
"""
        },
        fails={"test_backward_rows_empty"},
        says="cannot work out the -1",
        id="reshape-empty",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "repeated ids overwrite (the fancy-indexing trap)"
