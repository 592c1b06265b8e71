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


COINCIDE = 1e-5  # a few float32 steps at a loss of 2 to 4 (one step there is 2.4e-7 to 4.8e-7)
CLOSE = 1e-3  # beyond this the curves have parted: a different training step, not rounding


def verdict(yours, theirs) -> str:
    """One sentence on how the two loss curves compare, step by step."""
    gap = np.abs(np.asarray(yours, dtype=np.float64) - np.asarray(theirs, dtype=np.float64))
    if not np.all(np.isfinite(gap)):
        return "Your loss curve has NaN or inf in it: look at the first step where it does."
    if gap.max() <= COINCIDE:
        return (
            f"Your curve coincides with nn.Embedding + SparseAdam's to float32 rounding: the largest "
            f"gap over {gap.size} steps is {gap.max():.1e} (float32 resolves about "
            f"{np.spacing(np.float32(np.median(theirs))):.1e} at this loss)."
        )
    first = int(np.argmax(gap > COINCIDE)) + 1
    if gap.max() <= CLOSE:
        return (
            f"Your curve stays within {gap.max():.1e} of nn.Embedding + SparseAdam's, but not within "
            f"float32 rounding from step {first} on: a step that computes the same thing in another "
            "precision or order drifts like this."
        )
    parted = int(np.argmax(gap > CLOSE)) + 1
    return (
        f"Your curve leaves float32 rounding of nn.Embedding + SparseAdam's at step {first} and "
        f"passes {CLOSE:g} at step {parted} (largest gap {gap.max():.3g}): your train_step_ "
        "does not take the step SparseAdam takes. Check the "
        "graded tests above: a repeated id gets one update with its summed gradient, at step t, and "
        "the rows the batch never used do not move."
    )


def plot(yours, theirs, base):
    """Left: your loss curve drawn over nn.Embedding + SparseAdam's (they should coincide).
    Right: the gap between them at each step, against float32's resolution at the loss."""
    steps = np.arange(1, len(yours) + 1)
    fig, (ax, ax_gap) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    ax.plot(steps, theirs, lw=5, alpha=0.35, color="C1", label="nn.Embedding + SparseAdam")
    ax.plot(steps, yours, lw=1.2, color="C0", label="your train_step_")
    ax.axhline(base, color="gray", ls="--", lw=1, label="character frequencies alone")
    ax.set(xlabel="step", ylabel="training loss (nats)", title="Your curve on PyTorch's")
    ax.legend(fontsize=8)
    gap = np.abs(np.asarray(yours, dtype=np.float64) - np.asarray(theirs, dtype=np.float64))
    same = int(np.sum(gap == 0))
    ax_gap.semilogy(
        steps,
        np.where(gap > 0, gap, np.nan),
        ".",
        ms=3,
        color="C0",
        label=f"|yours - theirs| ({same} of {gap.size} steps exactly equal)",
    )
    ulp = np.spacing(np.asarray(theirs, dtype=np.float32)).astype(np.float64)
    ax_gap.semilogy(steps, ulp, color="gray", ls="--", lw=1, label="one float32 step at the loss")
    ax_gap.axhspan(1e-9, COINCIDE, color="C2", alpha=0.15, label="float32 rounding: they coincide")
    ax_gap.set(xlabel="step", ylabel="gap (log)", ylim=(1e-8, 1.0))
    ax_gap.set_title("The gap at each step: in the band, or a bug?")
    ax_gap.legend(fontsize=8, loc="center right")
    plt.show()
    return fig


def compare(train_step_, steps=300, batch=256, lr=2e-2):
    """Train the fresh table both ways; print and plot the two loss curves."""
    if os.environ.get("NBGRADER_EXECUTION"):  # the source notebook's cell, under nbgrader
        print("skipped while grading")
        return None
    data = load_data()
    p = pretrained(data)
    order = batches(len(data.Y_train), steps, batch, seed=0)
    try:
        yours, E = numpy_losses(train_step_, p, data, order, lr)
    except NotImplementedError:
        print(
            "train_step_ still raises NotImplementedError: write it (Part B), then run this cell."
        )
        return None
    theirs, E_torch = torch_losses(p, data, order, lr)
    for s in sorted({0, steps // 6, steps // 3, 2 * steps // 3, steps - 1}):
        print(f"step {s + 1:4d}: your loss {yours[s]:.4f}   nn.Embedding {theirs[s]:.4f}")
    print(verdict(yours, theirs))
    print("largest difference between the final tables:", float(np.abs(E - E_torch).max()))
    base = unigram_loss(data)
    print(f"for scale: predicting each character from its frequency alone has loss {base:.4f}")
    near = nearest(torch.from_numpy(E), k=2)
    print("nearest rows of your table (cosine):", {ch: near[ch] for ch in "aeiou"})
    plot(yours, theirs, base)
    return {"yours": yours, "theirs": theirs, "unigram": base}
