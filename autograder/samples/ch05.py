"""Sample answers for exercise 5: correct alternatives (full credit) and classic mistakes.

Each entry maps a function name to the complete source of a student's answer cell. Mistakes
list the test cells they must fail and a phrase the feedback must contain. A sample that names
only one function gets the reference for the other.
"""

from . import Mistake

# test_tied_types grades the form alone: a mistake in the values keeps its point. A tied
# function that sums what the student's untied one returns passes Part B's cells: a Part A
# mistake it inherits is graded in Part A alone.
UNTIED_GRADS = {"test_untied_dE_in", "test_untied_dW_out"}

ALTERNATIVES = {
    # Everything in the table's own dtype (float32 stays float32), max subtraction, np.add.at,
    # and a tied function written from scratch rather than through the untied one.
    "native dtype, max subtraction, standalone tied": {
        "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x]
    Z = H @ W_out.T
    Z = Z - Z.max(axis=1, keepdims=True)
    P = np.exp(Z)
    P /= P.sum(axis=1, keepdims=True)
    loss = np.mean(np.log(np.exp(Z).sum(axis=1)) - Z[np.arange(N), y])
    D = P.copy()
    D[np.arange(N), y] -= 1
    D /= N
    dE_in = np.zeros_like(E_in)
    np.add.at(dE_in, x, D @ W_out)
    return float(loss), dE_in, D.T @ H
""",
        "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    N = len(x)
    H = E[x]
    Z = H @ E.T
    m = Z.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(Z - m).sum(axis=1))
    loss = float(np.mean(lse - Z[np.arange(N), y]))
    D = np.exp(Z - lse[:, None])
    D[np.arange(N), y] -= 1
    D /= N
    dE = D.T @ H
    np.add.at(dE, x, D @ E)
    return loss, dE
""",
    },
    "np.logaddexp": {
        "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    x, y = np.asarray(x), np.asarray(y)
    H = E_in[x].astype(float)
    Z = H @ W_out.T.astype(float)
    lse = np.logaddexp.reduce(Z, axis=1)
    loss = np.mean(lse - Z[np.arange(len(x)), y])
    D = np.exp(Z - lse[:, None])
    D[np.arange(len(x)), y] -= 1.0
    D = D / len(x)
    dE_in = np.zeros(E_in.shape)
    for n, i in enumerate(x):
        dE_in[i] += D[n] @ W_out
    return np.float64(loss), dE_in.astype(E_in.dtype), (D.T @ H).astype(W_out.dtype)
""",
        "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    loss, a, b = untied_bigram_loss_grad(E, E, x, y)
    return loss, (a.astype(float) + b).astype(E.dtype)
""",
    },
    "explicit one-hot formulation": {
        "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    V = W_out.shape[0]
    N = len(x)
    S = np.eye(E_in.shape[0])[x]            # (N, V) selection matrix
    Y = np.eye(V)[y]                        # (N, V) one-hot targets
    H = S @ E_in
    Z = H @ W_out.T
    Z = Z - Z.max(axis=1, keepdims=True)
    log_softmax = Z - np.log(np.sum(np.exp(Z), axis=1, keepdims=True))
    loss = -np.sum(Y * log_softmax) / N
    Delta = (np.exp(log_softmax) - Y) / N
    return float(loss), (S.T @ (Delta @ W_out)).astype(E_in.dtype), (Delta.T @ H).astype(W_out.dtype)
""",
        "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    V, N = E.shape[0], len(x)
    S = np.eye(V)[x]
    Y = np.eye(V)[y]
    H = S @ E
    Z = H @ E.T
    Z = Z - Z.max(axis=1, keepdims=True)
    logp = Z - np.log(np.exp(Z).sum(axis=1, keepdims=True))
    Delta = (np.exp(logp) - Y) / N
    dE = Delta.T @ H + S.T @ (Delta @ E)
    return float(-np.sum(Y * logp) / N), dE.astype(E.dtype)
""",
    },
    "loop over positions": {
        "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    E64 = E.astype(np.float64)
    dE = np.zeros_like(E64)
    total = 0.0
    N = len(x)
    for n in range(N):
        h = E64[x[n]]
        z = E64 @ h
        m = z.max()
        lse = m + np.log(np.sum(np.exp(z - m)))
        total += lse - z[y[n]]
        delta = np.exp(z - lse)
        delta[y[n]] -= 1.0
        delta /= N
        dE += np.outer(delta, h)       # output path: every row
        dE[x[n]] += delta @ E64        # input path: one row
    return total / N, dE.astype(E.dtype)
""",
    },
}


MISTAKES = {
    "only the output path": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    loss, dE_in, dW_out = untied_bigram_loss_grad(E, E, x, y)
    return loss, dW_out   # treats E as the output layer only
"""
        },
        fails={"test_tied_values"},  # the other cells excuse it
        says="only the output path",
        id="output-path-only",
    ),
    "only the input path": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    loss, dE_in, dW_out = untied_bigram_loss_grad(E, E, x, y)
    return loss, dE_in    # treats E as the input table only: a sparse gradient
