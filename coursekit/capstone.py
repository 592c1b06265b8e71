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


# Classic mistakes of a training step, made on purpose in mistaken_run (the last one is no
# train_step_ mistake: chapter 8's page uses it to ask what the dense step's momentum does)
MISTAKES = {
    "per occurrence": "one Adam update per occurrence",
    "trap": "+= keeps one occurrence of a repeated id",
    "t = 1": "t not passed on (t = 1 at every step)",
    "lr": "lr not passed on (the default, 1e-3)",
    "after": "the loss taken after the update",
    "dense": "every row updated (zero gradient if untouched)",
    "eps": "eps where torch.optim.Adam adds it",
    "frozen": "every row's moments decay, only touched rows move",
}


def _sparse(ids, values, shape):
    return torch.sparse_coo_tensor(ids[None], values, shape, check_invariants=False)


def _occurrences(grad):
    """nn.Embedding(sparse=True)'s uncoalesced gradient (one row per occurrence) split by rank:
    every id's first occurrence, then every second one, ...; each part's rows are distinct.
    Also which occurrences are their id's last."""
    ids, values = grad._indices()[0], grad._values()
    order = torch.sort(ids, stable=True).indices
    start = torch.searchsorted(ids[order], ids[order])  # where each id's run begins
    rank = torch.empty_like(ids)
    rank[order] = torch.arange(ids.numel()) - start
    last = rank == torch.bincount(ids, minlength=grad.shape[0])[ids] - 1
    by_rank = torch.split(torch.sort(rank, stable=True).indices, torch.bincount(rank).tolist())
    return [_sparse(ids[k], values[k], grad.shape) for k in by_rank], last


def _handed(grad, mistake):
    """The sparse gradients a mistaken step hands SparseAdam, one optimizer step each."""
    if mistake in ("per occurrence", "trap"):
        parts, last = _occurrences(grad)
        if mistake == "per occurrence":
            return parts
        ids, values = grad._indices()[0], grad._values()  # += keeps the last occurrence
        return [_sparse(ids[last], values[last], grad.shape)]
    if mistake in ("dense", "frozen"):
        return [_sparse(torch.arange(grad.shape[0]), grad.to_dense(), grad.shape)]
    return [grad]  # uncoalesced: SparseAdam sums the repeats with coalesce()


def mistaken_run(E, batches, loss_of, lr, mistake=None, betas=(0.9, 0.999), eps=1e-8):
    """The table E trained by nn.Embedding(sparse=True) + SparseAdam on ``batches`` ((X, Y)
    pairs; ``loss_of(H, X, Y)`` is the loss of the looked-up rows H), with the mistake
    ``mistake`` of MISTAKES made on purpose, or none: (losses, final table). SparseAdam does the
    arithmetic every time; the mistake changes what it is handed, its step count, lr or eps, or
    which loss is returned. Torch's dense Adam adds eps to sqrt(v / (1 - b2 ** t)), which is
    SparseAdam's rule with eps * sqrt(1 - b2 ** t) (chapter 3)."""
    emb = torch.nn.Embedding(*E.shape, sparse=True)
    with torch.no_grad():
        emb.weight.copy_(E)
    opt = torch.optim.SparseAdam(emb.parameters(), lr=1e-3 if mistake == "lr" else lr, betas=betas)
    state, losses = opt.state[emb.weight], []
    for t, (X, Y) in enumerate(batches, start=1):
        out = loss_of(emb(X), X, Y)
        opt.zero_grad()
        out.backward()
        before = emb.weight.detach().clone() if mistake == "frozen" else None
        opt.param_groups[0]["eps"] = eps * (1 - betas[1] ** t) ** 0.5 if mistake == "eps" else eps
        for g in _handed(emb.weight.grad, mistake):
            if state:  # every call of one step at step t, unless t is not passed on
                state["step"] = 0 if mistake == "t = 1" else t - 1
            emb.weight.grad = g
            opt.step()
        with torch.no_grad():
            if mistake == "frozen":
                rest = torch.ones(E.shape[0], dtype=torch.bool)
                rest[X.reshape(-1)] = False  # the rows the batch did not touch
                emb.weight[rest] = before[rest]
            if mistake == "after":
                out = loss_of(emb(X), X, Y)
        losses.append(out.item())
    return np.array(losses), emb.weight.detach().numpy()


