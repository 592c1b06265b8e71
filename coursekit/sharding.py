"""Chapter 9: a row-sharded embedding table on a real distributed engine (torch.distributed, gloo).

``run(E, batches, grads)`` starts one process per batch (``world = len(batches)``), joined in a
gloo process group through a ``FileStore`` in a fresh temporary folder (no port, so parallel runs
never collide). Rank ``r`` holds only its block of rows of ``E``, TorchRec's row-wise layout
(:func:`block_rows`: equal blocks of ceil(V / world) rows, the last one shorter), and looks up
its own batch ``batches[r]``:

1. it sorts its ids by the rank that owns them (stable, so each destination gets them in batch
   order) and exchanges the counts, then the ids, with ``all_to_all_single``;
2. each rank gathers the rows it was asked for from its block, and a second ``all_to_all_single``
   sends them back; the requesting rank puts them back in its batch order;
3. the backward pass sends each position's upstream gradient to the owner of its row (the same
   splits as the ids), and the owner accumulates them into its block's gradient with
   ``index_add_``: source rank 0's positions first, then rank 1's, each in batch order.

Gloo's list form ``all_to_all`` wants tensors of one size (``probe_uneven``), and a row-sharded
lookup sends a different number of ids to each rank, so every exchange here is an
``all_to_all_single`` with explicit split sizes. Every call is logged with the bytes this rank
sends to *other* ranks (counted from the tensor and the splits it passes; gloo keeps no byte
counter) and its time (the median of ``repeats`` runs, each after a barrier).

The worker is a module-level function of an importable module: the spawned processes import it
by name (they could not unpickle a function defined in a notebook). Where this module exists only
in memory (a page's notebook holds coursekit's modules in its setup cell), :func:`run` writes a
copy of its source into the job's folder and puts that folder on the ``sys.path`` that the
spawned ranks start with (the parent's), so that they find it under the same name. A script that calls :func:`run` needs the usual
``if __name__ == "__main__":`` guard (each spawned process imports the script's main module); a
notebook does not (its cells are not imported again).
"""

import inspect
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def block_rows(V: int, world: int) -> list[int]:
    """Rows per rank of the row-wise layout: blocks of ceil(V / world) rows, the last shorter."""
    block = math.ceil(V / world)
    return [max(0, min(block, V - r * block)) for r in range(world)]


def _exchange(log, kind, out, inp, out_splits, in_splits, rank, repeats):
    """all_to_all_single(out, inp, ...), timed (median of ``repeats``) and its bytes counted:
    what this rank sends to the other ranks (its own split stays in its memory)."""
    per = math.prod(inp.shape[1:]) * inp.element_size()  # bytes of one id, count or row
    sent = sum(n for s, n in enumerate(in_splits) if s != rank) * per
    seconds = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        dist.all_to_all_single(out, inp, out_splits, in_splits)
        seconds.append(time.perf_counter() - start)
    log.append({"what": kind, "bytes_sent": sent, "seconds": statistics.median(seconds)})
    return out


def probe_uneven(rank: int, world: int) -> str:
    """Try gloo's list all_to_all with tensors of different sizes: the message it refuses with,
    or "" if it works."""
    ins = [torch.zeros(1 + s) for s in range(world)]  # rank s gets 1 + s numbers
    outs = [torch.empty(1 + rank) for _ in range(world)]
    try:
        dist.all_to_all(outs, ins)
    except RuntimeError as exc:
        return str(exc).splitlines()[0]
    return ""


def _lookup(shard, start, ids, world, rank, repeats):
    """Forward of rank ``rank``: (its rows in batch order, the routing, the exchange log)."""
    log = []
    starts = torch.tensor([0, *torch.cumsum(torch.tensor(shard["rows"]), 0).tolist()])
    owner = torch.bucketize(ids, starts[1:], right=True)  # starts[s] <= id < starts[s + 1]
    order = torch.argsort(owner, stable=True)  # positions grouped by owner, batch order inside
    send_counts = torch.bincount(owner, minlength=world)
    recv_counts = torch.empty_like(send_counts)
    _exchange(log, "counts", recv_counts, send_counts, [1] * world, [1] * world, rank, repeats)
    send, recv = send_counts.tolist(), recv_counts.tolist()
    recv_ids = torch.empty(sum(recv), dtype=ids.dtype)
    _exchange(log, "ids", recv_ids, ids[order], recv, send, rank, repeats)
    table = shard["E"]
    rows = table[recv_ids - start]  # the local gather: only rows this rank owns
    back = torch.empty(len(ids), table.shape[1], dtype=table.dtype)
    _exchange(log, "rows", back, rows, send, recv, rank, repeats)
    H = torch.empty_like(back)
    H[order] = back  # back into batch order
    route = dict(order=order, send=send, recv=recv, local=recv_ids - start)
    return H, route, log


