"""Timing helpers shared by every chapter: one implementation, used by the website and inlined
into each exercise notebook by `make release`.

Keep this file self-contained (standard library at the top; numpy, torch and matplotlib imported
inside functions): the release step copies its source into a notebook cell, and under nbgrader
(NBGRADER_EXECUTION set) the timing cell must return before torch is even imported.

The model. Every timed method declares, from its shapes alone, the bytes one call reads plus
writes and the floating-point operations it does (`Cost`). A short calibration on the same
device measures three numbers: the copy bandwidth (bytes per second of a large copy, read plus
write), the matmul rate (flop/s of a product of the same skinny shape as the one predicted) and
the per-call overhead (a tiny call). A method is then predicted to take

    max(bytes / bandwidth, flops / rate) + calls * overhead

and the report shows what the hardware achieved (GB/s for memory-bound methods, GFLOP/s for
products) beside the measured and predicted ratios.
"""

import functools
import math
import os
import platform
from collections.abc import Callable
from typing import NamedTuple

MAX_BYTES = 256 * 2**20  # never build an operand larger than this (a one-hot of 256 MiB)
COPY_BYTES = 64 * 2**20  # the bandwidth calibration copies this much (larger than most caches)
_CALIBRATION = {}  # measured once per process: {(device, what): value}


def grading() -> bool:
    """True while nbgrader validates or grades: timing cells then do nothing."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def skip_under_nbgrader(timing):
    """The one guard of every chapter's timing(): under nbgrader it prints a line and returns
    None before anything (torch included) is imported."""

    @functools.wraps(timing)
    def guarded(*args, **kwargs):
        if grading():
            print("Timing is skipped while nbgrader validates or grades this notebook.")
            return None
        return timing(*args, **kwargs)

    return guarded


class Cost(NamedTuple):
    """What one call of a method costs, from its shapes (all in float32 = 4 bytes)."""

    operand: int  # bytes of the operands it needs allocated: the memory cap applies to this
    moved: int  # bytes one call reads plus writes
    flops: int = 0  # floating-point operations of one call
    calls: int = 1  # library calls per call: each pays the per-call overhead
    shape: tuple = ()  # (m, k, n) of a product (m x k) @ (k x n); empty for memory-bound work


class Method(NamedTuple):
    """A timed method: its label, its Cost at sweep point x, and build(x, device) -> fn."""

    label: str
    cost: Callable
    build: Callable
    predicted: bool = True  # False: code the model does not describe (numpy's per-id loops)


def gather_cost(N: int, V: int, d: int) -> Cost:
    """E[ids]: read N rows of d floats and the N int64 ids, write N rows. The cap is the table."""
    return Cost(operand=4 * V * d, moved=4 * N * d + 4 * N * d + 8 * N)


def matmul_cost(m: int, k: int, n: int, operand: int = 0, calls: int = 1) -> Cost:
    """(m x k) @ (k x n): read both operands, write the result, 2 m k n flops."""
    moved = 4 * (m * k + k * n + m * n)
    return Cost(operand or moved, moved, 2 * m * k * n, calls, (m, k, n))


def scatter_add_cost(N: int, V: int, d: int, calls: int = 2) -> Cost:
    """zeros(V, d) then add N rows into it: write the table, read N rows and the ids, read and
    write the N target rows; N d additions."""
    moved = 4 * V * d + 4 * N * d + 8 * N * d + 8 * N
    return Cost(operand=4 * V * d, moved=moved, flops=N * d, calls=calls)


def lookup_operands(V: int, d: int, n_tokens: int, device, scale: float = 1.0):
    """A seeded (V, d) float32 table and n_tokens ids in [0, V), on device."""
    import torch

    g = torch.Generator().manual_seed(0)
    E = (scale * torch.randn(V, d, generator=g)).to(device)
    ids = torch.randint(0, V, (n_tokens,), generator=g).to(device)
    return E, ids


def lookup_methods(shape_of, scale: float = 1.0) -> list:
    """The two formulations of a lookup: the gather E[ids] and the one-hot product
    one_hot(ids) @ E (the one-hot built once, outside the timed call). shape_of(x) gives
    (N, V, d) at sweep point x."""

    def gather(x, device):
        E, ids = lookup_operands(*shape_of(x)[1:], shape_of(x)[0], device, scale)
        return lambda: E[ids]

    def one_hot_matmul(x, device):
        import torch.nn.functional as F

        E, ids = lookup_operands(*shape_of(x)[1:], shape_of(x)[0], device, scale)
        X = F.one_hot(ids, E.shape[0]).to(E.dtype)
        return lambda: X @ E

    return [
        Method("gather E[ids]", lambda x: gather_cost(*shape_of(x)), gather),
        Method("one_hot(ids) @ E", lambda x: matmul_cost(*shape_of(x)), one_hot_matmul),
    ]


def accumulate_methods(shape_of) -> list:
    """Two ways to add N upstream rows g_n into a zero (V, d) table at rows ids: PyTorch's
    index_add_ and the one-hot product S^T G. shape_of(x) gives (N, V, d) at sweep point x."""

    def operands(x, device):
        import torch

        N, V, d = shape_of(x)
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, V, (N,), generator=g).to(device)
        return ids, torch.randn(N, d, generator=g).to(device), V

    def index_add(x, device):
        import torch

        ids, G, V = operands(x, device)
        return lambda: torch.zeros(V, G.shape[1], device=device).index_add_(0, ids, G)

    def one_hot(x, device):
        import torch

        ids, G, V = operands(x, device)
        S = torch.nn.functional.one_hot(ids, V).to(G.dtype)  # (N, V), built outside the timing
        return lambda: S.T @ G

    def transposed(x):
        N, V, d = shape_of(x)
        return matmul_cost(V, N, d)

    return [
        Method("zeros + index_add_", lambda x: scatter_add_cost(*shape_of(x)), index_add),
        Method("one-hot S^T G", transposed, one_hot),
    ]


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


def _measure(device, what: str, make, min_run_time: float):
    """Time make(device)'s call once per process and device (cached in _CALIBRATION)."""
    key = (str(device), what)
    if key not in _CALIBRATION:
        fn, amount = make(device)
        _CALIBRATION[key] = (bench(fn, device, min_run_time), amount)
    return _CALIBRATION[key]


