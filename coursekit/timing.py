"""Timing helpers shared by every chapter: one implementation, used by the website and inlined
into each exercise notebook by `make release`.

Keep this file self-contained (standard library at the top; numpy, torch and matplotlib imported
inside functions): the release step copies its source into a notebook cell, and under nbgrader
(NBGRADER_EXECUTION set) the timing cell must return before torch is even imported.
"""

import math
import os
import platform

MAX_BYTES = 256 * 2**20  # never build an operand larger than this (a one-hot of 256 MiB)


def grading() -> bool:
    """True while nbgrader validates or grades: timing cells then do nothing."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def pick_device():
    """CUDA when torch sees a GPU, then Apple's MPS, else the CPU; with a readable name."""
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda"), torch.cuda.get_device_name(0)
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps"), "Apple GPU (MPS)"
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return torch.device("cpu"), f"CPU: {name}, {torch.get_num_threads()} threads"


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type == "mps":
        torch.mps.synchronize()


def bench(fn, device, min_run_time: float = 0.15) -> float:
    """Seconds per call of fn(), by torch.utils.benchmark, synchronised on GPUs.

    The fastest block is reported: on a shared machine other processes only ever add time, so the
    minimum is the most repeatable estimate of what the operation itself costs.
    """
    import torch
    import torch.utils.benchmark as tb

    if device.type == "mps":  # torch.utils.benchmark synchronises CUDA itself, not MPS

        def run():
            fn()
            torch.mps.synchronize()

    else:
        run = fn
    run()  # warm up (allocations, kernel selection)
    synchronize(device)
    timer = tb.Timer(stmt="run()", globals={"run": run}, num_threads=torch.get_num_threads())
    return min(timer.blocked_autorange(min_run_time=min_run_time).times)


def nbytes(shape, dtype_bytes: int = 4) -> int:
    return int(math.prod(shape)) * dtype_bytes


def lookup_operands(V: int, d: int, n_tokens: int, device, scale: float = 1.0):
    """A seeded (V, d) float32 table and n_tokens ids in [0, V), on device."""
    import torch

    g = torch.Generator().manual_seed(0)
    E = (scale * torch.randn(V, d, generator=g)).to(device)
    ids = torch.randint(0, V, (n_tokens,), generator=g).to(device)
    return E, ids


def lookup_methods(n_tokens: int, shape_of, scale: float = 1.0):
    """The two formulations of a lookup, as sweep() methods: the gather E[ids] and the one-hot
    product one_hot(ids) @ E (the one-hot built once, outside the timed call).

    shape_of(x) gives the table's (V, d) at sweep point x. Operands larger than MAX_BYTES are
    never allocated.
    """
    import torch.nn.functional as F

    def gather(x, device):
        V, d = shape_of(x)
        need = 4 * V * d
        if need > MAX_BYTES:
            return None, need
        E, ids = lookup_operands(V, d, n_tokens, device, scale)
        return (lambda: E[ids]), need

    def one_hot_matmul(x, device):
        V, d = shape_of(x)
        need = 4 * (n_tokens * V + V * d)
        if need > MAX_BYTES:
            return None, need
        E, ids = lookup_operands(V, d, n_tokens, device, scale)
        X = F.one_hot(ids, V).to(E.dtype)
        return (lambda: X @ E), need

    return {"gather E[ids]": gather, "one_hot(ids) @ E": one_hot_matmul}


def sweep(
    xs,
    methods,
    device=None,
    min_run_time: float = 0.15,
    max_bytes: int = MAX_BYTES,
    repeats: int = 2,
):
    """Time each method at each x.

    methods: {label: make(x, device) -> (fn, bytes_needed)}. A method whose operands would need
    more than max_bytes is skipped at that x (its time is NaN and a note says why). The whole
    sweep runs ``repeats`` times and each point keeps its fastest time, so a burst of other work
    on a shared machine does not pass for the cost of an operation.
    Returns {"xs", "times": {label: [seconds]}, "device", "device_name", "notes"}.
    """
    if device is None:
        device, name = pick_device()
    else:
        name = str(device)
    times = {label: [float("inf")] * len(xs) for label in methods}
    notes = []
    for _ in range(max(1, repeats)):
        for i, x in enumerate(xs):
            for label, make in methods.items():
                fn, need = make(x, device)
                if need > max_bytes or fn is None:
                    times[label][i] = float("nan")
                    note = f"{label} skipped at {x:,}: it needs {need / 2**20:,.0f} MiB"
                    if note not in notes:
                        notes.append(note)
                    continue
                times[label][i] = min(times[label][i], bench(fn, device, min_run_time))
                del fn
    return {
        "xs": list(xs),
        "times": times,
        "device": device.type,
        "device_name": name,
        "notes": notes,
    }


def ratios(result, slow: str, fast: str) -> list:
    """slow time / fast time at each x (NaN where either was skipped)."""
    return [s / f for s, f in zip(result["times"][slow], result["times"][fast], strict=True)]


def plot(result, xlabel: str, baseline: str, compare, title: str, logx: bool = True):
    """Two panels: seconds per call of every method, and each compared method / baseline."""
    import matplotlib.pyplot as plt

    xs = result["xs"]
    fig, (ax_t, ax_r) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    markers = "osD^vP*X"
    # One colour and marker per method, the same in both panels.
    style = {
        label: dict(color=f"C{i % 10}", marker=markers[i % len(markers)])
        for i, label in enumerate(result["times"])
    }
    for label, ts in result["times"].items():
        ax_t.plot(xs, [t * 1e3 for t in ts], label=label, **style[label])
    ax_t.set_yscale("log")
    ax_t.set_ylabel("milliseconds per call (log)")
    ax_t.set_xlabel(xlabel)
    ax_t.legend(fontsize=8)
    ax_t.grid(True, which="both", alpha=0.3)
    for label in compare:
        ax_r.plot(
            xs, ratios(result, label, baseline), label=f"{label} / {baseline}", **style[label]
        )
    ax_r.axhline(1.0, color="grey", lw=1, ls="--")
    ax_r.set_yscale("log")
    ax_r.set_ylabel("time ratio (log; above 1 = slower)")
    ax_r.set_xlabel(xlabel)
    ax_r.legend(fontsize=8)
    ax_r.grid(True, which="both", alpha=0.3)
    for ax in (ax_t, ax_r):
        if logx:
            ax.set_xscale("log")
    fig.suptitle(f"{title}\nmeasured on {result['device_name']}", fontsize=10)
    return fig


def summary(result, slow: str, fast: str, xname: str) -> str:
    """A sentence built from the measured numbers (largest x where both ran)."""
    pairs = [
        (x, r)
        for x, r in zip(result["xs"], ratios(result, slow, fast), strict=True)
        if not math.isnan(r)
    ]
    if not pairs:
        return "No size ran for both methods on this machine."
    (x0, r0), (x1, r1) = pairs[0], pairs[-1]
    return (
        f"On {result['device_name']}, {slow} took {r1:,.1f}x as long as {fast} at "
        f"{xname} = {x1:,} (and {r0:,.1f}x at {xname} = {x0:,})."
    )


def report(result, xlabel, xname, baseline, compare, title, logx=True):
    """Plot, print the sentence and any skipped sizes; used by every chapter's timing()."""
    import matplotlib.pyplot as plt

    fig = plot(result, xlabel, baseline, compare, title, logx=logx)
    plt.show()
    for label in compare:
        print(summary(result, label, baseline, xname))
    for note in result["notes"]:
        print("note:", note)
    return fig
