"""Sample answers for the capstone: correct alternatives (full credit) and classic mistakes.

A sample of train_step_ is the answer cell's signature, then the student's body; the given
model_grads it calls is a locked cell of its own, run as the notebook runs it.
"""

from . import Mistake

A = "08_capstone"
TRAIN = {
    "test_train_step_loss",
    "test_train_step_update",
    "test_train_step_repeated",
    "test_train_step_padding",
}
ARRAYS = {"test_train_step_update", "test_train_step_repeated", "test_train_step_padding"}
PADDING = {"test_train_step_padding"}
# the cell that charges a repeated-id mistake (test_train_step_update's ids are distinct, as it
# says; the padding cell's batches repeat ids too, but it excuses a mistake that cell names)
REPEATS = {"test_train_step_repeated"}


HEAD = """
import numpy as np


def train_step_(E, m, v, params, X, Y, t, lr=1e-2, padding_idx=None):
"""


def answer(body: str) -> dict:
    """A whole train_step_ answer cell: the signature, then ``body``."""
    return {"train_step_": HEAD + body}


# The step the mistakes below start from, with one thing changed each.
STEP = """
    H = embedding_forward(E, X)
    loss, G = model_grads(H, params, X, Y)
    rows, values = embedding_backward_rows(X, G)
    if padding_idx is not None:
        keep = rows != padding_idx % E.shape[0]
        rows, values = rows[keep], values[keep]
    sparse_adam_step_(E, m, v, rows, values, t, lr)
    return loss
"""


def changed(old: str, new: str) -> dict:
    """The step with ``old`` (a line or lines of STEP) replaced by ``new``."""
    assert old in STEP, old
    return answer(STEP.replace(old, new))


ALTERNATIVES = {
    "sparse_adam_step_ on the raw ids without the padding positions (it coalesces repeats)": answer(
        """
    H = embedding_forward(E, X)
    loss, G = model_grads(H, params, X, Y)
    keep = np.ones(X.shape, dtype=bool)
    if padding_idx is not None:
        keep = X != range(E.shape[0])[padding_idx]  # range() normalises -1 to V - 1
    sparse_adam_step_(E, m, v, X[keep], G[keep], t, lr)
    return loss
"""
    ),
    "the padding row dropped with np.delete, the padding id normalised by hand": answer(
        """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    rows, values = embedding_backward_rows(X, G)
    if padding_idx is not None:
        p = padding_idx + E.shape[0] if padding_idx < 0 else padding_idx
        where = np.flatnonzero(rows == p)
        rows, values = np.delete(rows, where), np.delete(values, where, axis=0)
    sparse_adam_step_(E, m, v, rows, values, t, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    return float(loss)
"""
    ),
    "a loop over the distinct ids, one call each, the padding id skipped": answer(
        """
    V = E.shape[0]
    H = embedding_forward(E, X)
    loss, G = model_grads(H, params, X, Y)
    rows, values = embedding_backward_rows(X, G)
    skip = None if padding_idx is None else padding_idx % V
    for k, i in enumerate(rows.tolist()):
        if i != skip:
            sparse_adam_step_(E, m, v, np.array([i]), values[k : k + 1], t, lr)
    return loss
"""
    ),
    "the padding positions' gradients zeroed, then the padding row dropped from the rows": answer(
        """
    H = embedding_forward(E, X)
    loss, G = model_grads(H, params, X, Y)
    G = G.copy()
    mask = np.zeros(X.shape, dtype=bool)
    if padding_idx is not None:
        mask = X == np.arange(E.shape[0])[padding_idx]
        G[mask] = 0
    rows, values = embedding_backward_rows(X[~mask], G[~mask])
    sparse_adam_step_(E, m, v, rows, values, t, lr)
    return loss
"""
    ),
}


def _mistake(sources, fails, says, extra=None, id=""):
    return Mistake({**sources, **(extra or {})}, fails=set(fails), says=says, id=id)