def calibrate(device, shapes=(), copy_bytes: int = COPY_BYTES, min_run_time: float = 0.1):
    """The three numbers of the model on device, each from a few tenths of a second at most.

    overhead: seconds of a tiny call (a one-element add). bandwidth: bytes per second of a
    copy_bytes copy, counted read plus write. rates: {(m, k, n): flop/s} of a random
    (m x k) @ (k x n) product, one per shape family asked for. The call overhead is taken off the
    copy and product times, as the prediction adds it back. Cached per process.
    """
    import torch

    def tiny(dev):
        a = torch.ones(1, device=dev)
        return (lambda: a.add(1.0)), 1

    def copy(dev):
        src = torch.ones(copy_bytes // 4, device=dev)
        dst = torch.empty_like(src)
        return (lambda: dst.copy_(src)), 2 * copy_bytes

    def product(m, k, n):
        def make(dev):
            g = torch.Generator().manual_seed(0)
            A, B = torch.randn(m, k, generator=g).to(dev), torch.randn(k, n, generator=g).to(dev)
            return (lambda: A @ B), 2 * m * k * n

        return make

    overhead = _measure(device, "overhead", tiny, min_run_time / 2)[0]

    def per_second(what, make):
        t, amount = _measure(device, what, make, min_run_time)
        return amount / max(t - overhead, t / 2)

    return {
        "overhead": overhead,
        "bandwidth": per_second(f"copy {copy_bytes}", copy),
        "copy_bytes": copy_bytes,
        "rates": {s: per_second(f"matmul {s}", product(*s)) for s in shapes},
    }


def predict(cost: Cost, cal: dict) -> float:
    """max(bytes / bandwidth, flops / rate) + calls * overhead. Only products (cost.shape) are
    held to the arithmetic rate: the few additions of a scatter or a bag are far below it."""
    t_memory = cost.moved / cal["bandwidth"]
    t_compute = cost.flops / cal["rates"][cost.shape] if cost.shape else 0.0
    return max(t_memory, t_compute) + cost.calls * cal["overhead"]


def achieved(cost: Cost, seconds: float) -> tuple:
    """(value, unit) the hardware reached: GFLOP/s for a product, else GB/s."""
    if cost.shape:
        return cost.flops / seconds / 1e9, "GFLOP/s"
    return cost.moved / seconds / 1e9, "GB/s"


def _time_point(method, x, device, cap, min_run_time):
    """(cost, seconds or None with a note when the operands exceed the cap)."""
    cost = method.cost(x)
    if cost.operand > cap:
        return (
            cost,
            None,
            f"{method.label} skipped at {x:,}: it needs {cost.operand / 2**20:,.0f} MiB",
        )
    fn = method.build(x, device)
    t = bench(fn, device, min_run_time)
    del fn
    return cost, t, None


def sweep(xs, methods, device=None, min_run_time=0.15, max_bytes=MAX_BYTES, repeats=2, at=None):
    """Time each Method at each x, calibrate, predict.

    A method whose operands would need more than max_bytes is not built at that x (its time is
    NaN, a note says why, and its prediction still stands). The sweep runs ``repeats`` times and
    keeps each point's fastest time, so a burst of other work on a shared machine does not pass
    for the cost of an operation. The products' rates are calibrated on their shape at x = at
    (default: the middle x). Returns {"xs", "times", "predicted", "costs", "calibration",
    "device", "device_name", "notes", "labels"}; the first method is the baseline.
    """
    if device is None:
        device, name = pick_device()
    else:
        name = str(device)
    labels = [m.label for m in methods]
    times = {label: [math.inf] * len(xs) for label in labels}
    costs = {m.label: [m.cost(x) for x in xs] for m in methods}
    notes = []
    for _ in range(max(1, repeats)):
        for i, x in enumerate(xs):
            for m in methods:
                _, t, note = _time_point(m, x, device, max_bytes, min_run_time)
                times[m.label][i] = math.nan if t is None else min(times[m.label][i], t)
                if note and note not in notes:
                    notes.append(note)
    at = xs[len(xs) // 2] if at is None else at
    shapes = sorted({m.cost(at).shape for m in methods if m.predicted and m.cost(at).shape})
    cal = calibrate(device, shapes)
    cal["rate_of"] = {m.label: m.cost(at).shape for m in methods if m.cost(at).shape}
    predicted = {}
    for m in methods:
        rated = [c._replace(shape=cal["rate_of"].get(m.label, ())) for c in costs[m.label]]
        predicted[m.label] = [predict(c, cal) if m.predicted else math.nan for c in rated]
    return {
        "xs": list(xs),
        "labels": labels,
        "times": times,
        "predicted": predicted,
        "costs": costs,
        "calibration": cal,
        "device": device.type,
        "device_name": name,
        "notes": notes,
    }


def ratios(result, slow: str, fast: str, key: str = "times") -> list:
    """slow time / fast time at each x (NaN where either was skipped); key="predicted" for the
    model's ratio."""
    return [s / f for s, f in zip(result[key][slow], result[key][fast], strict=True)]


def _fmt_ratio(r: float) -> str:
    return f"{r:,.0f}x" if r >= 10 else f"{r:,.1f}x"


def _fmt_bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.0f} {unit}"
    return f"{n:,.0f} B"


def _fmt_seconds(t: float) -> str:
    for unit, size in (("s", 1.0), ("ms", 1e-3)):
        if t >= size:
            return f"{t / size:,.3g} {unit}"
    return f"{t * 1e6:,.3g} µs"


def calibration_line(result) -> str:
    """The three calibrated numbers, in words."""
    cal = result["calibration"]
    rates = ", ".join(
        f"{r / 1e9:,.0f} GFLOP/s on ({m:,} x {k:,}) @ ({k:,} x {n:,})"
        for (m, k, n), r in cal["rates"].items()
    )
    return (
        f"Calibration on {result['device_name']}: copy bandwidth {cal['bandwidth'] / 1e9:,.1f}"
        f" GB/s (a {_fmt_bytes(cal['copy_bytes'])} copy, read + write), matmul rate "
        f"{rates or 'not needed'}, per-call overhead {_fmt_seconds(cal['overhead'])}."
    )


def achieved_table(result, xname: str) -> str:
    """One row per method: GB/s or GFLOP/s at each x, and measured / predicted time."""
    xs = result["xs"]
    head = f"{'':34}{xname + ' =':>10}" + "".join(f"{x:>11,}" for x in xs)
    rows = [head]
    for label in result["labels"]:
        costs, ts = result["costs"][label], result["times"][label]
        unit = achieved(costs[0], 1.0)[1]
        vals = [achieved(c, t)[0] if t == t else math.nan for c, t in zip(costs, ts, strict=True)]
        rows.append(f"{label[:34]:34}{unit:>10}" + "".join(f"{v:>11,.1f}" for v in vals))
        pred = result["predicted"][label]
        if any(p == p for p in pred):
            miss = [t / p for t, p in zip(ts, pred, strict=True)]
            rows.append(f"{'':34}{'meas/pred':>10}" + "".join(f"{m:>11,.2f}" for m in miss))
    return "\n".join(rows)


def miss_reason(result, label: str, i: int) -> str:
    """Which effect the model leaves out, from the numbers of one method at one point."""
    cost, t = result["costs"][label][i], result["times"][label][i]
    p, cal = result["predicted"][label][i], result["calibration"]
    share = cost.calls * cal["overhead"] / p
    if t < p and not cost.shape and cost.moved < cal["copy_bytes"]:
        return (
            f"{label} moved its {_fmt_bytes(cost.moved)} {p / t:,.1f}x faster than the copy "
            f"bandwidth predicts: that little data stays in the caches between calls"
        )
    if t > p and share > 0.5:
        where = "kernel launches and synchronisation" if result["device"] != "cpu" else "dispatch"
        return (
            f"{label} took {t / p:,.1f}x the prediction, which is mostly fixed per-call cost "
            f"at this size: its {where} cost more than one tiny call"
        )
    value, unit = achieved(cost, t)
    ref = cal["rates"][cal["rate_of"][label]] if cost.shape else cal["bandwidth"]
    side = "below" if t > p else "above"
    return (
        f"{label} reached {value:,.1f} {unit}, {side} the calibrated {ref / 1e9:,.1f} {unit}: "
        f"{'this product shape' if cost.shape else 'this access pattern'} runs at another rate"
    )


def compare_sentence(result, slow: str, fast: str, xname: str) -> str:
    """ "predicted 2,100x, measured 1,948x" at the largest and smallest x where both ran, and
    why the model misses where it does by more than 2x."""
    xs, meas = result["xs"], ratios(result, slow, fast)
    pred = ratios(result, slow, fast, "predicted")
    both = [i for i, r in enumerate(meas) if r == r]
    if not both:
        return f"{slow} and {fast}: no size ran for both on this machine."
    if not all(pred[i] == pred[i] for i in both):
        lo, hi = both[0], both[-1]
        return (
            f"{slow} took {_fmt_ratio(meas[hi])} as long as {fast} at {xname} = {xs[hi]:,} "
            f"(and {_fmt_ratio(meas[lo])} at {xname} = {xs[lo]:,}); not predicted: the model "
            f"does not describe {slow if pred[hi] != pred[hi] else fast}."
        )
    parts = [
        f"predicted {_fmt_ratio(pred[i])}, measured {_fmt_ratio(meas[i])} at {xname} = {xs[i]:,}"
        for i in (both[-1], both[0])[: len(set((both[-1], both[0])))]
    ]
    text = f"{slow} / {fast}: " + "; ".join(parts) + "."
    for i in both:
        off = meas[i] / pred[i]
        if not 0.5 <= off <= 2.0:
            worst = max((slow, fast), key=lambda lb: abs(math.log(_off(result, lb, i))))
            text += (
                f"\n  at {xname} = {xs[i]:,} the prediction is off by {_fmt_ratio(max(off, 1 / off))}: "
                f"{miss_reason(result, worst, i)}."
            )
    return text


def _off(result, label: str, i: int) -> float:
    return result["times"][label][i] / result["predicted"][label][i]


def skipped_lines(result, xname: str, names=None) -> list:
    """For each method not built at some x: its predicted time there, from the model."""
    lines = []
    for label in result["labels"]:
        for i, (t, p) in enumerate(
            zip(result["times"][label], result["predicted"][label], strict=True)
        ):
            if t != t and p == p:
                where = names[i] if names else f"{xname} = {result['xs'][i]:,}"
                need = _fmt_bytes(result["costs"][label][i].operand)
                lines.append(
                    f"not timed: {label} at {where} (it needs {need}); predicted {_fmt_seconds(p)}"
                )
    return lines


def _styles(labels) -> dict:
    markers = "osD^vP*X"
    return {
        lb: dict(color=f"C{i % 10}", marker=markers[i % len(markers)])
        for i, lb in enumerate(labels)
    }


def _finish(ax, ylabel: str, xlabel: str, logx: bool) -> None:
    from matplotlib.lines import Line2D

    handles, _ = ax.get_legend_handles_labels()
    handles += [
        Line2D([], [], color="grey", marker="o", label="measured"),
        Line2D([], [], color="grey", ls="--", label="predicted by the model"),
    ]
    ax.legend(handles=handles, fontsize=7)
    ax.set_yscale("log")
    if logx:
        ax.set_xscale("log")
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    ax.grid(True, which="both", alpha=0.3)


def plot(result, xlabel: str, title: str, logx: bool = True, names=None):
    """Two panels: seconds per call of every method, and each method / the baseline (the first
    method); solid lines with markers are measured, dashed lines predicted by the model."""
    import matplotlib.pyplot as plt

    xs, labels = result["xs"], result["labels"]
    fig, (ax_t, ax_r) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    style = _styles(labels)
    for label in labels:
        ax_t.plot(xs, [t * 1e3 for t in result["times"][label]], label=label, **style[label])
        pred = [p * 1e3 for p in result["predicted"][label]]
        ax_t.plot(xs, pred, ls="--", color=style[label]["color"])
    for label in labels[1:]:
        vs = f"{label} / {labels[0]}"
        ax_r.plot(xs, ratios(result, label, labels[0]), label=vs, **style[label])
        ax_r.plot(
            xs, ratios(result, label, labels[0], "predicted"), ls="--", color=style[label]["color"]
        )
    ax_r.axhline(1.0, color="grey", lw=1, ls=":")
    for i, name in enumerate(names or []):
        ax_t.annotate(
            name,
            (xs[i], result["predicted"][labels[0]][i] * 1e3),
            fontsize=7,
            rotation=30,
            xytext=(3, -12),
            textcoords="offset points",
        )
    _finish(ax_t, "milliseconds per call (log)", xlabel, logx)
    _finish(ax_r, "time ratio (log; above 1 = slower)", xlabel, logx)
    fig.suptitle(f"{title}\nmeasured on {result['device_name']}", fontsize=10)
    return fig


@skip_under_nbgrader
def run_chapter(xs, methods, xname: str, xlabel: str, title: str, names=None, **sweep_args):
    """Every chapter's timing(): sweep and calibrate, plot, print the calibration, the achieved
    rates, the predicted and measured ratios, and what was not timed."""
    import matplotlib.pyplot as plt

    result = sweep(xs, methods, **sweep_args)
    plot(result, xlabel, title, names=names)
    plt.show()
    print(calibration_line(result))
    print(achieved_table(result, xname))
    for label in result["labels"][1:]:
        print(compare_sentence(result, label, result["labels"][0], xname))
    for line in skipped_lines(result, xname, names):
        print(line)
    return result
