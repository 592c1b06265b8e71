"""Sample answers for exercise 1: correct alternatives (full credit) and classic mistakes.

Each entry maps a function name to the complete source of a student's answer cell. Mistakes
list the test cells they must fail and a phrase the feedback must contain.
"""

from . import Mistake

ALTERNATIVES = {
    "np.take": {
        "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    return np.take(E, ids, axis=0)
""",
        "one_hot": """
def one_hot(ids, V):
    ids = np.asarray(ids)
    return np.eye(V)[ids]
""",
    },
    "loop over positions": {
        "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    ids = np.asarray(ids)
    out = np.zeros(ids.shape + (E.shape[1],), dtype=E.dtype)
    for pos in np.ndindex(ids.shape):
        out[pos] = E[ids[pos]]
    return out
""",
        "one_hot": """
def one_hot(ids, V):
    ids = np.asarray(ids)
    out = np.zeros(ids.shape + (V,))
    for pos in np.ndindex(ids.shape):
        out[pos + (ids[pos],)] = 1.0
    return out
""",
    },
    "one-hot matmul": {
        "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    ids = np.asarray(ids)
    oh = (ids[..., None] == np.arange(E.shape[0])).astype(E.dtype)
    return oh @ E
""",
        "one_hot": """
def one_hot(ids, V):
    ids = np.asarray(ids)
    flat = np.zeros((ids.size, V))
    flat[np.arange(ids.size), ids.ravel()] = 1
    return flat.reshape(ids.shape + (V,))
""",
    },
}

MISTAKES = {
    "float64 result": Mistake(
        {
            "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    return np.array(E[ids], dtype=float)
"""
        },
        fails={"test_forward_dtype"},
        says="expected float32",
        id="wrong-dtype",
    ),
    "flat result (works only for 1-D ids)": Mistake(
        {
            "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    return E[np.ravel(ids)]
"""
        },
        fails={
            "test_forward_shape",
            "test_forward_values",
            "test_forward_repeated",
            "test_forward_edge_cases",
            "test_forward_dtype",
        },
        says="lost the shape of ids",
        id="flattened",
    ),
    "off by one": Mistake(
        {
            "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    return E[np.asarray(ids) - 1]
"""
        },
        fails={
            "test_forward_values",
            "test_forward_repeated",
            "test_forward_edge_cases",
            "test_forward_dtype",
        },
        says="row before the right one",
        id="off-by-one",
    ),
    "one_hot returns int64 (astype(int))": Mistake(
        {
            "one_hot": """
def one_hot(ids, V):
    ids = np.asarray(ids)
    return (ids[..., None] == np.arange(V)).astype(np.int64)
"""
        },
        fails={"test_one_hot"},
        says="one_hot returns float64 whatever the dtype of ids",
        id="wrong-dtype",
    ),
    "one_hot flattens 2-D ids": Mistake(
        {
            "one_hot": """
def one_hot(ids, V):
    flat = np.ravel(ids)
    out = np.zeros((flat.size, V))
    out[np.arange(flat.size), flat] = 1.0
    return out
"""
        },
        fails={"test_one_hot"},
        says="one_hot lost the shape of ids",
        id="one-hot-flattened",
    ),
    "modifies the table": Mistake(
        {
            "embedding_forward": """
import numpy as np

def embedding_forward(E, ids):
    E[-1] = 0.0  # "tidy up" the last row in place: the caller's table changes
    return E[ids]
"""
        },
        fails={
            "test_forward_shape",
            "test_forward_values",
            "test_forward_repeated",
            "test_forward_edge_cases",
            "test_forward_dtype",
        },
        says="modified its input (E)",
        id="modified-input",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "float64 result"
