"""Sample answers for exercise 3: correct alternatives (full credit) and classic mistakes.

Each entry maps a function name to the complete source of a student's answer cell. Mistakes
list the test cells they must fail and a phrase the feedback must contain.
"""

from . import Mistake

ALL = {
    "test_update_in_place",
    "test_update_distinct",
    "test_update_repeated",
    "test_update_batch_shapes",
    "test_update_edge_cases",
    "test_update_float32_and_inputs",
}

ALTERNATIVES = {
    "np.add.at with a negative step": {
        "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    d = E.shape[1]
    np.add.at(E, np.ravel(ids), -lr * np.reshape(grad_out, (-1, d)))
"""
    },
    "dense gradient by bincount per column, then E -= lr * G": {
        "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    V, d = E.shape
    flat = np.ravel(ids).astype(np.intp)
    g = np.reshape(grad_out, (flat.size, d))
    G = np.stack([np.bincount(flat, weights=g[:, j], minlength=V) for j in range(d)], axis=1)
    E -= (lr * G).astype(E.dtype)
"""
    },
    "sort + np.add.reduceat, then one write per distinct row": {
        "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    flat = np.asarray(ids).reshape(-1)
    if flat.size == 0:
        return
    g = np.asarray(grad_out).reshape(flat.size, E.shape[1])
    order = np.argsort(flat, kind="stable")
    s = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    sums = np.add.reduceat(g[order], starts, axis=0)
    E[s[starts]] -= lr * sums      # the rows are distinct now, so fancy indexing is safe
"""
    },
    "np.unique + add.at on the touched rows only": {
        "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    flat = np.asarray(ids).reshape(-1)
    rows, slot = np.unique(flat, return_inverse=True)
    sums = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(sums, slot.reshape(-1), np.reshape(grad_out, (flat.size, E.shape[1])))
    E[rows] -= lr * sums
"""
    },
    "a plain loop over positions": {
        "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    ids = np.asarray(ids)
    for pos in np.ndindex(ids.shape):
        E[ids[pos]] -= lr * grad_out[pos]
"""
    },
    "one-hot product S^T G": {
        "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    flat = np.asarray(ids).reshape(-1)
    S = (flat[:, None] == np.arange(E.shape[0])).astype(E.dtype)
    E[...] = E - lr * (S.T @ np.reshape(grad_out, (flat.size, E.shape[1])))
"""
    },
}

MISTAKES = {
    "E[ids] -= lr * g (the fancy-indexing trap)": Mistake(
        {
            "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    E[ids] -= lr * grad_out
"""
        },
        fails={"test_update_repeated"},
        says="repeated ids overwrote each other instead of accumulating",
    ),
    "not in place (E = E - lr * G)": Mistake(
        {
            "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    G = np.zeros_like(E)
    np.add.at(G, np.ravel(ids), np.reshape(grad_out, (-1, E.shape[1])))
    E = E - lr * G
    return E
"""
        },
        fails=ALL,
        says="must update the caller's table in place",
    ),
    "returns the table instead of None": Mistake(
        {
            "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    np.subtract.at(E, np.ravel(ids), lr * np.reshape(grad_out, (-1, E.shape[1])))
    return E
"""
        },
        fails={"test_update_in_place"},
        says="it should return None",
    ),
    "repeated ids averaged": Mistake(
        {
            "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    flat = np.ravel(ids)
    rows, slot, counts = np.unique(flat, return_inverse=True, return_counts=True)
    sums = np.zeros((rows.size, E.shape[1]))
    np.add.at(sums, slot.ravel(), np.reshape(grad_out, (-1, E.shape[1])))
    E[rows] -= lr * sums / counts[:, None]
"""
        },
        fails={"test_update_repeated"},
        says="averaged instead of summed",
    ),
    "gradient ascent (wrong sign)": Mistake(
        {
            "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    np.add.at(E, np.ravel(ids), lr * np.reshape(grad_out, (-1, E.shape[1])))
"""
        },
        fails=ALL,
        says="moved uphill",
    ),
    "scales grad_out in place": Mistake(
        {
            "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    grad_out *= lr                     # changes the caller's gradients
    np.subtract.at(E, np.ravel(ids), np.reshape(grad_out, (-1, E.shape[1])))
"""
        },
        fails=ALL,
        says="modified its input (grad_out)",
    ),
    "works only for 1-D ids": Mistake(
        {
            "sparse_sgd_update_": """
import numpy as np

def sparse_sgd_update_(E, ids, grad_out, lr):
    for n in range(len(ids)):
        E[ids[n]] -= lr * grad_out[n]
"""
        },
        fails={"test_update_repeated", "test_update_batch_shapes"},
        says="it works only for 1-D ids",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "E[ids] -= lr * g (the fancy-indexing trap)"
