"""Real data for the chapters: the words of Webster's Second, one character at a time.

The data set is the ``web2`` word list of the ``english-words`` package (pinned in
requirements.txt; PyPI, MIT licence), which is the word list of Webster's Second New International
Dictionary (1934), in the public domain; it is the ``/usr/share/dict/web2`` file of the BSDs. The
package also ships GCIDE lists, which are GPL: they are never read here. Nothing is downloaded at
run time: the words come from the installed package and are checked against a SHA-256 pin.

The task is makemore's: predict each character of a word from the ``context`` characters before
it. The vocabulary is ``ALPHABET``: id 0 is the boundary token ``.`` (it pads the start of a word
and marks its end) and ids 1..26 are ``a``..``z``, so V = 27 and ids are 0-based, as everywhere in
the course.

The model is a tiny MLP on a lookup: ``h = tanh(W [E[x_0]; ...; E[x_{k-1}]] + b)`` and
``logits = h U^T + c``. Tied, ``U`` *is* ``E`` (and the hidden width equals d). Parameters live in
a plain dict of float32 tensors so that a capstone can run any piece of the training step itself:
``logits`` takes the looked-up rows ``H`` from outside (a student's forward lookup), ``train_sgd``
takes the table update as an argument (a student's sparse step, called on ``E.numpy()``, which
shares memory with ``E``), and it hands that update the upstream gradient ``G`` that a student's
backward turns into dE. The module imports nothing else from coursekit, so `make release` can
paste it into a notebook whole, as it does the timing helpers.
"""

import functools
import hashlib
import math
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

ALPHABET = ".abcdefghijklmnopqrstuvwxyz"  # id 0 is the boundary token, ids 1..26 are a..z
V = len(ALPHABET)
VOWELS = "aeiou"
WEB2_SHA256 = "977713ad65f45ed88e63d5b0a3c36660ef933625f30ecaef44e7ab89dfd87a1b"
WEB2_COUNT = 234_450
SOURCE = (
    "the web2 list of the english-words package (2.0.2, PyPI, MIT licence): the words of "
    "Webster's Second New International Dictionary (1934), public domain"
)
INSTALL = "pip install english-words==2.0.2"
# the chapters before the capstone whose pages train on this data (tests/test_realdata.py checks
# it against the pages' sources, so the capstone's sentence cannot drift from them)
CHAPTERS = (1, 3, 5, 6, 7)


@functools.cache
def load_words() -> tuple[str, ...]:
    """All web2 words, lower case, letters only, sorted; checked against the SHA-256 pin."""
    try:
        from english_words import get_english_words_set
    except ImportError as e:  # Colab or Binder without the course's requirements
        raise ImportError(f"the real-data cells need the word list: {INSTALL}") from e
    words = tuple(sorted(get_english_words_set(["web2"], lower=True, alpha=True)))
    digest = hashlib.sha256("\n".join(words).encode()).hexdigest()
    if digest != WEB2_SHA256 or len(words) != WEB2_COUNT:
        raise RuntimeError(
            f"web2 word list changed: {len(words)} words, sha256 {digest}; "
            f"expected {WEB2_COUNT} words, sha256 {WEB2_SHA256} ({INSTALL})"
        )
    return words


def split_words(words, n_train: int, n_val: int, seed: int = 0):
    """Two disjoint lists of words, fixed by ``seed``: training words from the front of one
    permutation, validation words from its back (so every ``n_train`` shares one validation set)."""
    if n_train + n_val > len(words):
        raise ValueError(f"{n_train} + {n_val} words asked for, {len(words)} available")
    order = np.random.default_rng(seed).permutation(len(words))
    train = [words[i] for i in order[:n_train]]
    val = [words[i] for i in order[len(words) - n_val :]]
    return train, val


def encode(words, context: int = 3):
    """(X, Y): row n of X holds the ids of the ``context`` characters before Y[n].

    Each word gives len(word) + 1 rows: its letters, then the end token; the missing
    characters before the start of a word are the boundary token 0, as in makemore.
    """
    xs, ys = [], []
    for word in words:
        seq = [0] * context + [ALPHABET.index(ch) for ch in word] + [0]
        for t in range(len(word) + 1):
            xs.append(seq[t : t + context])
            ys.append(seq[t + context])
    X = torch.tensor(xs, dtype=torch.int64).reshape(-1, context)
    return X, torch.tensor(ys, dtype=torch.int64)


@dataclass(frozen=True)
class CharData:
    """The train/validation(/test) split of ``load_data``, encoded; the test split is empty
    unless ``n_test`` asked for one."""

    X_train: torch.Tensor
    Y_train: torch.Tensor
    X_val: torch.Tensor
    Y_val: torch.Tensor
    train_words: tuple
    val_words: tuple
    context: int
    X_test: torch.Tensor
    Y_test: torch.Tensor
    test_words: tuple


