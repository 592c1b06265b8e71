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

import contextlib
import functools
import math
import os
import platform
import time
from collections.abc import Callable
from typing import NamedTuple

MAX_BYTES = 256 * 2**20  # never build an operand larger than this (a one-hot of 256 MiB)
COPY_BYTES = 64 * 2**20  # the bandwidth calibration copies this much (larger than most caches)
_CALIBRATION = {}  # measured once per process: {(device and threads, what): (seconds, amount)}


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
    fresh: int = 0  # bytes of new memory each call allocates (its results)


class Method(NamedTuple):
    """A timed method: its label, its Cost at sweep point x, and build(x, device) -> fn."""

    label: str
    cost: Callable
    build: Callable
    predicted: bool = True  # False: code the model does not describe (numpy's per-id loops)


def gather_cost(N: int, V: int, d: int) -> Cost:
    """E[ids]: read N rows of d floats and the N int64 ids, write N rows. The cap is the table."""
    return Cost(operand=4 * V * d, moved=4 * N * d + 4 * N * d + 8 * N, fresh=4 * N * d)


def matmul_cost(m: int, k: int, n: int, operand: int = 0, calls: int = 1) -> Cost:
    """(m x k) @ (k x n): read both operands, write the result, 2 m k n flops."""
    moved = 4 * (m * k + k * n + m * n)
    return Cost(operand or moved, moved, 2 * m * k * n, calls, (m, k, n), fresh=4 * m * n)


def scatter_add_cost(N: int, V: int, d: int, calls: int = 2) -> Cost:
    """zeros(V, d) then add N rows into it: write the table, read N rows and the ids, read and
    write the N target rows; N d additions."""
    moved = 4 * V * d + 4 * N * d + 8 * N * d + 8 * N
    return Cost(operand=4 * V * d, moved=moved, flops=N * d, calls=calls, fresh=4 * V * d)


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
    n = torch.get_num_threads()
    return torch.device("cpu"), f"CPU: {name}, {n} thread{'s' if n > 1 else ''}"


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()
    elif device.type == "mps":
        torch.mps.synchronize()


def _block(fn, n: int, device) -> float:
    """Seconds for n calls of fn(), synchronised on GPUs at both ends."""
    synchronize(device)
    start = time.perf_counter()
    for _ in range(n):
        fn()
    synchronize(device)
    return time.perf_counter() - start


def bench(fn, device, min_run_time: float = 0.15, block: float = 1e-3) -> float:
    """Seconds per call of fn(): the fastest of many blocks of calls, each about `block` long
    (synchronised on GPUs), for min_run_time in all (warm-up included; one block at least).

    The fastest block is reported: on a shared machine other processes only ever add time, and a
    millisecond is short enough that many blocks run undisturbed even when the machine is busy.
    """
    end = time.perf_counter() + min_run_time
    fn()  # warm up (allocations, kernel selection)
    n, t = 1, _block(fn, 1, device)
    while t < block:
        n = 2 * n if t <= 0 else max(2 * n, int(n * block / t))
        t = _block(fn, n, device)
    best = t / n
    while time.perf_counter() < end:
        best = min(best, _block(fn, n, device) / n)
    return best


def _measure(device, items: dict, min_run_time: float, rounds: int = 3) -> dict:
    """{what: (seconds, amount)} for items {what: make(device) -> (fn, amount)}, each timed once
    per process (cached in _CALIBRATION) as its fastest of `rounds` short benches taken in turn,
    so that a burst of other work on a shared machine does not hit all of one item's blocks."""
    import torch

    at = f"{device}, {torch.get_num_threads()} threads"
    new = {w: make(device) for w, make in items.items() if (at, w) not in _CALIBRATION}
    best = dict.fromkeys(new, math.inf)
    for _ in range(rounds):
        for w, (fn, _amount) in new.items():
            best[w] = min(best[w], bench(fn, device, min_run_time / rounds))
    for w, (_fn, amount) in new.items():
        _CALIBRATION[(at, w)] = (best[w], amount)
    return {w: _CALIBRATION[(at, w)] for w in items}


