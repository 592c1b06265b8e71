"""Chapter 7 timing: the gather E[ids] against the one-hot matmul one_hot(ids) @ E, for tables
with the shapes (V, d) of real models. Shapes over the memory cap are predicted, not built."""

import math

from coursekit.timing import MAX_BYTES, lookup_methods, run_chapter  # noqa: F401  (inlined above)

# (name, V, d), smallest table first. The x of the sweep is the table's size V * d.
CH07_MODELS = (
    ("TF rule, V = 10,000", 10_000, 10),
    ("fastai rule, V = 10,000", 10_000, 278),
    ("ALBERT V x m table", 30_000, 128),
    ("BERT-base", 30_522, 768),
    ("GPT-2 small", 50_257, 768),
    ("GloVe 6B 300d", 400_000, 300),
    ("Llama-3-8B", 128_256, 4_096),
    ("word2vec Google News", 3_000_000, 300),
)
CH07_SIZES = dict(n_tokens=512, models=CH07_MODELS, calibrate_at="ALBERT V x m table")
# Label offsets (points) where the alternating default overlaps: GloVe below its point, Llama
# above its peak, clear of word2vec's label.
# A gather off its predicted time by more than this (median over the shapes) means a disturbed run.
GATHER_OFF_MAX = 10.0
CH07_OFFSETS = {"GloVe 6B 300d": (3, -14), "Llama-3-8B": (-6, 8)}


def ch07_methods(n_tokens: int, shapes: dict) -> list:
    """shapes: {V * d: (V, d)}."""
    return lookup_methods(lambda x: (n_tokens, *shapes[x]))


def gather_off(result) -> float:
    """The median, over the shapes timed, of the gather's measured / predicted time."""
    pairs = zip(result["times"]["gather E[ids]"], result["predicted"]["gather E[ids]"], strict=True)
    offs = sorted(t / p for t, p in pairs if t == t and p == p)
    return offs[len(offs) // 2] if offs else math.nan


def timing(sizes=CH07_SIZES, min_run_time=0.1, repeats=2, tries=3):
    """Time both formulations on real models' table shapes; nothing happens under nbgrader.
    The sweep runs ``repeats`` times and keeps each point's fastest time; the whole sweep is
    redone (up to ``tries`` in all) while the gather is off its prediction by more than 10x,
    which on this model means a disturbed machine, not a finding."""
    models = sorted(sizes["models"], key=lambda m: m[1] * m[2])
    shapes = {V * d: (V, d) for _, V, d in models}
    at = {name: V * d for name, V, d in models}[sizes["calibrate_at"]]
    title = f"{sizes['n_tokens']} lookups into float32 tables with the shapes of real models"
    methods, names = ch07_methods(sizes["n_tokens"], shapes), [m[0] for m in models]
    kw = dict(min_run_time=min_run_time, repeats=repeats, at=at, names=names, offsets=CH07_OFFSETS)
    kw.update(plausible=lambda r: gather_off(r) <= GATHER_OFF_MAX, tries=tries)
    return run_chapter(list(shapes), methods, "V * d", "table size V * d (parameters)", title, **kw)