"""
        },
        fails={"test_tied_values"},  # the other cells excuse it
        says="only the input path",
        id="input-path-only",
    ),
    "summed, not averaged over N": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    H = E[x]
    Z = H @ E.T
    m = Z.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(Z - m).sum(axis=1))
    rows = np.arange(len(x))
    loss = float(np.sum(lse - Z[rows, y]))      # sum, not mean
    D = np.exp(Z - lse[:, None])
    D[rows, y] -= 1                             # ... and no division by N
    dE = D.T @ H
    np.add.at(dE, x, D @ E)
    return loss, dE
"""
        },
        fails={"test_tied_values"},  # the repeated-id and large-logit cells grade other things
        says="not averaged over N",
        id="not-averaged",
    ),
    # No maximum subtracted: exp overflows (inf), and the log-sum-exp form of the loss is +inf.
    "naive softmax (no maximum subtracted)": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    N = len(x)
    H = E[x]
    Z = H @ E.T
    P = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    rows = np.arange(N)
    loss = float(np.mean(np.log(np.exp(Z).sum(axis=1)) - Z[rows, y]))
    D = P.copy()
    D[rows, y] -= 1
    D /= N
    dE = D.T @ H
    np.add.at(dE, x, D @ E)
    return loss, dE
"""
        },
        fails={"test_tied_large_logits"},
        says="no maximum was subtracted before exp",
        id="naive-softmax",
    ),
    # The loss as -log(P[y]): NaN, where overflow and a batch-wide shift look the same, but the
    # visible example with equal row maxima names it.
    "naive softmax, loss from log(P)": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    N = len(x)
    H = E[x]
    Z = H @ E.T
    P = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    rows = np.arange(N)
    loss = float(-np.mean(np.log(P[rows, y])))
    D = P.copy()
    D[rows, y] -= 1
    D /= N
    dE = D.T @ H
    np.add.at(dE, x, D @ E)
    return loss, dE
"""
        },
        fails={"test_tied_large_logits"},
        says="no maximum was subtracted before exp",
        id="naive-softmax",
    ),
    # One maximum for the whole batch: a row far below it underflows to 0 / 0, log(0) = -inf.
    "the batch's maximum subtracted, not each row's": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    N = len(x)
    H = E[x]
    Z = H @ E.T
    Z = Z - Z.max()   # one maximum for every row
    P = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    rows = np.arange(N)
    loss = float(np.mean(np.log(np.exp(Z).sum(axis=1)) - Z[rows, y]))
    D = P.copy()
    D[rows, y] -= 1
    D /= N
    dE = D.T @ H
    np.add.at(dE, x, D @ E)
    return loss, dE