def calibrate(device, shapes=(), copy_bytes: int = COPY_BYTES, min_run_time: float = 0.15):
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

    overhead = _measure(device, {"overhead": tiny}, min_run_time / 3)["overhead"][0]
    items = {f"copy {copy_bytes}": copy, **{f"matmul {s}": product(*s) for s in shapes}}
    rate = {
        w: a / max(t - overhead, t / 2)
        for w, (t, a) in _measure(device, items, min_run_time).items()
    }
    return {
        "overhead": overhead,
        "bandwidth": rate[f"copy {copy_bytes}"],
        "copy_bytes": copy_bytes,
        "rates": {s: rate[f"matmul {s}"] for s in shapes},
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
    """Seconds per call of method at x, or (NaN, a note) when its operands exceed the cap."""
    cost = method.cost(x)
    if cost.operand > cap:
        need = f"{cost.operand / 2**20:,.0f} MiB"
        return math.nan, f"{method.label} skipped at {x:,}: it needs {need}"
    fn = method.build(x, device)
    t = bench(fn, device, min_run_time)
    del fn
    return t, None


def _model(xs, methods, costs, device, at):
    """Calibrate on device (the products' rates on their shapes at x = at) and predict every
    point of every method the model describes (NaN for the others)."""
    at_cost = {m.label: m.cost(at) for m in methods}
    shapes = sorted({at_cost[m.label].shape for m in methods if m.predicted} - {()})
    cal = calibrate(device, shapes)
    cal["rate_of"] = {lb: c.shape for lb, c in at_cost.items() if c.shape}
    predicted = {}
    for m in methods:
        rated = [c._replace(shape=cal["rate_of"].get(m.label, ())) for c in costs[m.label]]
        predicted[m.label] = [predict(c, cal) if m.predicted else math.nan for c in rated]
    return cal, predicted


def suspicious(times, costs) -> list:
    """Points of one method that look like other work was timed with them: over twice the time
    the same method took for at least as much work elsewhere."""
    return [i for i, t in enumerate(times) if t == t and _busier(times, costs, i) is not None]


@contextlib.contextmanager
def fair_threads(device):
    """On a CPU whose load average exceeds its cores, time with one thread and say so.

    With more runnable processes than cores, a call split over several threads waits for each of
    them to get a turn, so whole stretches of calls then measure the scheduler instead of the
    operation; one thread is slower but measures the operation. Yields a note, or None.
    """
    import torch

    threads, cores = torch.get_num_threads(), os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    # The site build's book/_ext/prerun.py runs two pages at once but every timing cell alone,
    # and says so here: the load average it leaves behind is not load during the timing.
    alone = os.environ.get("COURSE_TIMED_ALONE") == "1"
    busy = device.type == "cpu" and threads > 1 and load > cores - 0.5 and not alone
    if busy:
        torch.set_num_threads(1)
    try:
        yield (
            f"machine busy (load average {load:.1f} on {cores} cores): timed with 1 thread"
            if busy
            else None
        )
    finally:
        torch.set_num_threads(threads)


def _time_all(xs, methods, device, costs, max_bytes, min_run_time, repeats):
    """Every point ``repeats`` times, then up to twice more where suspicious; fastest kept."""
    times = {m.label: [math.inf] * len(xs) for m in methods}
    notes = []
    todo = [(m, i) for _ in range(max(1, repeats)) for i in range(len(xs)) for m in methods]
    for _ in range(3):
        for m, i in todo:
            t, note = _time_point(m, xs[i], device, max_bytes, min_run_time)
            times[m.label][i] = min(times[m.label][i], t) if t == t else t
            if note and note not in notes:
                notes.append(note)
        todo = [(m, i) for m in methods for i in suspicious(times[m.label], costs[m.label])]
    return times, notes


def sweep(xs, methods, device=None, min_run_time=0.15, max_bytes=MAX_BYTES, repeats=2, at=None):
    """Calibrate, predict, and time each Method at each x; the first method is the baseline.

    A method whose operands would need more than max_bytes is not built at that x (its time is
    NaN, a note says why, and its prediction still stands). The sweep runs ``repeats`` times and
    keeps each point's fastest time, so a burst of other work on a shared machine does not pass
    for the cost of an operation; points that still look disturbed (see suspicious) are timed up
    to twice more. The products' rates are calibrated on their shape at x = at (default: the
    middle x). Returns {"xs", "labels", "times", "predicted", "costs", "calibration", "device",
    "device_name", "notes"}.
    """
    chosen, device = device is None, pick_device()[0] if device is None else device
    costs = {m.label: [m.cost(x) for x in xs] for m in methods}
    with fair_threads(device) as busy:
        name = pick_device()[1] if chosen else str(device)
        cal, predicted = _model(xs, methods, costs, device, xs[len(xs) // 2] if at is None else at)
        args = (max_bytes, min_run_time, repeats)
        times, notes = _time_all(xs, methods, device, costs, *args)
    return dict(
        xs=list(xs),
        labels=[m.label for m in methods],
        times=times,
        predicted=predicted,
        costs=costs,
        calibration=cal,
        device=device.type,
        device_name=name,
        notes=notes + [busy] * (busy is not None),
    )


def ratios(result, slow: str, fast: str, key: str = "times") -> list:
    """slow time / fast time at each x (NaN where either was skipped); key="predicted" for the
    model's ratio."""
    return [s / f for s, f in zip(result[key][slow], result[key][fast], strict=True)]


def _fmt_ratio(r: float) -> str:
    return f"{r:,.0f}x" if r >= 9.95 else f"{r:,.1f}x"


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
    w = max(11, len(f"{max(xs):,}") + 2)
    head = f"{'':34}{xname + ' =':>10}" + "".join(f"{x:>{w},}" for x in xs)
    rows = [head]
    for label in result["labels"]:
        costs, ts = result["costs"][label], result["times"][label]
        unit = achieved(costs[0], 1.0)[1]
        vals = [achieved(c, t)[0] if t == t else math.nan for c, t in zip(costs, ts, strict=True)]
        rows.append(f"{label[:34]:34}{unit:>10}" + "".join(f"{v:>{w},.1f}" for v in vals))
        pred = result["predicted"][label]
        if any(p == p for p in pred):
            miss = [t / p for t, p in zip(ts, pred, strict=True)]
            rows.append(f"{'':34}{'meas/pred':>10}" + "".join(f"{m:>{w},.2f}" for m in miss))
    return "\n".join(rows)


def _busier(times, costs, i: int):
    """Index of a point where the same method did at least as much work in under half the time
    of point i (then other work was timed with point i), or None."""
    for j, (tj, cj) in enumerate(zip(times, costs, strict=True)):
        if cj.moved >= costs[i].moved and cj.flops >= costs[i].flops and tj < times[i] / 2:
            return j
    return None


def miss_kind(result, label: str, i: int) -> str:
    """Which effect the model leaves out at point i of a method: "busy" (other work was timed
    with it), "cache", "fresh" (new memory each call), "overhead", "rate" (another rate than the
    calibration product's), or "noise" (it is the calibration product itself, same shape)."""
    cost, t = result["costs"][label][i], result["times"][label][i]
    p, cal = result["predicted"][label][i], result["calibration"]
    rated = cal["rate_of"].get(label)
    if t > p and _busier(result["times"][label], result["costs"][label], i) is not None:
        return "busy"
    if t < p and cost.moved < (matmul_cost(*rated).moved if rated else cal["copy_bytes"]):
        return "cache"
    if t > p and result["device"] == "cpu" and cost.fresh >= max(2**23, cost.moved / 4):
        return "fresh"
    if t > p and cost.calls * cal["overhead"] > p / 2:
        return "overhead"
    if rated and tuple(cost.shape) == tuple(rated):
        return "noise"
    return "rate"


def _effect(result, label: str, kind: str) -> str:
    """The effect of miss_kind in words, for a page."""
    than = "product" if result["calibration"]["rate_of"].get(label) else "copy"
    where = "kernel launches" if result["device"] != "cpu" else "dispatch"
    return {
        "busy": f"other work on the machine was timed with {label}",
        "cache": f"{label} ran faster than predicted, as its data stay in the caches between "
        f"calls and the larger calibration {than}'s do not",
        "fresh": f"{label} allocates new memory each call, which the system maps and zeroes "
        "page by page, a cost that bytes over bandwidth leaves out",
        "overhead": f"{label} is mostly fixed per-call cost ({where}) at that size",
        "rate": f"{label} ran at another rate than the calibration {than}",
        "noise": f"{label} has the calibration product's own shape, so the difference is noise "
        "in the calibration or the timing (calibrate longer: a larger min_run_time)",
    }[kind]


def miss_reason(result, label: str, i: int) -> str:
    """miss_kind in words, with the numbers of that point."""
    cost, t = result["costs"][label][i], result["times"][label][i]
    p, cal, kind = result["predicted"][label][i], result["calibration"], miss_kind(result, label, i)
    value, unit = achieved(cost, t)
    ref = cal["rates"][cal["rate_of"][label]] if cost.shape else cal["bandwidth"]
    detail = {
        "busy": "it did as much work in under half the time at another size",
        "cache": f"{_fmt_bytes(cost.moved)} moved, {p / t:,.1f}x faster than predicted",
        "fresh": f"{_fmt_bytes(cost.fresh)} of new memory per call",
        "overhead": f"{_fmt_seconds(t)} per call",
        "rate": f"{value:,.1f} {unit} against the calibrated {ref / 1e9:,.1f}",
        "noise": f"{value:,.1f} {unit} against the calibrated {ref / 1e9:,.1f}",
    }[kind]
    return f"{_effect(result, label, kind)} ({detail})"


def _off(result, label: str, i: int) -> float:
    return result["times"][label][i] / result["predicted"][label][i]


def misses(result, slow: str, fast: str, xname: str, since=None) -> list:
    """Where the predicted ratio slow / fast is off the measured one by more than 2x (at x >=
    since): (index, by how much, the method the model misses most there) for each."""
    xs, meas = result["xs"], ratios(result, slow, fast)
    pred = ratios(result, slow, fast, "predicted")
    found = []
    for i, (m, p) in enumerate(zip(meas, pred, strict=True)):
        if m == m and p == p and not 0.5 <= m / p <= 2.0 and (since is None or xs[i] >= since):
            worst = max((slow, fast), key=lambda lb: abs(math.log(_off(result, lb, i))))
            found.append((i, _fmt_ratio(max(m / p, p / m)), worst))
    return found


def compare_sentence(result, slow: str, fast: str, xname: str) -> str:
    """ "predicted 2,100x, measured 1,948x" at the largest and smallest x where both ran, and
    why the model misses where it does by more than 2x."""
    xs, meas = result["xs"], ratios(result, slow, fast)
    pred = ratios(result, slow, fast, "predicted")
    both = [i for i, r in enumerate(meas) if r == r]
    if not both:
        return f"{slow} and {fast}: no size ran for both on this machine."
    lo, hi = both[0], both[-1]
    if pred[hi] != pred[hi]:
        return (
            f"{slow} took {_fmt_ratio(meas[hi])} as long as {fast} at {xname} = {xs[hi]:,} "
            f"(and {_fmt_ratio(meas[lo])} at {xname} = {xs[lo]:,}); not predicted: the model "
            f"does not describe {slow if result['predicted'][slow][hi] != result['predicted'][slow][hi] else fast}."
        )
    parts = [
        f"predicted {_fmt_ratio(pred[i])}, measured {_fmt_ratio(meas[i])} at {xname} = {xs[i]:,}"
        for i in sorted({hi, lo}, reverse=True)
    ]
    text = f"{slow} / {fast}: " + "; ".join(parts) + "."
    lines = [
        f"at {xname} = {xs[i]:,} it is off by {off}: {miss_reason(result, worst, i)}"
        for i, off, worst in misses(result, slow, fast, xname)
    ]
    return "\n  ".join([text, *lines])


def verdict(result, slow: str, fast: str, xname: str, since=None) -> str:
    """For a page: at how many sizes (x >= since) the model is within 2x of the measured ratio
    slow / fast, and for the others, which effect it leaves out."""
    xs, meas = result["xs"], ratios(result, slow, fast)
    pred = ratios(result, slow, fast, "predicted")
    n = sum(1 for x, m in zip(xs, meas, strict=True) if m == m and (since is None or x >= since))
    found = misses(result, slow, fast, xname, since)
    scope = f" with {xname} ≥ {since:,}" if since is not None else ""
    ok = {0: "every one", n: "none"}.get(len(found), f"{n - len(found)}")
    text = f"The predicted ratio is within 2x of the measured one at {ok} of the {n} sizes{scope}."
    groups = {}
    for i, off, worst in found:
        groups.setdefault((worst, miss_kind(result, worst, i)), []).append((i, off))
    for (label, kind), points in groups.items():
        at = _and([f"{xname} = {xs[i]:,}" for i, _ in points])
        by = sorted((max(meas[i] / pred[i], pred[i] / meas[i]), off) for i, off in points)
        offs = by[0][1] if len(by) == 1 else f"{by[0][1]} to {by[-1][1]}"
        text += f" At {at} it is off by {offs}: {_effect(result, label, kind)}."
    return text


def _and(items: list) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def skipped_lines(result, xname: str, names=None) -> list:
    """At each x where a method was not built: what it would need and the model's time for it."""
    lines, base = [], result["labels"][0]
    for i, x in enumerate(result["xs"]):
        skipped = [
            lb for lb in result["labels"] if result["times"][lb][i] != result["times"][lb][i]
        ]
        if not skipped:
            continue
        parts = []
        for lb in skipped:
            p, need = result["predicted"][lb][i], _fmt_bytes(result["costs"][lb][i].operand)
            ratio = (
                f", {_fmt_ratio(p / result['predicted'][base][i])} the {base}" if lb != base else ""
            )
            parts.append(f"{lb} (needs {need}): predicted {_fmt_seconds(p)}{ratio}")
        lines.append(
            f"not timed at {names[i] if names else f'{xname} = {x:,}'}: " + "; ".join(parts)
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


def plot(result, xlabel: str, title: str, logx: bool = True, names=None, offsets=None):
    """Two panels: seconds per call of every method, and each method / the baseline (the first
    method); solid lines with markers are measured, dashed lines predicted by the model.
    offsets: {name: (dx, dy)} in points, for labels the alternating default would overlap."""
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
            # alternate below/above: close x's overlap; offsets move the ones that still do
            xytext=(offsets or {}).get(name, (3, -12 if i % 2 == 0 else 6)),
            textcoords="offset points",
        )
    _finish(ax_t, "milliseconds per call (log)", xlabel, logx)
    _finish(ax_r, "time ratio (log; above 1 = slower)", xlabel, logx)
    fig.suptitle(f"{title}\nmeasured on {result['device_name']}", fontsize=10)
    return fig


@skip_under_nbgrader
def run_chapter(
    xs,
    methods,
    xname: str,
    xlabel: str,
    title: str,
    names=None,
    offsets=None,
    plausible=None,
    tries: int = 3,
    **sweep_args,
):
    """Every chapter's timing(): sweep and calibrate, plot, print the calibration, the achieved
    rates, the predicted and measured ratios, and what was not timed. With plausible (a test of
    a result), the sweep is redone up to tries times in all until it passes; result["tries"]
    says how many ran and result["plausible"] whether the last passed (None: not tested)."""
    import matplotlib.pyplot as plt

    for n in range(1, (tries if plausible else 1) + 1):
        result = sweep(xs, methods, **sweep_args)
        ok = None if plausible is None else bool(plausible(result))
        result.update(tries=n, plausible=ok)
        if ok is not False:
            break
    plot(result, xlabel, title, names=names, offsets=offsets)
    plt.show()
    print(calibration_line(result))
    print(achieved_table(result, xname))
    for label in result["labels"][1:]:
        print(compare_sentence(result, label, result["labels"][0], xname))
    for line in skipped_lines(result, xname, names):
        print(line)
    for note in result["notes"]:
        if " skipped at " not in note:  # those are in skipped_lines, with their predictions
            print("note:", note)
    return result
