"""Chapter 7 timing: the gather E[ids] against the one-hot matmul one_hot(ids) @ E, for tables
with the shapes (V, d) of real models."""

from coursekit.timing import MAX_BYTES, grading, lookup_methods, plot, summary, sweep  # noqa: F401  (inlined above)

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
CH07_SIZES = dict(n_tokens=512, models=CH07_MODELS)


def ch07_methods(n_tokens: int, shapes: dict):
    """shapes: {V * d: (V, d)}; each method returns (fn, bytes its operands need)."""
    return lookup_methods(n_tokens, shapes.__getitem__)


def timing(sizes=CH07_SIZES, min_run_time=0.1, repeats=2):
    """Time both formulations on real models' table shapes; nothing happens under nbgrader.
    The sweep runs ``repeats`` times and keeps each point's fastest time."""
    if grading():
        print("Timing is skipped while nbgrader validates or grades this notebook.")
        return None
    import matplotlib.pyplot as plt

    n = sizes["n_tokens"]
    models = sorted(sizes["models"], key=lambda m: m[1] * m[2])
    shapes = {V * d: (V, d) for _, V, d in models}
    methods = ch07_methods(n, shapes)
    result = sweep(list(shapes), methods, min_run_time=min_run_time, repeats=repeats)
    fig = plot(
        result,
        xlabel="table size V * d (parameters)",
        baseline="gather E[ids]",
        compare=["one_hot(ids) @ E"],
        title=f"{n} lookups into float32 tables with the shapes of real models",
    )
    ax = fig.axes[0]
    for (name, V, d), t in zip(models, result["times"]["gather E[ids]"], strict=True):
        if t == t:  # not NaN: label the gather's marker with the model
            ax.annotate(
                name,
                (V * d, t * 1e3),
                fontsize=7,
                rotation=30,
                xytext=(3, 3),
                textcoords="offset points",
            )
    plt.show()
    print(summary(result, "one_hot(ids) @ E", "gather E[ids]", "V * d"))
    for name, V, d in models:
        table, one_hot = 4 * V * d, 4 * n * V
        if table + one_hot > MAX_BYTES:
            print(
                f"not timed: {name} (V = {V:,}, d = {d:,}):\n    table {table / 2**20:,.0f} MiB,"
                f" one-hot of {n} ids {one_hot / 2**20:,.0f} MiB (cap: {MAX_BYTES / 2**20:,.0f} MiB)"
            )
    return result