@functools.cache
def load_data(
    n_train: int = 8000, n_val: int = 2000, context: int = 3, seed: int = 0, n_test: int = 0
):
    """The course's data set: ``n_train``, ``n_val`` and ``n_test`` web2 words, split by ``seed``.

    The test words sit just before the validation words in the permutation, so the training
    and validation words are the same with or without a test split (every chapter's default
    data is unchanged by it), and all three are disjoint.
    """
    train, held = split_words(load_words(), n_train, n_val + n_test, seed)
    test, val = held[:n_test], held[n_test:]
    X_train, Y_train = encode(train, context)
    X_val, Y_val = encode(val, context)
    X_test, Y_test = encode(test, context)
    words = (tuple(train), tuple(val), context)
    return CharData(X_train, Y_train, X_val, Y_val, *words, X_test, Y_test, tuple(test))


def unigram_loss(data: CharData, test: bool = False) -> float:
    """Validation (or, with ``test``, test) loss of the best context-free model: the training
    set's character frequencies."""
    p = torch.bincount(data.Y_train, minlength=V).double() / len(data.Y_train)
    return -torch.log(p[data.Y_test if test else data.Y_val]).mean().item()


@contextmanager
def one_thread():
    """One thread inside, restored after: these matrices are tiny, and on a busy two-core machine
    a second thread made every step many times slower (it waits for a free core)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def init_model(d: int, context: int = 3, hidden=None, tied=False, scale=None, seed=0):
    """Parameters of the character MLP, float32, every draw from one generator seeded ``seed``.

    E has entries of std ``scale`` (default d ** -0.5: rows of length about 1); W has std
    1 / sqrt(context), so a pre-activation has std about sqrt(d) * scale, the row length; U has
    std m ** -0.5 (m the hidden width). Tied: no U (the output layer is E) and m = d, so at the
    default scale the tied and the untied model start from the same distribution.
    """
    gen = torch.Generator().manual_seed(seed)
    sigma = d**-0.5 if scale is None else scale
    m = d if tied else (d if hidden is None else hidden)
    p = {"E": sigma * torch.randn(V, d, generator=gen), "c": torch.zeros(V)}
    if hidden == 0:  # bare: the looked-up rows are the hidden vector
        m = context * d
        if tied and context != 1:
            raise ValueError("a bare tied model needs context=1 (one row of width d)")
    else:
        p["W"] = torch.randn(m, context * d, generator=gen) / math.sqrt(context)
        p["b"] = torch.zeros(m)
    if not tied:
        p["U"] = torch.randn(V, m, generator=gen) / math.sqrt(m)
    return p


def logits(p, X, H=None):
    """Scores of the next character, (N, V); ``H`` replaces the lookup E[X] when given."""
    if H is None:
        H = p["E"][X]  # (N, context, d): the lookup
    A = H.flatten(1)  # (N, context * d)
    if "W" in p:
        A = torch.tanh(A @ p["W"].T + p["b"])  # (N, m)
    out = p["U"] if "U" in p else p["E"]  # tied: the output layer is the table
    return A @ out.T + p["c"]


def loss(p, X, Y) -> float:
    with torch.no_grad():
        return F.cross_entropy(logits(p, X), Y).item()


def n_params(p) -> int:
    return sum(t.numel() for t in p.values())


def batches(n_rows: int, steps: int, batch: int, seed: int):
    """The row indices of every minibatch, (steps, batch), the same for every run with ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(n_rows, (steps, batch), generator=gen)


def adam_step(params, grads, state, lr, betas=(0.9, 0.999), eps=1e-8):
    """One Adam step (Kingma and Ba; torch.optim.Adam's defaults), in place. ``state`` starts as
    {} and keeps the step count and both moment estimates. Written out because the first
    torch.optim.Adam of a process costs about a second of imports, on every page that uses it."""
    b1, b2 = betas
    t = state["t"] = state.get("t", 0) + 1
    for i, (w, g) in enumerate(zip(params, grads, strict=True)):
        m, v = state.setdefault(i, (torch.zeros_like(w), torch.zeros_like(w)))
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v / (1 - b2**t)).sqrt_().add_(eps)
        w.addcdiv_(m, denom, value=-lr / (1 - b1**t))


