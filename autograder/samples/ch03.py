"""Sample answers for exercise 3: correct alternatives (full credit) and classic mistakes.

Each entry maps a function name to the complete source of a student's answer cell. Mistakes
list the test cells they must fail and a phrase the feedback must contain.
"""

from . import Mistake

ALL = {
    "test_adam_in_place",
    "test_adam_first_step",
    "test_adam_repeated",
    "test_adam_lazy",
    "test_adam_bias_and_eps",
    "test_adam_shapes_and_edges",
    "test_adam_float32_and_inputs",
}
# The one cell with repeated ids: the other cells use distinct ids, so a repeated-id mistake
# costs this cell alone.
REPEATS = {"test_adam_repeated"}
# The cell about the step size: the other cells excuse a step-size mistake (m and v right).
BIAS = {"test_adam_bias_and_eps"}

HEAD = """
import numpy as np

def sparse_adam_step_(E, m, v, ids, grad_out, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
"""


def answer(body: str) -> dict:
    """A whole answer cell: the usual signature, then ``body`` (indented by 4)."""
    return {"sparse_adam_step_": HEAD + body}


# The update once the touched rows are distinct and g holds one summed gradient per row.
UPDATE = """
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    alpha = lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)
    E[rows] -= alpha * m[rows] / (np.sqrt(v[rows]) + eps)
"""

ALTERNATIVES = {
    "np.add.at into a dense (V, d) gradient, then the rows that occur": answer(
        """
    flat = np.ravel(ids)
    dE = np.zeros_like(E)
    np.add.at(dE, flat, np.reshape(grad_out, (flat.size, E.shape[1])))
    rows = np.unique(flat)
    g = dE[rows]
"""
        + UPDATE
    ),
    "np.unique + bincount per column": answer(
        """
    flat = np.asarray(ids).reshape(-1)
    if flat.size == 0:
        return
    rows, slot = np.unique(flat, return_inverse=True)
    gr = np.asarray(grad_out).reshape(flat.size, -1)
    g = np.stack(
        [np.bincount(slot.ravel(), weights=gr[:, j], minlength=rows.size) for j in range(gr.shape[1])],
        axis=1,
    ).astype(E.dtype)
"""
        + UPDATE
    ),
    "sort + np.add.reduceat": answer(
        """
    flat = np.asarray(ids).reshape(-1)
    if flat.size == 0:
        return None
    gr = np.asarray(grad_out).reshape(flat.size, E.shape[1])
    order = np.argsort(flat, kind="stable")
    s = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    g = np.add.reduceat(gr[order], starts, axis=0)
    rows = s[starts]
"""
        + UPDATE
    ),
    "a plain loop over the unique rows, in float64 and written back": answer(
        """
    flat = np.asarray(ids).reshape(-1)
    gr = np.asarray(grad_out, dtype=np.float64).reshape(flat.size, E.shape[1])
    b1, b2 = betas
    alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    for i in set(flat.tolist()):
        g = gr[flat == i].sum(axis=0)
        m[i] = b1 * m[i] + (1 - b1) * g
        v[i] = b2 * v[i] + (1 - b2) * g * g
        E[i] = E[i] - alpha * m[i] / (np.sqrt(v[i]) + eps)
"""
    ),
    "one-hot counts S^T G, then a boolean mask of touched rows": answer(
        """
    flat = np.asarray(ids).reshape(-1)
    S = (flat[:, None] == np.arange(E.shape[0])).astype(E.dtype)
    dE = S.T @ np.reshape(grad_out, (flat.size, E.shape[1]))
    rows = S.sum(axis=0) > 0
    g = dE[rows]
"""
        + UPDATE
    ),
}


def _mistake(body, fails, says, id=""):
    return Mistake(answer(body), fails=set(fails), says=says, id=id)


