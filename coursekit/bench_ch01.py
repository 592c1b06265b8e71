"""Chapter 1 timing: the gather E[ids] against the one-hot matmul one_hot(ids) @ E, over V."""

from coursekit.timing import Cost, Method, lookup_methods, lookup_operands, run_chapter  # noqa: F401  (inlined: these are defined above)

CH01_SIZES = dict(n_tokens=512, d=64, vocab=(1_000, 4_000, 16_000, 65_536))


def ch01_methods(n_tokens: int, d: int) -> list:
    gather, product = lookup_methods(lambda V: (n_tokens, V, d))

    def build_one_hot(V, device):
        import torch.nn.functional as F

        E, ids = lookup_operands(V, d, n_tokens, device)
        return lambda: F.one_hot(ids, V).to(E.dtype)

    def one_hot_cost(V):
        # int64 zeros written, read again by .to(float32), which writes the float32 copy
        n = n_tokens * V
        return Cost(operand=4 * n, moved=(8 + 8 + 4) * n, calls=2, fresh=(8 + 4) * n)

    return [gather, Method("build one_hot(ids)", one_hot_cost, build_one_hot), product]


def timing(sizes=CH01_SIZES, min_run_time=0.1):
    """Time, predict and plot the formulations on this machine; nothing happens under nbgrader."""
    title = f"{sizes['n_tokens']} lookups into a (V, {sizes['d']}) float32 table"
    methods = ch01_methods(sizes["n_tokens"], sizes["d"])
    return run_chapter(
        sizes["vocab"], methods, "V", "vocabulary size V", title, min_run_time=min_run_time
    )


def roofline(result):
    """The model of chapter 1 in one figure: the lower bounds bytes / bandwidth, flops / rate and
    the call overhead over V, with the measured gather and one-hot product on top."""
    import matplotlib.pyplot as plt

    xs, cal = result["xs"], result["calibration"]
    gather, product = result["labels"][0], result["labels"][-1]
    rate = cal["rates"][cal["rate_of"][product]]
    ms = lambda seconds: [t * 1e3 for t in seconds]  # noqa: E731
    fig, ax = plt.subplots(figsize=(7, 4.2), layout="constrained")
    bounds = [
        (product, "flops / rate", [c.flops / rate for c in result["costs"][product]], "-"),
        (
            product,
            "bytes / bandwidth",
            [c.moved / cal["bandwidth"] for c in result["costs"][product]],
            ":",
        ),
        (
            gather,
            "bytes / bandwidth",
            [c.moved / cal["bandwidth"] for c in result["costs"][gather]],
            ":",
        ),
    ]
    for label, what, ts, ls in bounds:
        color = "C2" if label == product else "C0"
        ax.plot(xs, ms(ts), ls=ls, color=color, lw=1.5, label=f"{label}: {what}")
    ax.axhline(cal["overhead"] * 1e3, color="grey", ls="-.", lw=1, label="one call's overhead")
    ax.plot(xs, ms(result["times"][product]), "D", color="C2", ms=8, label=f"{product}, measured")
    ax.plot(xs, ms(result["times"][gather]), "o", color="C0", ms=8, label=f"{gather}, measured")
    ax.set(xscale="log", yscale="log", xlabel="vocabulary size V", ylabel="milliseconds (log)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(
        f"The model: its two bounds, the call overhead and the measured times\non {result['device_name']}",
        fontsize=10,
    )
    plt.show()
    return fig