COINCIDE = 1e-5  # a few float32 steps at a loss of 2 to 4 (one step there is 2.4e-7 to 4.8e-7)
CLOSE = 1e-3  # beyond this the curves have parted: a different training step, not rounding
TABLE_SAME = 1e-5  # final tables within this, entry by entry: the same table to float32 rounding

STEP_HINT = (
    "your train_step_ does not take the step SparseAdam takes. Check the graded tests above: a "
    "repeated id gets one update with its summed gradient, at step t, and the rows the batch "
    "never used do not move."
)


def outcome(gap_max, table_gap=None) -> str:
    """Which verdict a largest loss gap and a largest final-table difference get: 'nan',
    'coincide', 'table' (the loss coincides, the table does not), 'drift', 'after' (the loss
    has parted, the table matches) or 'parted'."""
    table_same = table_gap is None or table_gap <= TABLE_SAME
    if not (np.isfinite(gap_max) and (table_gap is None or np.isfinite(table_gap))):
        return "nan"
    if gap_max <= COINCIDE:
        return "coincide" if table_same else "table"
    if gap_max <= CLOSE:
        return "drift"
    return "after" if table_gap is not None and table_same else "parted"


def verdict(yours, theirs, table_gap=None, who="Your curve", hint=STEP_HINT) -> str:
    """One sentence on how the two loss curves compare, step by step, and, given ``table_gap``
    (the largest entry of |your final table - PyTorch's|), on the final tables. ``who`` names
    the curve judged; ``hint`` ends the sentence when it has parted."""
    gap = np.abs(np.asarray(yours, dtype=np.float64) - np.asarray(theirs, dtype=np.float64))
    kind = outcome(gap.max(), table_gap)
    if kind == "nan":
        return f"{who} has NaN or inf in it: look at the first step where it does."
    first = int(np.argmax(gap > COINCIDE)) + 1
    table = "" if table_gap is None else f"the final tables differ by at most {table_gap:.1e}"
    if kind in ("coincide", "table"):
        said = (
            f"{who} coincides with nn.Embedding + SparseAdam's to float32 rounding: the largest "
            f"gap over {gap.size} steps is {gap.max():.1e} (float32 resolves about "
            f"{np.spacing(np.float32(np.median(theirs))):.1e} at this loss)"
        )
        if kind == "table":
            return (
                f"{said}, but {table}, more than {TABLE_SAME:.0e}: the step is nearly "
                "SparseAdam's, not quite. Look for a small change in the update, such as eps "
                "added to the bias-corrected root (torch.optim.Adam's place) instead of to sqrt(v)."
            )
        return f"{said}; {table}." if table else f"{said}."
    if kind == "drift":
        return (
            f"{who} stays within {gap.max():.1e} of nn.Embedding + SparseAdam's, but not within "
            f"float32 rounding from step {first} on: a step that computes the same thing in another "
            "precision or order drifts like this" + (f" ({table})." if table else ".")
        )
    parted = int(np.argmax(gap > CLOSE)) + 1
    said = (
        f"{who} leaves float32 rounding of nn.Embedding + SparseAdam's at step {first} and "
        f"passes {CLOSE:g} at step {parted} (largest gap {gap.max():.1e})"
    )
    if kind == "after":
        return (
            f"{said}, yet {table}, within {TABLE_SAME:.0e}: the table matches and the loss does "
            "not. You returned the loss after the update; return the one computed before it."
        )
    return f"{said}" + (f"; {table}" if table else "") + f": {hint}"


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
    table_gap = float(np.abs(E - E_torch).max())
    print(verdict(yours, theirs, table_gap))
    print(f"largest difference between the final tables: {table_gap:.1e}")
    base = unigram_loss(data)
    print(f"for scale: predicting each character from its frequency alone has loss {base:.4f}")
    near = nearest(torch.from_numpy(E), k=2)
    print("nearest rows of your table (cosine):", {ch: near[ch] for ch in "aeiou"})
    plot(yours, theirs, base)
    return {"yours": yours, "theirs": theirs, "unigram": base}