MISTAKES = {
    "one Adam update per occurrence (the trap)": _mistake(
        """
    b1, b2 = betas
    alpha = lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)
    for i, g in zip(np.ravel(ids), np.reshape(grad_out, (-1, E.shape[1]))):
        m[i] = b1 * m[i] + (1 - b1) * g
        v[i] = b2 * v[i] + (1 - b2) * g ** 2
        E[i] -= alpha * m[i] / (np.sqrt(v[i]) + eps)
""",
        REPEATS,
        "one Adam update per occurrence",
        id="per-occurrence",
    ),
    "m[ids] = ... (one write per repeated id)": _mistake(
        """
    rows = np.ravel(ids)
    g = np.reshape(grad_out, (rows.size, E.shape[1]))
"""
        + UPDATE,
        REPEATS,
        "only one occurrence of a repeated id reached m and v",
        id="last-write",
    ),
    "dense Adam (every row's moments decay)": _mistake(
        """
    flat = np.ravel(ids)
    if flat.size == 0:
        return
    dE = np.zeros_like(E)
    np.add.at(dE, flat, np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[:] = b1 * m + (1 - b1) * dE
    v[:] = b2 * v + (1 - b2) * dE ** 2
    E -= lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
""",
        {"test_adam_lazy"},  # the one cell with moments in untouched rows
        "SparseAdam is lazy",
        id="dense-adam",
    ),
    "dense Adam without an early return (no ids still decays every row)": _mistake(
        """
    flat = np.ravel(ids)
    dE = np.zeros_like(E)
    np.add.at(dE, flat, np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[:] = b1 * m + (1 - b1) * dE
    v[:] = b2 * v + (1 - b2) * dE ** 2
    E -= lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
""",
        {"test_adam_lazy"},  # the "no ids" cases of test_adam_shapes_and_edges excuse it
        "SparseAdam is lazy",
        id="dense-adam",
    ),
    "no bias correction": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    E[rows] -= lr * m[rows] / (np.sqrt(v[rows]) + eps)
""",
        BIAS,
        "the bias correction is missing",
        id="no-bias-correction",
    ),
    "only m bias-corrected (lr / (1 - b1**t), no sqrt(1 - b2**t))": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    E[rows] -= lr / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
""",
        BIAS,
        "only m was bias-corrected",
        id="only-m-corrected",
    ),
    "v from the sum of squares (sum of g**2, not the square of the sum)": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    gr = np.reshape(grad_out, (flat.size, E.shape[1]))
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    g2 = np.zeros_like(g)
    np.add.at(g, slot.ravel(), gr)
    np.add.at(g2, slot.ravel(), gr ** 2)          # squares each occurrence, then sums
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g2
    E[rows] -= lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
""",
        REPEATS,
        "the sum of the squares",
        id="sum-of-squares",
    ),
    "v forgot to square g (v from g, not g**2)": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g                # g, not g ** 2
    E[rows] -= lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
""",
        ALL,
        "v was built from the gradient itself, not its square",
        id="v-not-squared",
    ),
    "touched rows from the nonzero gradient (a cancelled row skipped)": _mistake(
        """
    d = E.shape[1]
    dense = np.zeros(E.shape, dtype=E.dtype)
    np.add.at(dense, np.ravel(ids), np.reshape(grad_out, (-1, d)))
    rows = np.flatnonzero(dense.any(axis=1))  # a row whose gradients cancel looks untouched
    g = dense[rows]
"""
        + UPDATE,
        {"test_adam_repeated"},
        "whose gradients cancel (they sum to 0) was skipped",
        id="zero-gradient-skipped",
    ),
    "eps inside the square root": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    E[rows] -= lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t) * m[rows] / np.sqrt(v[rows] + eps)
