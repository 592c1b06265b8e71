"""The capstone's training run: a student's ``train_step_`` against nn.Embedding + SparseAdam.

The whole character model of :mod:`coursekit.realdata` is trained first (the course's Adam),
then its table is replaced by a fresh random one, and that table is trained again with the layers
after the lookup frozen: once by the student's numpy ``train_step_``, once by PyTorch
(``nn.Embedding(sparse=True)``, autograd, ``torch.optim.SparseAdam``), from the same start and on
the same batches. ``make release`` pastes this module after realdata into the capstone notebook,
inside a guard that skips it while nbgrader grades.
"""

import os

import matplotlib.pyplot as plt
import numpy as np
import torch

from coursekit.realdata import (
    V,
    batches,
    init_model,
    load_data,
    logits,
    nearest,
    train_adam,
    unigram_loss,
)


def pretrained(data, d=10, hidden=64):
    """The model trained for 500 Adam steps, with a fresh random table in place of its own."""
    p = init_model(d=d, context=data.context, hidden=hidden, seed=0)
    train_adam(p, data, steps=500, lr=1e-2, seed=1)
    p["E"] = init_model(d=d, context=data.context, hidden=hidden, seed=1)["E"]
    return p


def torch_losses(p, data, order, lr):
    """The table trained by nn.Embedding(sparse=True) + SparseAdam: (losses, final table)."""
    emb = torch.nn.Embedding(V, p["E"].shape[1], sparse=True)
    with torch.no_grad():
        emb.weight.copy_(p["E"])
    opt = torch.optim.SparseAdam(emb.parameters(), lr=lr)
    losses = []
    for rows in order:
        X, Y = data.X_train[rows], data.Y_train[rows]
        out = torch.nn.functional.cross_entropy(logits(p, X, H=emb(X)), Y)
        opt.zero_grad()
        out.backward()
        opt.step()
        losses.append(out.item())
    return np.array(losses), emb.weight.detach().numpy()


def numpy_losses(train_step_, p, data, order, lr):
    """The table trained by the student's train_step_ (float32 numpy): (losses, final table)."""
    rest = {k: p[k].numpy() for k in ("W", "b", "U", "c")}
    E = p["E"].numpy().copy()
    m, v = np.zeros_like(E), np.zeros_like(E)
    losses = []
    for t, rows in enumerate(order, start=1):
        X, Y = data.X_train[rows].numpy(), data.Y_train[rows].numpy()
        losses.append(train_step_(E, m, v, rest, X, Y, t, lr))
    return np.array(losses, dtype=np.float64), E


def plot(yours, theirs, base):
    steps = np.arange(1, len(yours) + 1)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(steps, theirs, lw=3, alpha=0.5, label="nn.Embedding + SparseAdam")
    ax.plot(steps, yours, lw=1, label="your train_step_")
    ax.axhline(base, color="gray", ls="--", lw=1, label="character frequencies alone")
    ax.set(xlabel="step", ylabel="training loss (nats)", title="Re-learning the table")
    ax.legend()
    plt.show()


def compare(train_step_, steps=300, batch=256, lr=2e-2):
    """Train the fresh table both ways; print and plot the two loss curves."""
    if os.environ.get("NBGRADER_EXECUTION"):  # the source notebook's cell, under nbgrader
        print("skipped while grading")
        return None
    data = load_data()
    p = pretrained(data)
    order = batches(len(data.Y_train), steps, batch, seed=0)
    yours, E = numpy_losses(train_step_, p, data, order, lr)
    theirs, E_torch = torch_losses(p, data, order, lr)
    for s in sorted({0, steps // 6, steps // 3, 2 * steps // 3, steps - 1}):
        print(f"step {s + 1:4d}: your loss {yours[s]:.4f}   nn.Embedding {theirs[s]:.4f}")
    print("largest difference between the curves:", float(np.abs(yours - theirs).max()))
    print("largest difference between the final tables:", float(np.abs(E - E_torch).max()))
    base = unigram_loss(data)
    print(f"for scale: predicting each character from its frequency alone has loss {base:.4f}")
    near = nearest(torch.from_numpy(E), k=2)
    print("nearest rows of your table (cosine):", {ch: near[ch] for ch in "aeiou"})
    plot(yours, theirs, base)
    return {"yours": yours, "theirs": theirs, "unigram": base}