"""
        },
        fails={"test_tied_large_logits"},
        says="one maximum for the whole batch was subtracted",
        id="global-max",
    ),
    "log of an underflowed softmax": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    N = len(x)
    H = E[x]
    Z = H @ E.T
    P = np.exp(Z - Z.max(axis=1, keepdims=True))   # stable softmax ...
    P /= P.sum(axis=1, keepdims=True)
    rows = np.arange(N)
    loss = float(-np.mean(np.log(P[rows, y])))      # ... but log(0) = -inf for large logits
    D = P.copy()
    D[rows, y] -= 1
    D /= N
    dE = D.T @ H
    np.add.at(dE, x, D @ E)
    return loss, dE
"""
        },
        fails={"test_tied_large_logits"},
        says="underflowed",
        id="log-underflow",
    ),
    "the output path counted twice": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    loss, dE_in, dW_out = untied_bigram_loss_grad(E, E, x, y)
    return loss, dE_in + 2 * dW_out   # E as output layer counted twice
"""
        },
        fails={"test_tied_values"},  # the other cells excuse it
        says="output path twice",
        id="output-path-doubled",
    ),
    # The shared weights taken as a compromise between two tables: the mean of the two paths.
    "the two paths averaged, not added": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    loss, dE_in, dW_out = untied_bigram_loss_grad(E, E, x, y)
    return loss, (dE_in + dW_out) / 2   # one table for both roles: average its two gradients
"""
        },
        fails={"test_tied_values"},  # the other cells excuse it
        says="the two paths' gradients were averaged",
        id="paths-averaged",
    ),
    # Part A without the maximum subtracted: the loss and both gradients break on large logits,
    # graded once by Part A's large-logit cell; the tied function that sums its gradients passes.
    "naive softmax (untied)": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x]
    Z = H @ W_out.T
    P = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)   # no maximum subtracted
    loss = float(np.mean(np.log(np.exp(Z).sum(axis=1)) - Z[np.arange(N), y]))
    D = P.copy()
    D[np.arange(N), y] -= 1
    D /= N
    dE_in = np.zeros_like(E_in)
    np.add.at(dE_in, x, D @ W_out)
    return loss, dE_in, D.T @ H
""",
        },
        fails={"test_untied_large_logits"},
        says="no maximum was subtracted before exp",
        id="naive-softmax",
    ),
    # Part A alone; the reference tied function calls it (as the notebook suggests): graded in
    # Part A's dE_in cell alone (its dW_out cell excuses it).
    "gradients not divided by N (untied)": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x]
    Z = H @ W_out.T
    Z = Z - Z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(Z).sum(axis=1))
    loss = float(np.mean(lse - Z[np.arange(N), y]))
    D = np.exp(Z - lse[:, None])
    D[np.arange(N), y] -= 1          # no / N: the loss is a mean, its gradient is not
    dE_in = np.zeros_like(E_in)
    np.add.at(dE_in, x, D @ W_out)
    return loss, dE_in, D.T @ H
""",
        },
        fails={"test_untied_dE_in"},  # the dW_out cell excuses it: one mistake, one cell
        says="not averaged over N",
        id="untied-grad-not-averaged",
    ),
    # The log-sum-exp without its shift: the loss is +inf and exp(z - lse) = 0 leaves the
    # gradients finite but wrong (only their -onehot(y) term): graded by the large-logit cell.
    "log-sum-exp without the maximum (untied)": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x]
    Z = H @ W_out.T
    lse = np.log(np.exp(Z).sum(axis=1))   # no maximum subtracted: inf for large logits
    loss = float(np.mean(lse - Z[np.arange(N), y]))
    D = np.exp(Z - lse[:, None])
    D[np.arange(N), y] -= 1
    D /= N
    dE_in = np.zeros_like(E_in)
    np.add.at(dE_in, x, D @ W_out)
    return loss, dE_in, D.T @ H
