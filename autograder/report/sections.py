"""Where the website teaches the fix for a mistake: a chapter page and a section anchor.

A mistake is linked to the section that teaches the function it was made in (``FUNCTIONS``),
unless a section teaches that very mistake (``MISTAKES``). The anchors are the ids Jupyter Book
gives the sections' headings; tests check every link against the built site.
"""

from __future__ import annotations

PAGES = {
    "01": "book/01_one_hot_lookup.html",
    "02": "book/02_sparse_backward.html",
    "03": "book/03_fancy_indexing_trap.html",
    "04": "book/04_bags.html",
    "05": "book/05_weight_tying.html",
    "06": "book/06_init_scale.html",
    "07": "book/07_choosing_d.html",
    "08": "book/08_capstone.html",
    "09": "book/09_tables_at_scale.html",
}
ADAM = ("03", "a-sparse-optimizer-lazy-adam-on-the-touched-rows")
FORWARD = ("01", "batches-and-sequences")
BACKWARD = ("02", "deriving-the-gradient")
# (assignment number, function) -> (chapter, anchor); "*" stands for any assignment.
FUNCTIONS = {
    ("01", "embedding_forward"): FORWARD,
    ("01", "one_hot"): ("01", "the-identity"),
    ("01", "lookup_costs"): ("01", "why-the-ratio-has-the-value-it-has"),
    ("01", "predicted_ratio"): ("01", "why-the-ratio-has-the-value-it-has"),
    ("02", "embedding_backward"): BACKWARD,
    ("02", "embedding_backward_rows"): ("02", "what-follows-from-the-formula"),
    ("03", "sparse_adam_step_"): ADAM,
    ("04", "embedding_bag_mean"): ("04", "mean-pooling"),
    ("04", "embedding_bag_backward"): ("04", "the-backward-pass"),
    ("05", "untied_bigram_loss_grad"): ("05", "two-paths-to-the-loss"),
    ("05", "tied_bigram_loss_grad"): ("05", "two-paths-to-the-loss"),
    ("06", "init_embedding"): ("06", "three-conventions"),
    ("06", "expected_row_length"): ("06", "the-length-of-a-random-row"),
    ("06", "initial_loss"): ("06", "on-real-data-the-initial-loss-and-the-first-steps"),
    ("06", "scale_for_initial_loss"): ("06", "on-real-data-the-initial-loss-and-the-first-steps"),
    ("07", "table_cost"): ("07", "what-a-table-costs"),
    ("07", "suggest_dim"): ("07", "rules-of-thumb-that-disagree"),
    ("07", "heldout_error"): ("07", "capacity-a-biasvariance-trade-off"),
    ("07", "best_dim"): ("07", "capacity-a-biasvariance-trade-off"),
    ("08", "embedding_forward"): FORWARD,
    ("08", "embedding_backward_rows"): ("02", "what-follows-from-the-formula"),
    ("08", "sparse_adam_step_"): ADAM,
    ("08", "train_step_"): ("08", "what-one-step-does"),
    ("08", "train_step_tied_"): ("08", "part-c-a-tied-table"),
    ("09", "quantize_rows"): ("09", "row-wise-quantization-for-serving"),
    ("09", "dequantize_rows"): ("09", "row-wise-quantization-for-serving"),
    ("09", "route"): ("09", "tables-bigger-than-a-device"),
    ("09", "sharded_lookup"): ("09", "tables-bigger-than-a-device"),
    ("09", "sharded_backward"): ("09", "tables-bigger-than-a-device"),
    ("09", "lazy_decay_step_"): ("09", "weight-decay-meets-a-sparse-gradient"),
    ("09", "flush_decay_"): ("09", "weight-decay-meets-a-sparse-gradient"),
}
TRAP = ("03", "the-fix-accumulate-without-buffering")
EMPTY_BAG = ("04", "empty-bags-give-zeros-not-nan")
LOGSUMEXP = ("05", "large-logits-log-sum-exp")
MISTAKES = {
    **dict.fromkeys(
        ["trap-overwrite", "rows-trap-overwrite", "untied-trap-overwrite", "step-trap-overwrite",
         "tied-trap-overwrite",
         "last-write", "grad-overwritten", "repeated-overwritten", "ranks-overwrite",
         "repeated-gradient-once"],
        TRAP,
    ),
    **dict.fromkeys(
        ["empty-bag-nan", "grad-empty-bag-nan", "reduceat-empty-bag", "reduceat-empty-last-bag"],
        EMPTY_BAG,
    ),
    **dict.fromkeys(["naive-softmax", "global-max", "unstable-softmax", "log-underflow"], LOGSUMEXP),
    **dict.fromkeys(["times-sqrt-d", "sqrt-d-in-table"], ("06", "the-sqrt-d-multiplier")),
}  # fmt: skip


def section(assignment: str, function: str, mistake: str | None = None) -> str | None:
    """The page and anchor, ``book/03_fancy_indexing_trap.html#the-fix-...``, or None."""
    key = MISTAKES.get(mistake or "") or FUNCTIONS.get((assignment[:2], function))
    if key is None:
        return None
    chapter, anchor = key
    return f"{PAGES[chapter]}#{anchor}"
