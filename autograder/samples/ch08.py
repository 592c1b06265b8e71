"""Sample answers for the capstone: correct alternatives (full credit) and classic mistakes.

A sample of train_step_ is the answer cell's signature, then the student's body; the given
model_grads it calls is a locked cell of its own, run as the notebook runs it.
"""

from . import Mistake

A = "08_capstone"
TRAIN = {"test_train_step_loss", "test_train_step_update", "test_train_step_repeated"}
ARRAYS = {"test_train_step_update", "test_train_step_repeated"}


HEAD = """
import numpy as np


def train_step_(E, m, v, params, X, Y, t, lr=1e-2):
"""


def answer(body: str) -> dict:
    """A whole train_step_ answer cell: the signature, then ``body``."""
    return {"train_step_": HEAD + body}


ALTERNATIVES = {
    "sparse_adam_step_ on the raw ids (it coalesces repeated ids itself)": answer(
        """
    H = embedding_forward(E, X)
    loss, G = model_grads(H, params, X, Y)
    sparse_adam_step_(E, m, v, X, G, t, lr)
    return loss
"""
    ),
    "the touched rows from a boolean mask of dE's nonzero counts": answer(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    dE = embedding_backward(X, G, E.shape[0])
    touched = np.bincount(X.ravel(), minlength=E.shape[0]) > 0
    rows = np.flatnonzero(touched)
    sparse_adam_step_(E, m, v, rows, dE[rows], t, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    return float(loss)
"""
    ),
    "a loop over the distinct ids, one call each": answer(
        """
    H = embedding_forward(E, X)
    loss, G = model_grads(H, params, X, Y)
    dE = embedding_backward(X, G, E.shape[0])
    for i in sorted(set(X.ravel().tolist())):
        sparse_adam_step_(E, m, v, np.array([i]), dE[i : i + 1], t, lr)
    return loss
"""
    ),
}


def _mistake(body, fails, says, extra=None, id=""):
    return Mistake({**answer(body), **(extra or {})}, fails=set(fails), says=says, id=id)


MISTAKES = {
    "one Adam update per occurrence (the trap)": _mistake(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    flat, Gf = X.reshape(-1), G.reshape(X.size, -1)
    for n in range(flat.size):
        sparse_adam_step_(E, m, v, flat[n : n + 1], Gf[n : n + 1], t, lr)
    return loss
""",
        {"test_train_step_update", "test_train_step_repeated"},
        "one Adam update per occurrence",
        id="step-per-occurrence",
    ),
    "dE[X] += G instead of embedding_backward": _mistake(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    dE = np.zeros_like(E)
    dE[X.reshape(-1)] += G.reshape(X.size, -1)
    rows = np.unique(X)
    sparse_adam_step_(E, m, v, rows, dE[rows], t, lr)
    return loss
""",
        {"test_train_step_update", "test_train_step_repeated"},
        "only one occurrence of a repeated id reached",
        id="step-trap-overwrite",
    ),
    "every row updated (the whole dE to sparse_adam_step_)": _mistake(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    dE = embedding_backward(X, G, E.shape[0])
    sparse_adam_step_(E, m, v, np.arange(E.shape[0]), dE, t, lr)
    return loss
""",
        {"test_train_step_update", "test_train_step_repeated"},
        "rows that X does not touch changed",
        id="step-dense",
    ),
    "t not passed on (always 1)": _mistake(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    dE = embedding_backward(X, G, E.shape[0])
    rows = np.unique(X)
    sparse_adam_step_(E, m, v, rows, dE[rows], 1, lr)
    return loss
""",
        {"test_train_step_update", "test_train_step_repeated"},
        "the step number was not passed on",
        id="t-not-passed",
    ),
    "lr not passed on (sparse_adam_step_'s default)": _mistake(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    dE = embedding_backward(X, G, E.shape[0])
    rows = np.unique(X)
    sparse_adam_step_(E, m, v, rows, dE[rows], t)
    return loss
""",
        {"test_train_step_update", "test_train_step_repeated"},
        "the learning rate was not passed on",
        id="lr-not-passed",
    ),
    "returns the loss after the update": _mistake(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    dE = embedding_backward(X, G, E.shape[0])
    rows = np.unique(X)
    sparse_adam_step_(E, m, v, rows, dE[rows], t, lr)
    return model_grads(embedding_forward(E, X), params, X, Y)[0]
""",
        {"test_train_step_loss"},
        "returned the loss after the update",
        id="loss-after-update",
    ),
    "forgets to return the loss": _mistake(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    dE = embedding_backward(X, G, E.shape[0])
    rows = np.unique(X)
    sparse_adam_step_(E, m, v, rows, dE[rows], t, lr)
""",
        {"test_train_step_loss"},
        "Did you forget the return statement",
        id="returned-none",
    ),
    "t - 1 passed on to sparse_adam_step_": _mistake(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    dE = embedding_backward(X, G, E.shape[0])
    rows = np.unique(X)
    sparse_adam_step_(E, m, v, rows, dE[rows], t - 1, lr)  # ZeroDivisionError at t = 1
    return loss
""",
        TRAIN,
        "the step number was passed on off by one (t - 1)",
        id="step-t-minus-one",
    ),
    "the summed rows passed once per occurrence (k times the gradient)": _mistake(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    dE = embedding_backward(X, G, E.shape[0])  # each row already summed over X
    sparse_adam_step_(E, m, v, X, dE[X], t, lr)  # ... and summed again per occurrence
    return loss
""",
        {"test_train_step_update", "test_train_step_repeated"},
        "got k times its gradient",
        id="summed-rows-per-occurrence",
    ),
    "works on copies (E = E.copy())": _mistake(
        """
    E, m, v = E.copy(), m.copy(), v.copy()
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    dE = embedding_backward(X, G, E.shape[0])
    rows = np.unique(X)
    sparse_adam_step_(E, m, v, rows, dE[rows], t, lr)
    return loss
""",
        ARRAYS,
        "did not change",
        id="step-not-in-place",
    ),
    "exercise 2's trap (dE[ids] += g) pasted into embedding_backward": Mistake(
        {
            "embedding_backward": """
import numpy as np

def embedding_backward(ids, grad_out, V, padding_idx=None):
    ids = np.asarray(ids).reshape(-1)
    g = np.asarray(grad_out).reshape(ids.size, -1)
    dE = np.zeros((V, g.shape[1]), dtype=g.dtype)
    dE[ids] += g
    if padding_idx is not None:
        dE[padding_idx] = 0
    return dE
"""
        },
        fails={"test_backward", "test_train_step_update", "test_train_step_repeated"},
        says="repeated ids overwrote each other",
        id="trap-overwrite",
    ),
    "exercise 3's trap (one update per occurrence) pasted into sparse_adam_step_": Mistake(
        {
            "sparse_adam_step_": """
import numpy as np

def sparse_adam_step_(E, m, v, ids, grad_out, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    b1, b2 = betas
    alpha = lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)
    for i, g in zip(np.ravel(ids), np.reshape(grad_out, (-1, E.shape[1]))):
        m[i] = b1 * m[i] + (1 - b1) * g
        v[i] = b2 * v[i] + (1 - b2) * g ** 2
        E[i] -= alpha * m[i] / (np.sqrt(v[i]) + eps)
"""
        },
        # train_step_ hands it distinct rows (embedding_backward summed them first): only the
        # function's own test cell sees the trap
        fails={"test_adam"},
        says="one Adam update per occurrence",
        id="per-occurrence",
    ),
    "only m bias-corrected (lr / (1 - b1**t)) in sparse_adam_step_": Mistake(
        {
            "sparse_adam_step_": """
import numpy as np

def sparse_adam_step_(E, m, v, ids, grad_out, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    E[rows] -= lr / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
"""
        },
        # the step size is wrong whatever train_step_ hands it: the two update cells too
        fails={"test_adam", "test_train_step_update", "test_train_step_repeated"},
        says="only m was bias-corrected",
        id="only-m-corrected",
    ),
    "v from the sum of squares in sparse_adam_step_": Mistake(
        {
            "sparse_adam_step_": """
import numpy as np

def sparse_adam_step_(E, m, v, ids, grad_out, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    gr = np.reshape(grad_out, (flat.size, E.shape[1]))
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    g2 = np.zeros_like(g)
    np.add.at(g, slot.ravel(), gr)
    np.add.at(g2, slot.ravel(), gr ** 2)
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g2
    E[rows] -= lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
"""
        },
        # train_step_ hands it distinct rows, already summed: only its own cell sees it
        fails={"test_adam"},
        says="the sum of the squares",
        id="sum-of-squares",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "one Adam update per occurrence (the trap)"