""",
        },
        fails={"test_untied_large_logits"},
        says="no maximum was subtracted before exp in the log-sum-exp",
        id="naive-softmax",
    ),
    # Two form mistakes, each graded by its own cells (not the large-logit cell: a float32 loss
    # is compared there at float32's precision).
    "numpy float32 loss and float64 gradients (untied)": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x].astype(np.float64)
    W = W_out.astype(np.float64)
    Z = H @ W.T
    Z = Z - Z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(Z).sum(axis=1))
    loss = np.float32(np.mean(lse - Z[np.arange(N), y]))   # not a Python float
    D = np.exp(Z - lse[:, None])
    D[np.arange(N), y] -= 1
    D /= N
    dE_in = np.zeros(E_in.shape)
    np.add.at(dE_in, x, D @ W)
    return loss, dE_in, D.T @ H      # float64, whatever the tables' dtype
""",
        },
        fails={"test_untied_loss"} | UNTIED_GRADS,
        says="float",  # "a Python float" in the loss cell, "expected float32" in the others
        id="loss-not-float",
    ),
    # dlogits = P / N, without the -onehot(y): both gradients wrong, the loss right.
    "target one-hot not subtracted (untied)": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x]
    Z = H @ W_out.T
    Z = Z - Z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(Z).sum(axis=1))
    loss = float(np.mean(lse - Z[np.arange(N), y]))
    D = np.exp(Z - lse[:, None]) / N      # softmax alone: no -1 at the targets
    dE_in = np.zeros_like(E_in)
    np.add.at(dE_in, x, D @ W_out)
    return loss, dE_in, D.T @ H
""",
        },
        fails=UNTIED_GRADS,  # inherited by the tied function: graded once
        says="the target's one-hot was not subtracted",
        id="untied-no-target-subtracted",
    ),
    "target one-hot not subtracted (tied)": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    N = len(x)
    H = E[x]
    Z = H @ E.T
    m = Z.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(Z - m).sum(axis=1))
    loss = float(np.mean(lse - Z[np.arange(N), y]))
    D = np.exp(Z - lse[:, None]) / N      # softmax alone: no -1 at the targets
    dE = D.T @ H
    np.add.at(dE, x, D @ E)
    return loss, dE
"""
        },
        fails={"test_tied_values"},  # the other cells excuse it
        says="the target's one-hot was not subtracted",
        id="no-target-subtracted",
    ),
    # Summed, not averaged: the loss and both gradients N times too large, graded by the loss
    # cell alone (the gradient cells excuse it).
    "summed, not averaged over N (untied)": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x]
    Z = H @ W_out.T
    Z = Z - Z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(Z).sum(axis=1))
    loss = float(np.sum(lse - Z[np.arange(N), y]))   # sum, not mean
    D = np.exp(Z - lse[:, None])
    D[np.arange(N), y] -= 1                          # ... and no / N
    dE_in = np.zeros_like(E_in)
    np.add.at(dE_in, x, D @ W_out)
    return loss, dE_in, D.T @ H
""",
        },
        fails={"test_untied_loss"},
        says="not averaged over N",
        id="untied-not-averaged",
    ),
    "log of an underflowed softmax (untied)": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x]
    Z = H @ W_out.T
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    loss = float(-np.mean(np.log(P[np.arange(N), y])))   # log(0) for large logits
    D = P.copy()
    D[np.arange(N), y] -= 1
    D /= N
    dE_in = np.zeros_like(E_in)
    np.add.at(dE_in, x, D @ W_out)
    return loss, dE_in, D.T @ H
""",
        },
        fails={"test_untied_large_logits"},  # inherited by the tied function: graded once
        says="underflowed",
        id="log-underflow",
    ),
    "float64 gradients for float32 tables (untied)": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x].astype(np.float64)
    W = W_out.astype(np.float64)
    Z = H @ W.T
    Z = Z - Z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(Z).sum(axis=1))
    loss = float(np.mean(lse - Z[np.arange(N), y]))
    D = np.exp(Z - lse[:, None])
    D[np.arange(N), y] -= 1
    D /= N
    dE_in = np.zeros(E_in.shape)
    np.add.at(dE_in, x, D @ W)
    return loss, dE_in, D.T @ H      # float64, whatever the tables' dtype