MISTAKES = {
    "one Adam update per occurrence (the trap)": _mistake(
        answer(
            """
    loss, G = model_grads(embedding_forward(E, X), params, X, Y)
    flat, Gf = X.reshape(-1), G.reshape(X.size, -1)
    pad = None if padding_idx is None else padding_idx % E.shape[0]
    for n in range(flat.size):
        if flat[n] != pad:
            sparse_adam_step_(E, m, v, flat[n : n + 1], Gf[n : n + 1], t, lr)
    return loss
"""
        ),
        REPEATS,
        "one Adam update per occurrence",
        id="step-per-occurrence",
    ),
    "values[slot] += G written in train_step_ (one occurrence kept)": _mistake(
        changed(
            "    rows, values = embedding_backward_rows(X, G)\n",
            "    rows, slot = np.unique(X, return_inverse=True)\n"
            "    values = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)\n"
            "    values[slot.reshape(-1)] += G.reshape(X.size, -1)\n",
        ),
        REPEATS,
        "only one occurrence of a repeated id reached",
        id="step-trap-overwrite",
    ),
    "every row updated (the scattered values for all V rows)": _mistake(
        changed(
            "    sparse_adam_step_(E, m, v, rows, values, t, lr)\n",
            "    dE = np.zeros_like(E)\n"
            "    dE[rows] = values\n"
            "    sparse_adam_step_(E, m, v, np.arange(E.shape[0]), dE, t, lr)\n",
        ),
        # the padding cell too: its padding row has moments, and the dense step decays them
        {"test_train_step_update", *PADDING},
        "rows that X does not touch changed",
        id="step-dense",
    ),
    "t not passed on (always 1)": _mistake(
        changed("rows, values, t, lr)", "rows, values, 1, lr)"),
        {"test_train_step_update"},  # a wiring slip: the update cell alone charges it
        "the step number was not passed on",
        id="t-not-passed",
    ),
    "lr not passed on (sparse_adam_step_'s default)": _mistake(
        changed("rows, values, t, lr)", "rows, values, t)"),
        {"test_train_step_update"},
        "the learning rate was not passed on",
        id="lr-not-passed",
    ),
    "returns the loss after the update": _mistake(
        changed(
            "    return loss\n",
            "    return model_grads(embedding_forward(E, X), params, X, Y)[0]\n",
        ),
        {"test_train_step_loss"},
        "returned the loss after the update",
        id="loss-after-update",
    ),
    "forgets to return the loss": _mistake(
        changed("    return loss\n", ""),
        {"test_train_step_loss"},
        "Did you forget the return statement",
        id="returned-none",
    ),
    "t - 1 passed on to sparse_adam_step_": _mistake(
        changed("rows, values, t, lr)", "rows, values, t - 1, lr)"),  # ZeroDivisionError at t = 1
        {"test_train_step_loss", "test_train_step_update"},  # the loss cell: it raises at t = 1
        "the step number was passed on off by one (t - 1)",
        id="step-t-minus-one",
    ),
    "the summed rows handed to the step once per occurrence (k times the gradient)": _mistake(
        changed(
            "    sparse_adam_step_(E, m, v, rows, values, t, lr)\n",
            "    slot = np.searchsorted(rows, X)  # each position's row of values\n"
            "    on = np.isin(X, rows)\n"
            "    sparse_adam_step_(E, m, v, X[on], values[slot[on]], t, lr)  # summed again\n",
        ),
        REPEATS,
        "got k times its gradient",
        id="summed-rows-per-occurrence",
    ),
    "works on copies (E = E.copy())": _mistake(
        answer("    E, m, v = E.copy(), m.copy(), v.copy()\n" + STEP),
        ARRAYS,
        "E, m and v did not change",
        id="step-not-in-place",
    ),
    "works on a copy of E alone (E = E.copy()): m and v change, E does not": _mistake(
        answer("    E = E.copy()\n" + STEP),
        ARRAYS,
        "E did not change (m and v did)",
        id="step-not-in-place",
    ),
    "padding_idx ignored (the padding row trains)": _mistake(
        changed(
            "    if padding_idx is not None:\n"
            "        keep = rows != padding_idx % E.shape[0]\n"
            "        rows, values = rows[keep], values[keep]\n",
            "",
        ),
        PADDING,
        "the padding row trained",
        id="padding-moved",
    ),
    "`if padding_idx:` (padding_idx = 0 skipped)": _mistake(
        changed("    if padding_idx is not None:\n", "    if padding_idx:\n"),
        PADDING,
        "0 is a valid padding id",
        id="padding-moved",
    ),
    "a negative padding_idx compared as it is (rows != -1)": _mistake(
        changed("keep = rows != padding_idx % E.shape[0]", "keep = rows != padding_idx"),
        PADDING,
        "a negative one counts from the end",
        id="padding-moved",
    ),
    "the padding row's gradient zeroed, the row kept in the step (moments decay)": _mistake(
        changed(
            "        keep = rows != padding_idx % E.shape[0]\n"
            "        rows, values = rows[keep], values[keep]\n",
            "        values[rows == padding_idx % E.shape[0]] = 0\n",
        ),
        PADDING,
        "the padding row's moments changed",
        id="padding-moments-decayed",
    ),
    "no bias correction written inline in train_step_ (a correct Part A unused)": _mistake(
        changed(
            "    sparse_adam_step_(E, m, v, rows, values, t, lr)\n",
            "    m[rows] = 0.9 * m[rows] + 0.1 * values\n"
            "    v[rows] = 0.999 * v[rows] + 0.001 * values**2\n"
            "    E[rows] -= lr * m[rows] / (np.sqrt(v[rows]) + 1e-8)\n",
        ),
        # the same mistake as Part A's step-no-bias-correction, made in train_step_ itself: the
        # student's own (correct) sparse_adam_step_ excuses nothing
        ARRAYS,
        "the mistake is in train_step_ itself",
        id="step-no-bias-correction",
    ),
    "only m bias-corrected inline in train_step_ (a correct Part A unused)": _mistake(
        changed(
            "    sparse_adam_step_(E, m, v, rows, values, t, lr)\n",
            "    m[rows] = 0.9 * m[rows] + 0.1 * values\n"
            "    v[rows] = 0.999 * v[rows] + 0.001 * values**2\n"
            "    E[rows] -= lr / (1 - 0.9**t) * m[rows] / (np.sqrt(v[rows]) + 1e-8)\n",
        ),
        ARRAYS,
        "only m was bias-corrected",
        id="step-only-m-corrected",
    ),
    "exercise 2's trap (values[slot] += g) pasted into embedding_backward_rows": Mistake(
        {
            "embedding_backward_rows": """
import numpy as np

def embedding_backward_rows(ids, grad_out):
    ids = np.asarray(ids).reshape(-1)
    g = np.asarray(grad_out).reshape(ids.size, -1)
    rows, slot = np.unique(ids, return_inverse=True)
    values = np.zeros((rows.size, g.shape[1]), dtype=g.dtype)
    values[slot] += g
    return rows, values
"""
        },
        fails={"test_backward_rows", *REPEATS},
        says="repeated ids overwrote each other",
        id="trap-overwrite",
    ),
    "rows not coalesced (one per position) in embedding_backward_rows": Mistake(
        {
            "embedding_backward_rows": """
import numpy as np

def embedding_backward_rows(ids, grad_out):
    ids = np.asarray(ids).reshape(-1)
    return ids, np.asarray(grad_out).reshape(ids.size, -1)
"""
        },
        # sparse_adam_step_ coalesces what it is handed, so the step is right: only the
        # function's own cell sees it (and the padding row is still dropped by id)
        fails={"test_backward_rows"},
        says="rows lists an id more than once",
        id="rows-not-coalesced",
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
        # train_step_ hands it distinct rows (embedding_backward_rows summed them first): only
        # the function's own test cell sees the trap
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
    if flat.size == 0:
        return None
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    E[rows] -= lr / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
"""
        },
        # train_step_ is right for its own sparse_adam_step_: only Part A's cell charges it
        fails={"test_adam"},
        says="only m was bias-corrected",
        id="only-m-corrected",
    ),
    "no bias correction (step size lr) in sparse_adam_step_": Mistake(
        {
            "sparse_adam_step_": """
import numpy as np

def sparse_adam_step_(E, m, v, ids, grad_out, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    flat = np.ravel(ids)
    if flat.size == 0:
        return None
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    E[rows] -= lr * m[rows] / (np.sqrt(v[rows]) + eps)
"""
        },
        # train_step_ is right for its own sparse_adam_step_: only Part A's cell charges it
        fails={"test_adam"},
        says="the bias correction is missing",
        id="no-bias-correction",
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
    "eps bias-corrected (textbook Adam: m_hat / (sqrt(v_hat) + eps)) in sparse_adam_step_": Mistake(
        {
            "sparse_adam_step_": """
import numpy as np

def sparse_adam_step_(E, m, v, ids, grad_out, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
    flat = np.ravel(ids)
    if flat.size == 0:
        return None
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    m_hat = m[rows] / (1 - b1 ** t)
    v_hat = v[rows] / (1 - b2 ** t)
    E[rows] -= lr * m_hat / (np.sqrt(v_hat) + eps)
"""
        },
        # train_step_ is right for its own sparse_adam_step_: only Part A's cell charges it
        fails={"test_adam"},
        says="eps was bias-corrected",
        id="eps-corrected",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "one Adam update per occurrence (the trap)"


# ------------------------------------------------------------------------------------------
# Part C: train_step_tied_
# ------------------------------------------------------------------------------------------
TIED_LOSS, TIED_PATHS = "test_tied_loss", "test_tied_paths"
TIED_REPEATED, TIED_ADAM = "test_tied_repeated", "test_tied_adam"
TIED_PADDING = "test_tied_padding"
TIED_ARRAYS = {TIED_PATHS, TIED_REPEATED, TIED_ADAM, TIED_PADDING}
TIED_HEAD = """
import numpy as np


def train_step_tied_(E, m, v, params, X, Y, t, lr=1e-2, padding_idx=None):
"""
# The answers below handle padding_idx as nn.Embedding does: the lookup's upstream rows G at
# the padding positions are zeroed (a mask before accumulation); the output part is kept.
TIED_MASK = """
    def lookup_grads(H, E, params, Y):
        loss, G, Z, dS = tied_model_grads(H, E, params, Y)
        if padding_idx is not None:
            pads = np.asarray(X) == padding_idx % E.shape[0]
            G = np.where(pads[..., None], np.zeros_like(G), G)
        return loss, G, Z, dS
"""
# The step the tied mistakes below start from (lookup, both paths, one dense Adam step).
TIED = """
    X = np.asarray(X)
    loss, G, Z, dS = tied_model_grads(E[X], E, params, Y)
    dE = dS.T @ Z
    np.add.at(dE, X.reshape(-1), G.reshape(X.size, -1))
    m *= 0.9
    m += 0.1 * dE
    v *= 0.999
    v += 0.001 * dE * dE
    E -= lr / (1 - 0.9**t) * m / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return loss
"""
# A dense torch.optim.Adam step as a helper, for the answers that take it twice.
ADAM_HELPER = """
    def adam(g, step):
        m[:] = 0.9 * m + 0.1 * g
        v[:] = 0.999 * v + 0.001 * g * g
        E[:] -= lr / (1 - 0.9**step) * m / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
"""


def tied_answer(body: str, mask: bool = True) -> dict:
    """train_step_tied_ with ``body``; ``mask``: its padding positions masked (TIED_MASK)."""
    if mask:
        body = TIED_MASK + body.replace("tied_model_grads(", "lookup_grads(")
    return {"train_step_tied_": TIED_HEAD + body}


# The reference's Adam step (m, v, then E), which the step mistakes replace whole.
TIED_STEP = TIED[TIED.index("    m *= 0.9") : TIED.index("    return loss")]


def tied_changed(old: str, new: str) -> dict:
    assert old in TIED, old
    return tied_answer(TIED.replace(old, new))


TIED_ALTERNATIVES = {
    "np.bincount per column, the output part as (Z.T @ dS).T, Part A's sparse_adam_step_ on "
    "every row with eps scaled to Adam's": tied_answer(
        """
    V, d = E.shape
    ids = np.asarray(X).ravel()
    loss, G, Z, dS = tied_model_grads(embedding_forward(E, X), E, params, Y)
    Gf = G.reshape(ids.size, d)
    lookup = np.stack([np.bincount(ids, weights=Gf[:, j], minlength=V) for j in range(d)], axis=1)
    dE = (lookup + (Z.T @ dS).T).astype(E.dtype)
    # Adam's m / (sqrt(v / c2) + eps) is SparseAdam's rule with eps * sqrt(c2) in place of eps
    sparse_adam_step_(E, m, v, np.arange(V), dE, t, lr, eps=1e-8 * np.sqrt(1 - 0.999**t))
    return loss
"""
    ),
    "a one-hot matrix for the lookup's part, np.einsum for the output's, m[:] = ...": tied_answer(
        """
    V = E.shape[0]
    ids = np.asarray(X).reshape(-1)
    loss, G, Z, dS = tied_model_grads(E[X], E, params, Y)
    S = (ids[:, None] == np.arange(V)).astype(E.dtype)  # (N, V): S[n, i] = 1 where x_n = i
    dE = S.T @ G.reshape(ids.size, -1) + np.einsum("bv,bd->vd", dS, Z)
    b1, b2 = 0.9, 0.999
    m[:] = b1 * m + (1 - b1) * dE
    v[:] = b2 * v + (1 - b2) * dE**2
    m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
    E[:] = E - lr * m_hat / (np.sqrt(v_hat) + 1e-8)
    return float(loss)
"""
    ),
    "loops: one position at a time, one row at a time": tied_answer(
        """
    V, d = E.shape
    ids = np.asarray(X).reshape(-1)
    loss, G, Z, dS = tied_model_grads(E[X], E, params, Y)
    Gf = G.reshape(ids.size, d)
    dE = np.zeros_like(E)
    for n in range(ids.size):
        dE[ids[n]] += Gf[n]
    for b in range(Z.shape[0]):
        dE += np.outer(dS[b], Z[b])  # (V,) x (d,) -> (V, d)
    c1, c2 = 1 - 0.9**t, 1 - 0.999**t
    for i in range(V):
        m[i] = 0.9 * m[i] + 0.1 * dE[i]
        v[i] = 0.999 * v[i] + 0.001 * dE[i] ** 2
        E[i] -= lr / c1 * m[i] / (np.sqrt(v[i]) / np.sqrt(c2) + 1e-8)
    return loss
"""
    ),
    "sorted ids and np.add.reduceat, np.multiply(..., out=)": tied_answer(
        """
    ids = np.asarray(X).reshape(-1)
    loss, G, Z, dS = tied_model_grads(E[X], E, params, Y)
    Gf = G.reshape(ids.size, -1)
    order = np.argsort(ids, kind="stable")
    rows, starts = np.unique(ids[order], return_index=True)
    dE = dS.T @ Z
    if rows.size:
        dE[rows] += np.add.reduceat(Gf[order], starts, axis=0)
    np.multiply(m, 0.9, out=m)
    m += 0.1 * dE
    np.multiply(v, 0.999, out=v)
    v += 0.001 * np.square(dE)
    E -= (lr / (1 - 0.9**t)) * m / (np.sqrt(v) / (1 - 0.999**t) ** 0.5 + 1e-8)
    return loss
"""
    ),
    "padding_idx: a mask on the ids before np.add.at": tied_answer(
        """
    ids = np.asarray(X).reshape(-1)
    loss, G, Z, dS = tied_model_grads(E[X], E, params, Y)
    rows = G.reshape(ids.size, -1)
    if padding_idx is not None:
        keep = ids != padding_idx % E.shape[0]
        ids, rows = ids[keep], rows[keep]
    dE = dS.T @ Z
    np.add.at(dE, ids, rows)
    m *= 0.9
    m += 0.1 * dE
    v *= 0.999
    v += 0.001 * dE * dE
    E -= lr / (1 - 0.9**t) * m / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return loss
""",
        mask=False,
    ),
    "padding_idx: the padding row of the lookup's part zeroed after accumulating": tied_answer(
        """
    X = np.asarray(X)
    loss, G, Z, dS = tied_model_grads(E[X], E, params, Y)
    lookup = np.zeros_like(E)
    np.add.at(lookup, X.reshape(-1), G.reshape(X.size, -1))
    if padding_idx is not None:
        lookup[padding_idx] = 0  # a negative padding_idx indexes from the end, as nn.Embedding's
    dE = lookup + dS.T @ Z
    b1, b2 = 0.9, 0.999
    m[:] = b1 * m + (1 - b1) * dE
    v[:] = b2 * v + (1 - b2) * dE**2
    E[:] = E - lr / (1 - b1**t) * m / (np.sqrt(v / (1 - b2**t)) + 1e-8)
    return loss
""",
        mask=False,
    ),
}
ALTERNATIVES.update(TIED_ALTERNATIVES)

TIED_MISTAKE_SAMPLES = {
    "tied: only the lookup's gradient (the output projection's left out)": _mistake(
        tied_changed("    dE = dS.T @ Z\n", "    dE = np.zeros_like(E)\n"),
        {TIED_PATHS},
        "only the lookup's gradient reached the step",
        id="tied-input-path-only",
    ),
    "tied: only the output projection's gradient (G left out)": _mistake(
        tied_changed("    np.add.at(dE, X.reshape(-1), G.reshape(X.size, -1))\n", ""),
        {TIED_PATHS},
        "only the output projection's gradient reached the step",
        id="tied-output-path-only",
    ),
    "tied: dE[X] += G (repeated ids keep one row of G)": _mistake(
        tied_changed(
            "    np.add.at(dE, X.reshape(-1), G.reshape(X.size, -1))\n", "    dE[X] += G\n"
        ),
        {TIED_REPEATED},
        "repeated ids overwrote each other",
        id="tied-trap-overwrite",
    ),
    "tied: a lazy step, sparse_adam_step_ on the looked-up rows with their merged gradient": _mistake(
        tied_changed(
            TIED_STEP,
            "    rows = np.unique(X)\n    sparse_adam_step_(E, m, v, rows, dE[rows], t, lr)\n",
        ),
        {TIED_ADAM},
        "only the rows X looks up took an Adam step",
        id="tied-lazy-step",
    ),
    "tied: two dense Adam steps, one per path, both at t": _mistake(
        tied_answer(
            ADAM_HELPER
            + """
    X = np.asarray(X)
    loss, G, Z, dS = tied_model_grads(E[X], E, params, Y)
    g_in = np.zeros_like(E)
    np.add.at(g_in, X.reshape(-1), G.reshape(X.size, -1))
    adam(g_in, t)
    adam(dS.T @ Z, t)
    return loss
"""
        ),
        {TIED_ADAM},
        "Adam stepped twice, once per path",
        id="tied-two-steps",
    ),
    "tied: Part A's lazy step for the lookup's part at t, then a dense one for the output's at t + 1": _mistake(
        tied_answer(
            ADAM_HELPER
            + """
    loss, G, Z, dS = tied_model_grads(E[X], E, params, Y)
    sparse_adam_step_(E, m, v, X, G, t, lr)
    adam(dS.T @ Z, t + 1)
    return loss
"""
        ),
        {TIED_ADAM},
        "or t advanced between the paths",
        id="tied-two-steps",
    ),
    "tied: the output part computed as Z.T @ dS, (d, V), reshaped to (V, d)": _mistake(
        tied_changed("    dE = dS.T @ Z\n", "    dE = (Z.T @ dS).reshape(E.shape)\n"),
        {TIED_PATHS},
        "the output projection's gradient has the wrong layout",
        id="tied-output-transposed",
    ),
    "tied: the output part Z.T @ dS, (d, V), added to the (V, d) gradient as it is (it raises)": _mistake(
        tied_changed(
            "    dE = dS.T @ Z\n    np.add.at(dE, X.reshape(-1), G.reshape(X.size, -1))\n",
            "    dE = np.zeros_like(E)\n"
            "    np.add.at(dE, X.reshape(-1), G.reshape(X.size, -1))\n"
            "    dE += Z.T @ dS\n",
        ),
        # it raises before it returns the loss, so every cell of Part C fails (and says why)
        {TIED_LOSS, *TIED_ARRAYS},
        "the output projection's gradient has the wrong layout",
        id="tied-output-transposed",
    ),
    "tied: SparseAdam's rule on every row (sparse_adam_step_ on np.arange(V))": _mistake(
        tied_changed(
            TIED_STEP,
            "    sparse_adam_step_(E, m, v, np.arange(E.shape[0]), dE, t, lr)\n",
        ),
        {TIED_ADAM},
        "SparseAdam's update rule was used",
        id="tied-sparseadam-eps",
    ),
    "tied: Part B's step reused (the lookup's gradient, a lazy sparse step)": _mistake(
        tied_answer(
            """
    loss, G, Z, dS = tied_model_grads(embedding_forward(E, X), E, params, Y)
    rows, values = embedding_backward_rows(X, G)
    sparse_adam_step_(E, m, v, rows, values, t, lr)
    return loss
"""
        ),
        TIED_ARRAYS,
        "this is Part B's step",
        id="tied-untied-step",
    ),
    "tied: m = 0.9 * m + ... (new arrays bound to m and v; the caller's never change)": _mistake(
        tied_changed(
            "    m *= 0.9\n    m += 0.1 * dE\n    v *= 0.999\n    v += 0.001 * dE * dE\n",
            "    m = 0.9 * m + 0.1 * dE\n    v = 0.999 * v + 0.001 * dE * dE\n",
        ),
        TIED_ARRAYS,
        "m and v did not change (E did)",
        id="tied-not-in-place",
    ),
    "tied: t not used in the step (the first step's bias corrections, 0.9**1 and 0.999**1)": _mistake(
        tied_changed(
            "E -= lr / (1 - 0.9**t) * m / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)",
            "E -= lr / (1 - 0.9) * m / (np.sqrt(v / (1 - 0.999)) + 1e-8)",
        ),
        {TIED_ADAM},  # the gradient (m) is right: the paths and repeated cells grade that
        "the step number was not used",
        id="tied-t-not-passed",
    ),
    "tied: t + 1 in the bias corrections": _mistake(
        tied_changed(
            "E -= lr / (1 - 0.9**t) * m / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)",
            "E -= lr / (1 - 0.9 ** (t + 1)) * m / (np.sqrt(v / (1 - 0.999 ** (t + 1))) + 1e-8)",
        ),
        {TIED_ADAM},
        "the step number is off by one (t + 1 used)",
        id="tied-t-plus-one",
    ),
    "tied: no bias correction (E -= lr * m / (sqrt(v) + eps))": _mistake(
        tied_changed(
            "E -= lr / (1 - 0.9**t) * m / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)",
            "E -= lr * m / (np.sqrt(v) + 1e-8)",
        ),
        {TIED_ADAM},
        "the bias correction is missing",
        id="tied-no-bias-correction",
    ),
    "tied: Part A's sparse_adam_step_ on every row, eps scaled, lr not passed (its 1e-3)": _mistake(
        tied_changed(
            TIED_STEP,
            "    V = E.shape[0]\n"
            "    sparse_adam_step_(E, m, v, np.arange(V), dE, t, eps=1e-8 * np.sqrt(1 - 0.999**t))\n",
        ),
        {TIED_ADAM},
        "the learning rate was not used",
        id="tied-lr-not-passed",
    ),
    "tied: E moved before m and v are updated (the old moments)": _mistake(
        tied_answer(
            TIED.replace(
                "    m *= 0.9\n",
                "    E -= lr / (1 - 0.9**t) * m / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)\n"
                "    m *= 0.9\n",
            ).replace(
                "    E -= lr / (1 - 0.9**t) * m / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)\n"
                "    return loss\n",
                "    return loss\n",
            )
        ),
        {TIED_ADAM},  # from zero moments E does not move: E did not change, m and v did
        "E took its step with the old m and v",
        id="tied-step-before-moments",
    ),
    "tied: E = E - ... (a new array bound to E; m and v change in place)": _mistake(
        tied_changed("    E -= lr", "    E = E - lr"),
        {TIED_ADAM},  # m and v, the gradient, are right: the adam cell charges the step
        "E did not change (m and v did)",
        id="tied-not-in-place",
    ),
    "tied: E = np.asarray(E, dtype=np.float64) (a copy for a float32 table)": _mistake(
        tied_answer("    E = np.asarray(E, dtype=np.float64)\n" + TIED),
        {TIED_ADAM},  # the float32 cases: E is a copy; m and v are the caller's
        "converting a float32 table to float64 makes a copy",
        id="tied-not-in-place",
    ),
    "tied: E, m and v converted to float64 (copies for a float32 model)": _mistake(
        tied_answer("    E, m, v = (np.asarray(a, dtype=np.float64) for a in (E, m, v))\n" + TIED),
        {TIED_REPEATED, TIED_ADAM, TIED_PADDING},  # the cells with a float32 case (not paths)
        "converting a float32 table to float64 makes a copy",
        id="tied-not-in-place",
    ),
    "tied: repeated ids averaged in the lookup's part": _mistake(
        tied_changed(
            "    np.add.at(dE, X.reshape(-1), G.reshape(X.size, -1))\n",
            "    counts = np.bincount(X.reshape(-1), minlength=E.shape[0])[:, None]\n"
            "    lookup = np.zeros_like(E)\n"
            "    np.add.at(lookup, X.reshape(-1), G.reshape(X.size, -1))\n"
            "    dE += lookup / np.maximum(counts, 1)\n",
        ),
        {TIED_REPEATED},  # test_tied_paths' ids are distinct; the adam cell excuses it
        "repeated ids were averaged",
        id="tied-averaged",
    ),
    "tied: either path per row (looked-up rows the lookup's part, the others the output's)": _mistake(
        tied_changed(
            "    np.add.at(dE, X.reshape(-1), G.reshape(X.size, -1))\n",
            "    lookup = np.zeros_like(E)\n"
            "    np.add.at(lookup, X.reshape(-1), G.reshape(X.size, -1))\n"
            "    rows = np.unique(X)\n"
            "    dE[rows] = lookup[rows]\n",
        ),
        {TIED_PATHS},
        "each row got one path's part, not both",
        id="tied-either-or",
    ),
    "tied: the padding row frozen, its m and v too (Part B's rule)": _mistake(
        tied_answer(
            """
    p = None if padding_idx is None else padding_idx % E.shape[0]
    if p is not None:
        kept = (E[p].copy(), m[p].copy(), v[p].copy())
"""
            + TIED.replace(
                "    return loss\n",
                "    if p is not None:\n        E[p], m[p], v[p] = kept\n    return loss\n",
            )
        ),
        {TIED_PADDING},
        "the padding row, its m and its v did not change",
        id="tied-padding-frozen",
    ),
    "tied: the padding row given no gradient at all (its output part dropped too)": _mistake(
        tied_changed(
            "    m *= 0.9\n",
            "    if padding_idx is not None:\n        dE[padding_idx] = 0\n    m *= 0.9\n",
        ),
        {TIED_PADDING},
        "the padding row got no gradient at all",
        id="tied-padding-output-dropped",
    ),
    "tied: padding_idx ignored (the padding positions' rows of G reach the padding row)": _mistake(
        tied_answer(TIED, mask=False),
        {TIED_PADDING},
        "were added to the padding row, as if padding_idx were None",
        id="tied-padding-lookup-kept",
    ),
    "tied: returns the loss after the update": _mistake(
        tied_changed("    return loss\n", "    return tied_model_grads(E[X], E, params, Y)[0]\n"),
        {TIED_LOSS},
        "returned the loss after the update",
        id="loss-after-update",
    ),
}
MISTAKES.update(TIED_MISTAKE_SAMPLES)