""",
        ALL - {"test_adam_shapes_and_edges"},  # sqrt(v + eps) - sqrt(v) is visible when v is small
        "eps went inside the square root",
        id="eps-inside-sqrt",
    ),
    "eps bias-corrected (torch.optim.Adam's form)": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    m_hat = m[rows] / (1 - b1 ** t)
    v_hat = v[rows] / (1 - b2 ** t)
    E[rows] -= lr * m_hat / (np.sqrt(v_hat) + eps)
""",
        BIAS,  # test_adam_first_step's first steps with tiny |g| show it too, but excuse it
        "eps was bias-corrected",
        id="eps-corrected",
    ),
    "a step counter per row (a fresh row bias-corrected as at t = 1)": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    fresh = ~(m[rows].any(axis=1) | v[rows].any(axis=1))
    t_row = np.where(fresh, 1, t)[:, None]     # this row's own step number
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    alpha = lr * np.sqrt(1 - b2 ** t_row) / (1 - b1 ** t_row)
    E[rows] -= alpha * m[rows] / (np.sqrt(v[rows]) + eps)
""",
        {"test_adam_repeated", "test_adam_lazy", "test_adam_bias_and_eps"},
        "one step counter per table",
        id="per-row-t",
    ),
    "not in place (E = E - ...)": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    step = np.zeros_like(E)
    step[rows] = lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
    E = E - step
    return E
""",
        {"test_adam_in_place"},  # the other cells grade the E it returns
        "the caller's arrays did not change",
        id="not-in-place",
    ),
    "returns E instead of None": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
"""
        + UPDATE
        + "    return E\n",
        {"test_adam_in_place"},
        "it should return None",
        id="returns-value",
    ),
    "t off by one (t + 1)": _mistake(
        """
    t = t + 1                                  # "the next step"
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
"""
        + UPDATE,
        BIAS,
        "the step number is off by one (t + 1 used)",
        id="t-plus-one",
    ),
    "betas hardcoded (the betas argument ignored)": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = 0.9, 0.999                        # the usual values, not the ones given
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    E[rows] -= lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
""",
        BIAS,
        "the betas given were not used",
        id="betas-ignored",
    ),
    "t off by one (t - 1)": _mistake(
        """
    t = t - 1                                  # "steps taken before this one"
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
"""
        + UPDATE,
        BIAS,  # at t = 1 it raises ZeroDivisionError: the other cells excuse that (and t >= 2)
        "off by one",
        id="t-minus-one",
    ),
    "t - 1 in the bias corrections, numpy scalars (NaN at t = 1)": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    v[rows] = b2 * v[rows] + (1 - b2) * g ** 2
    alpha = lr * np.sqrt(1 - b2 ** (t - 1)) / (1 - b1 ** (t - 1))   # 0 / 0 = nan at t = 1
    E[rows] -= alpha * m[rows] / (np.sqrt(v[rows]) + eps)
""",
        BIAS,
        "off by one",
        id="t-minus-one",
    ),
    "float32 arrays upcast to float64 copies": _mistake(
        """
    E, m, v = (np.asarray(a, dtype=np.float64) for a in (E, m, v))
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    g = np.zeros((rows.size, E.shape[1]))
    np.add.at(g, slot.ravel(), np.reshape(grad_out, (flat.size, E.shape[1])))
"""
        + UPDATE,
        {"test_adam_float32_and_inputs"},
        "np.asarray(E, dtype=np.float64)",
        id="not-in-place",
    ),
    "squares grad_out in place": _mistake(
        """
    flat = np.ravel(ids)
    rows, slot = np.unique(flat, return_inverse=True)
    gr = np.reshape(grad_out, (flat.size, E.shape[1]))
    g = np.zeros((rows.size, E.shape[1]), dtype=E.dtype)
    np.add.at(g, slot.ravel(), gr)
    b1, b2 = betas
    m[rows] = b1 * m[rows] + (1 - b1) * g
    gr **= 2                                   # changes the caller's gradients
    g2 = np.zeros_like(g)
    np.add.at(g2, slot.ravel(), gr)
    v[rows] = b2 * v[rows] + (1 - b2) * g2
    E[rows] -= lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t) * m[rows] / (np.sqrt(v[rows]) + eps)
""",
        ALL,
        "modified its input (grad_out)",
        id="modified-input",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "one Adam update per occurrence (the trap)"