""",
        },
        fails=UNTIED_GRADS,  # inherited by the tied function: graded once
        says="expected float32",
        id="wrong-dtype",
    ),
    "dE_in and dW_out swapped (untied)": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x]
    Z = H @ W_out.T
    Z = Z - Z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(Z).sum(axis=1))
    loss = float(np.mean(lse - Z[np.arange(N), y]))
    D = np.exp(Z - lse[:, None])
    D[np.arange(N), y] -= 1
    D /= N
    dE_in = np.zeros_like(E_in)
    np.add.at(dE_in, x, D @ W_out)
    return loss, D.T @ H, dE_in
""",
        },
        fails=UNTIED_GRADS,
        says="in each other's places",
        id="grads-swapped",
    ),
    "repeated ids overwritten (tied)": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    loss, dE_in, dW_out = untied_bigram_loss_grad(E, E, x, y)
    N = len(x)
    H = E[x]
    Z = H @ E.T
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    P[np.arange(N), y] -= 1
    D = P / N
    dE = D.T @ H
    dE[x] += D @ E       # buffered: a repeated id keeps only its last row
    return loss, dE
"""
        },
        fails={"test_tied_repeated"},
        says="overwritten",
        id="trap-overwrite",
    ),
    "repeated ids overwritten (untied, used by tied)": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x]
    Z = H @ W_out.T
    Z = Z - Z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(Z).sum(axis=1))
    loss = float(np.mean(lse - Z[np.arange(N), y]))
    D = np.exp(Z - lse[:, None])
    D[np.arange(N), y] -= 1
    D /= N
    dE_in = np.zeros_like(E_in)
    dE_in[x] = D @ W_out   # one write per row: repeated ids lose all but the last
    return loss, dE_in, D.T @ H
""",
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    loss, dE_in, dW_out = untied_bigram_loss_grad(E, E, x, y)
    return loss, dE_in + dW_out
""",
        },
        fails={"test_untied_dE_in"},
        says="overwritten",
        id="untied-trap-overwrite",
    ),
    "numpy float32 loss (no float()) in the untied function": Mistake(
        {
            "untied_bigram_loss_grad": """
import numpy as np

def untied_bigram_loss_grad(E_in, W_out, x, y):
    N = len(x)
    H = E_in[x]
    Z = H @ W_out.T
    Z = Z - Z.max(axis=1, keepdims=True)
    P = np.exp(Z)
    P /= P.sum(axis=1, keepdims=True)
    loss = np.mean(np.log(np.exp(Z).sum(axis=1)) - Z[np.arange(N), y])  # np.float32 in float32
    D = P.copy()
    D[np.arange(N), y] -= 1
    D /= N
    dE_in = np.zeros_like(E_in)
    np.add.at(dE_in, x, D @ W_out)
    return loss, dE_in, D.T @ H
"""
        },
        fails={"test_untied_loss"},  # the tied one calls it: graded once
        says="Python float",
        id="loss-not-float",
    ),
    "numpy float32 loss (no float())": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    N = len(x)
    H = E[x]
    Z = H @ E.T
    m = Z.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(Z - m).sum(axis=1))
    loss = np.mean(lse - Z[np.arange(N), y])   # a numpy float32 for a float32 table
    D = np.exp(Z - lse[:, None])
    D[np.arange(N), y] -= 1
    D /= N
    dE = D.T @ H
    np.add.at(dE, x, D @ E)
    return loss, dE
"""
        },
        fails={"test_tied_types"},
        says="Python float",
        id="loss-not-float",
    ),
    "float64 dE for a float32 table": Mistake(
        {
            "tied_bigram_loss_grad": """
def tied_bigram_loss_grad(E, x, y):
    loss, dE_in, dW_out = untied_bigram_loss_grad(E.astype(np.float64), E.astype(np.float64), x, y)
    return loss, dE_in + dW_out
"""
        },
        fails={"test_tied_types"},
        says="expected float32",
        id="wrong-dtype",
    ),
}

# The mistake used for the demo submission and the end-to-end grading test.
DEMO_MISTAKE = "only the output path"