def train_adam(
    p, data: CharData, steps=300, batch=256, lr=1e-2, seed=0, eval_every=0, keys=None, test=False
):
    """Adam, in place, on the parameters named in ``keys`` (default: every one; the others stay
    at their values). Returns the training loss of every step and, every ``eval_every`` steps
    (and after the last), (step, validation loss) pairs.

    With ``test``, (step, validation loss, test loss) triples, the test loss given only for the
    model early stopping keeps (a copy taken at the first lowest validation loss) and for the
    last; None elsewhere: the test split is read only where validation has chosen.
    """
    if test and not len(data.Y_test):
        raise ValueError("test=True needs a test split: load_data(..., n_test=...)")
    params = [p[k].requires_grad_(True) for k in (p if keys is None else keys)]
    state, train_losses, val_losses, kept = {}, [], [], None
    with one_thread():
        for step, rows in enumerate(batches(len(data.Y_train), steps, batch, seed)):
            out = F.cross_entropy(logits(p, data.X_train[rows]), data.Y_train[rows])
            grads = torch.autograd.grad(out, params)
            with torch.no_grad():
                adam_step(params, grads, state, lr)
            train_losses.append(out.item())
            if (eval_every and (step + 1) % eval_every == 0) or step + 1 == steps:
                val_losses.append((step + 1, loss(p, data.X_val, data.Y_val)))
                if test and (kept is None or val_losses[-1][1] < val_losses[kept[0]][1]):
                    kept = (len(val_losses) - 1, {k: t.detach().clone() for k, t in p.items()})
        if test:
            val_losses = _with_test_losses(p, data, val_losses, *kept)
    for t in params:
        t.requires_grad_(False)
    return np.array(train_losses), val_losses


def _with_test_losses(p, data, val_losses, i_kept, p_kept):
    """train_adam's triples: the test loss of the kept model and of the last, None elsewhere."""
    test = {len(val_losses) - 1: loss(p, data.X_test, data.Y_test)}
    if i_kept not in test:  # the kept model is not the last
        test[i_kept] = loss(p_kept, data.X_test, data.Y_test)
    return [(s, v, test.get(i)) for i, (s, v) in enumerate(val_losses)]


def update_index_add(E, ids, G, lr):
    """The correct sparse SGD step on the table: every occurrence of an id adds its row."""
    E.index_add_(0, ids, G, alpha=-lr)


def update_trap(E, ids, G, lr):
    """The fancy-indexing trap: one buffered write per repeated id, the others are lost."""
    E[ids] -= lr * G


def train_sgd(p, data: CharData, table_update, steps=300, batch=256, lr=0.5, seed=0):
    """Plain SGD, in place: autograd for W, b, U, c and for G = dL/dH, the upstream gradient of
    the looked-up rows; ``table_update(E, ids, G, lr)`` applies the table's step, with ids the
    (batch * context,) looked-up ids and G their (batch * context, d) rows. Untied models only.
    Returns the training loss of every step and the final validation loss."""
    if "U" not in p:
        raise ValueError("train_sgd updates the table from the lookup path only: untie the model")
    rest = [t.requires_grad_(True) for k, t in p.items() if k != "E"]
    train_losses = []
    with one_thread():
        for rows in batches(len(data.Y_train), steps, batch, seed):
            X = data.X_train[rows]
            H = p["E"][X].requires_grad_(True)  # (batch, context, d)
            out = F.cross_entropy(logits(p, X, H=H), data.Y_train[rows])
            grads = torch.autograd.grad(out, [H, *rest])
            with torch.no_grad():
                for t, g in zip(rest, grads[1:], strict=True):
                    t -= lr * g
                G = grads[0].reshape(-1, H.shape[-1])
                table_update(p["E"], X.reshape(-1), G, lr)
            train_losses.append(out.item())
    for t in rest:
        t.requires_grad_(False)
    return np.array(train_losses), loss(p, data.X_val, data.Y_val)


def nearest(E, k: int = 3):
    """For every character, the ``k`` others whose rows have the largest cosine similarity."""
    unit = E / E.norm(dim=1, keepdim=True)
    sim = unit @ unit.T
    sim.fill_diagonal_(-math.inf)
    top = sim.topk(k, dim=1).indices
    return {ALPHABET[i]: "".join(ALPHABET[j] for j in top[i]) for i in range(len(E))}


def vowel_neighbour_share(E) -> float:
    """The share of the vowels whose nearest row (cosine) is another vowel's."""
    nn = nearest(E, k=1)
    return sum(nn[v] in VOWELS for v in VOWELS) / len(VOWELS)


def pca2(E):
    """The rows of E projected on their first two principal axes, (V, 2) numpy."""
    X = E.double().numpy()
    X = X - X.mean(axis=0)
    _, _, Vt = np.linalg.svd(X, full_matrices=False)
    return X @ Vt[:2].T