def _backward(G, route, n_rows, rank, repeats):
    """Backward of rank ``rank``: its block's gradient, accumulated on the owner."""
    log = []
    recv_g = torch.empty(sum(route["recv"]), G.shape[1], dtype=G.dtype)
    _exchange(
        log, "gradients", recv_g, G[route["order"]], route["recv"], route["send"], rank, repeats
    )
    dE = torch.zeros(n_rows, G.shape[1], dtype=G.dtype)
    dE.index_add_(0, route["local"], recv_g)  # source rank 0 first, then 1, ...: batch order
    return dE, log


def worker(rank: int, world: int, folder: str, timeout_s: float) -> None:
    """One rank: join the group, look up its batch in float64 and float32, run the backward,
    and save what it computed and sent into ``folder``/rank<r>.pt."""
    torch.set_num_threads(1)
    store = dist.FileStore(os.path.join(folder, "store"), world)
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=world, timeout=timedelta(seconds=timeout_s)
    )
    try:
        job = torch.load(os.path.join(folder, "inputs.pt"))
        rows = block_rows(job["E"].shape[0], world)
        start = sum(rows[:rank])
        out = {"rows": rows, "uneven_all_to_all": probe_uneven(rank, world)}
        for dtype in (torch.float64, torch.float32):
            shard = {"E": job["E"][start : start + rows[rank]].to(dtype), "rows": rows}
            ids, G = job["batches"][rank], job["grads"][rank].to(dtype)
            H, route, log = _lookup(shard, start, ids, world, rank, job["repeats"])
            dE, log_b = _backward(G, route, rows[rank], rank, job["repeats"])
            gather_times = []  # the median of the repeats, as the exchanges are timed
            for _ in range(job["repeats"]):
                t0 = time.perf_counter()
                shard["E"][route["local"]]
                gather_times.append(time.perf_counter() - t0)
            gather_s = statistics.median(gather_times)
            out[str(dtype)] = dict(
                H=H,
                dE=dE,
                log=log + log_b,
                send=route["send"],
                recv=route["recv"],
                gather_s=gather_s,
            )
        torch.save(out, os.path.join(folder, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def _importable_copy(folder: str) -> str | None:
    """None where this module is a file the ranks can import; otherwise (it lives in memory
    only) write its source under ``folder``/src, by its module name, and return that folder."""
    if os.path.isfile(globals().get("__file__") or ""):
        return None
    root = os.path.join(folder, "src")
    *packages, name = __name__.split(".")
    where = os.path.join(root, *packages)
    os.makedirs(where)
    for depth in range(1, len(packages) + 1):  # empty __init__.py files for the packages
        open(os.path.join(root, *packages[:depth], "__init__.py"), "w").close()
    with open(os.path.join(where, f"{name}.py"), "w", encoding="utf-8") as f:
        f.write(inspect.getsource(sys.modules[__name__]))
    return root


def run(E, batches, grads, repeats: int = 21, timeout_s: float = 120.0) -> list[dict]:
    """Spawn ``len(batches)`` gloo processes on this machine; rank r looks up ``batches[r]``
    (int64 ids into E) and back-propagates ``grads[r]`` (one row per id). Returns one dict per
    rank: its rows ``H`` and block gradient ``dE`` for each dtype, the ids it sent to and got
    from each rank, and the exchange log (bytes sent to other ranks, seconds)."""
    world = len(batches)
    if world < 2 or len(grads) != world:
        raise ValueError("run needs one batch and one gradient per rank, for at least two ranks")
    folder = tempfile.mkdtemp(prefix="course-gloo-")
    try:
        job = dict(E=E.double(), batches=list(batches), grads=[g.double() for g in grads])
        torch.save({**job, "repeats": repeats}, os.path.join(folder, "inputs.pt"))
        copy = _importable_copy(folder)
        if copy is not None:  # spawned processes start with the parent's sys.path
            sys.path.insert(0, copy)
        try:
            mp.start_processes(
                worker,
                args=(world, folder, timeout_s),
                nprocs=world,
                join=True,
                start_method="spawn",
            )
        finally:
            if copy is not None:
                sys.path.remove(copy)
        return [torch.load(os.path.join(folder, f"rank{r}.pt")) for r in range(world)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
