"""Chapter 9: the reference solutions agree with FBGEMM and PyTorch.

* quantize_rows equals FBGEMM's own fused row-wise kernels, byte for byte after unpacking
  (``FloatToFused8BitRowwiseQuantized`` for 8 bits, ``FloatToFusedNBitRowwiseQuantizedSBHalf`` for
  4 and 2), from fbgemm-gpu-cpu (pinned in requirements.txt), on Hypothesis tables and on the
  corner cases (ties, constant rows, rows far from zero); PyTorch's own quantized EmbeddingBag
  packing is checked to be the same bytes;
* dequantize_rows equals FBGEMM's dequantization kernels;
* route's blocks, gathered on their owners and put back, equal F.embedding (so the routing is
  the exchange); sharded_lookup and sharded_backward, given route's output and the owners, equal
  F.embedding and its autograd gradient on the whole table, for random shard sizes (empty ones
  included) and batches;
* the chapter's two-process gloo run (coursekit/sharding.py) equals one process exactly.
"""

import importlib
import importlib.abc
import importlib.util
import sys
from pathlib import Path

import fbgemm_gpu  # registers torch.ops.fbgemm (fbgemm-gpu-cpu, pinned in requirements.txt)
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.checks import ch09, reference

REF = reference.load("09_tables_at_scale")


def test_fbgemm_gpu_cpu_loads_its_library():
    """fbgemm-gpu-cpu 1.9.0 installs against torch 2.13 but fails to load: the pin must hold."""
    assert fbgemm_gpu.__version__ == "1.8.0"
    out = torch.ops.fbgemm.FloatToFused8BitRowwiseQuantized(torch.ones(2, 4))
    assert out.dtype == torch.uint8 and tuple(out.shape) == (2, 4 + 8)


# --------------------------------------------------------------------------------------------
# FBGEMM's fused rows, unpacked: codes (V, d), scale (V,), offset (V,)
# --------------------------------------------------------------------------------------------
def fbgemm_quantize(E: np.ndarray, bits: int):
    x = torch.from_numpy(np.ascontiguousarray(E, dtype=np.float32))
    d = E.shape[1]
    if bits == 8:
        fused = torch.ops.fbgemm.FloatToFused8BitRowwiseQuantized(x).numpy()
        params = fused[:, d:].copy().view(np.float32)
        return fused[:, :d], params[:, 0], params[:, 1]
    fused = torch.ops.fbgemm.FloatToFusedNBitRowwiseQuantizedSBHalf(x, bits).numpy()
    per = 8 // bits
    packed = fused[:, : d // per]
    codes = np.stack(
        [(packed[:, c // per] >> ((c % per) * bits)) & (2**bits - 1) for c in range(d)], axis=1
    ).astype(np.uint8)
    params = fused[:, d // per :].copy().view(np.float16)
    return codes, params[:, 0], params[:, 1]


def fbgemm_dequantize(E: np.ndarray, bits: int) -> np.ndarray:
    x = torch.from_numpy(np.ascontiguousarray(E, dtype=np.float32))
    if bits == 8:
        f = torch.ops.fbgemm.FloatToFused8BitRowwiseQuantized(x)
        return torch.ops.fbgemm.Fused8BitRowwiseQuantizedToFloat(f).numpy()
    f = torch.ops.fbgemm.FloatToFusedNBitRowwiseQuantizedSBHalf(x, bits)
    return torch.ops.fbgemm.FusedNBitRowwiseQuantizedSBHalfToFloat(f, bits).numpy()


def assert_same_quantization(E, bits):
    codes, scale, offset = REF.quantize_rows(E, bits)
    f_codes, f_scale, f_offset = fbgemm_quantize(E, bits)
    assert codes.dtype == np.uint8 and scale.dtype == offset.dtype == f_scale.dtype
    np.testing.assert_array_equal(codes, f_codes)
    # exactly equal as numbers (a row of +0 and -0 may keep either zero as its minimum)
    np.testing.assert_array_equal(scale.astype(np.float64), f_scale.astype(np.float64))
    np.testing.assert_array_equal(offset.astype(np.float64), f_offset.astype(np.float64))


@st.composite
def tables(draw):
    """A float32 table whose d FBGEMM can pack and unpack at every bit width (a multiple of 8),
    rows of any spread and centre (within float16's range), some of them constant."""
    V = draw(st.integers(1, 12))
    d = 8 * draw(st.integers(1, 4))
    centre = draw(st.floats(-2000, 2000, width=32))
    spread = draw(st.sampled_from([1e-3, 0.1, 1.0, 30.0, 500.0]))
    E = draw(hnp.arrays(np.float32, (V, d), elements=st.floats(-1, 1, width=32)))
    E = (centre + spread * E).astype(np.float32)
    constant = draw(st.lists(st.integers(0, V - 1), max_size=3))
    E[constant] = E[constant, :1]
    return E


@settings(max_examples=150, deadline=None)
@given(tables(), st.sampled_from([8, 4, 2]))
def test_quantize_rows_equals_fbgemm(E, bits):
    before = E.copy()
    assert_same_quantization(E, bits)
    np.testing.assert_array_equal(E, before)  # the input is not modified


@pytest.mark.parametrize("bits", [8, 4, 2])
def test_quantize_rows_equals_fbgemm_on_the_hidden_checks_corner_cases(bits):
    """The exact ties (FBGEMM's lrintf rounds them to even), constant rows, rows far from zero."""
    for E in [
        ch09.tie_table(bits),
        # rows that are not constant but whose float16 scale underflows to 0 (or -0): scale 1
        *([ch09.underflow_table(bits, 3)] if bits < 8 else []),
        ch09.robust_table(20, 8, bits, 1, ch09._far),
        np.zeros((3, 8), np.float32),
        np.full((2, 8), 3.0, np.float32),
        # constant rows float16 cannot hold: a tiny scale (negative when the offset rounds up)
        np.array(ch09.INEXACT_CONSTANTS, np.float32)[:, None].repeat(8, axis=1),
        ch09._inexact_constant_rows(bits, 2).repeat(2, axis=1)[:, :8],
        np.array([[0.0, 0.5, 1.5, 2.5, 15.0, 7.0, 3.5, 14.5]], np.float32),
    ]:
        assert_same_quantization(E, bits)


def test_torch_quantized_embedding_bag_packs_the_same_bytes():
    """PyTorch's own row-wise packing (the page uses it) is FBGEMM's format."""
    E = torch.randn(30, 16, generator=torch.Generator().manual_seed(0))
    q = torch.ops.quantized
    assert torch.equal(
        q.embedding_bag_byte_prepack(E), torch.ops.fbgemm.FloatToFused8BitRowwiseQuantized(E)
    )
    for bits, pack in [(4, q.embedding_bag_4bit_prepack), (2, q.embedding_bag_2bit_prepack)]:
        ref = torch.ops.fbgemm.FloatToFusedNBitRowwiseQuantizedSBHalf(E, bits)
        assert torch.equal(pack(E), ref)


@settings(max_examples=100, deadline=None)
@given(tables(), st.sampled_from([8, 4, 2]))
def test_dequantize_rows_equals_fbgemm(E, bits):
    """Equal up to the last bit of float32: FBGEMM's vectorised kernel may fuse the multiply and
    the add (one rounding instead of two)."""
    got = REF.dequantize_rows(*REF.quantize_rows(E, bits))
    assert got.dtype == np.float32
    ulp = np.spacing(np.float32(max(1.0, float(np.abs(E).max()))))
    np.testing.assert_allclose(got, fbgemm_dequantize(E, bits), rtol=0, atol=2 * ulp)


def test_quantize_rows_refuses_other_bit_widths_and_accepts_float64():
    E = np.random.default_rng(0).standard_normal((4, 8))
    for bits in (1, 3, 16):
        with pytest.raises(ValueError):
            REF.quantize_rows(E, bits)
    codes, scale, offset = REF.quantize_rows(E, 8)
    assert scale.dtype == np.float32
    np.testing.assert_array_equal(codes, REF.quantize_rows(E.astype(np.float32), 8)[0])


# --------------------------------------------------------------------------------------------
# The sharded lookup and backward against F.embedding and autograd on the whole table
# --------------------------------------------------------------------------------------------
@st.composite
def sharded(draw):
    sizes = draw(st.lists(st.integers(0, 6), min_size=1, max_size=5).filter(lambda s: sum(s) > 0))
    V, d = sum(sizes), draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    E = draw(hnp.arrays(dtype, (V, d), elements=st.floats(-100, 100, width=32)))
    counts = draw(st.lists(st.integers(0, 8), min_size=len(sizes), max_size=len(sizes)))
    batches = [draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, V - 1))) for n in counts]
    grads = [draw(hnp.arrays(dtype, (n, d), elements=st.floats(-10, 10, width=32))) for n in counts]
    return sizes, E, batches, grads


def _shards(E, sizes):
    starts = np.concatenate([[0], np.cumsum(sizes)])
    return [E[a:b] for a, b in zip(starts[:-1], starts[1:], strict=True)]


@settings(max_examples=100, deadline=None)
@given(sharded())
def test_route_sends_each_owner_its_rows_in_batch_order(case):
    """Gathering send's rows from each owner's shard, block by block, then undoing the grouping
    gives F.embedding on the whole table: the routing is the exchange."""
    sizes, E, batches, _ = case
    shards = _shards(E, sizes)
    for ids in batches:
        send, counts = REF.route(np.array(sizes), ids)
        assert counts.tolist() == [
            int(((ids >= a) & (ids < a + n)).sum())
            for a, n in zip(np.cumsum(sizes) - sizes, sizes, strict=True)
        ]
        blocks = np.split(send, np.cumsum(counts)[:-1])
        rows = np.concatenate([s[b] for s, b in zip(shards, blocks, strict=True)])
        owner = np.repeat(np.arange(len(sizes)), counts)
        order = np.argsort(np.searchsorted(np.cumsum(sizes), ids, side="right"), kind="stable")
        assert np.array_equal(np.sort(owner), owner)  # grouped by owner
        back = np.empty_like(rows)
        back[order] = rows
        want = F.embedding(torch.from_numpy(ids), torch.from_numpy(E)).numpy()
        np.testing.assert_array_equal(back, want)


def _owner(sizes, ids):
    """The shard of each id (start_s <= x < start_s + n_s), computed here, not by the reference."""
    ends = np.cumsum(sizes)
    return np.array([int(np.flatnonzero(x < ends)[0]) for x in ids], dtype=np.int64)


@settings(max_examples=150, deadline=None)
@given(sharded())
def test_sharded_lookup_of_routes_equals_f_embedding_on_the_whole_table(case):
    """route, then sharded_lookup on route's output: each rank's rows in its batch's order."""
    sizes, E, batches, _ = case
    for ids in batches:
        send, counts = REF.route(np.array(sizes), ids)
        got = REF.sharded_lookup(_shards(E, sizes), send, counts, _owner(sizes, ids))
        want = F.embedding(torch.from_numpy(ids), torch.from_numpy(E)).numpy()
        assert got.dtype == E.dtype
        np.testing.assert_array_equal(got, want)


@settings(max_examples=150, deadline=None)
@given(sharded())
def test_sharded_backward_of_routes_equals_autograd_on_the_whole_table(case):
    sizes, E, batches, grads = case
    table = torch.from_numpy(E.copy()).requires_grad_(True)
    ids, G = torch.from_numpy(np.concatenate(batches)), torch.from_numpy(np.concatenate(grads))
    F.embedding(ids, table).backward(G)
    routes = [REF.route(np.array(sizes), b) for b in batches]
    got = REF.sharded_backward(
        np.array(sizes),
        [r[0] for r in routes],
        [r[1] for r in routes],
        [_owner(sizes, b) for b in batches],
        grads,
    )
    assert [g.shape[0] for g in got] == sizes and all(g.dtype == E.dtype for g in got)
    tol = 1e-5 if E.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.concatenate(got), table.grad.numpy(), rtol=tol, atol=tol * 10)


def test_gloo_row_sharded_run_equals_one_process_exactly():
    """The chapter's two-process run: rows and gradients equal F.embedding and autograd bit for
    bit, and each rank's logged bytes are what its splits say."""
    from coursekit import sharding

    g = torch.Generator().manual_seed(0)
    V, d, N = 50, 3, 40
    E = torch.randn(V, d, generator=g, dtype=torch.float64)
    batches = [torch.randint(0, V, (N,), generator=g) for _ in range(2)]
    grads = [torch.randn(N, d, generator=g, dtype=torch.float64) for _ in range(2)]
    ranks = sharding.run(E, batches, grads, repeats=1, timeout_s=60)
    table = E.clone().requires_grad_(True)
    H = F.embedding(torch.cat(batches), table)
    H.backward(torch.cat(grads))
    f64 = [r["torch.float64"] for r in ranks]
    assert torch.equal(torch.cat([r["H"] for r in f64]), H.detach())
    assert torch.equal(torch.cat([r["dE"] for r in f64]), table.grad)
    assert [r["rows"] for r in ranks] == [[25, 25]] * 2
    for rank, info in enumerate(f64):
        log = {e["what"]: e["bytes_sent"] for e in info["log"]}
        assert log["ids"] == 8 * info["send"][1 - rank]
        assert log["rows"] == 8 * d * info["recv"][1 - rank]
        assert log["gradients"] == 8 * d * info["send"][1 - rank]


class _InMemory(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """A module that exists only in memory, as a page notebook's setup cell holds coursekit's."""

    def __init__(self, name, source):
        self.name, self.source = name, source

    def find_spec(self, fullname, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname == self.name else None

    def get_source(self, fullname):
        return self.source

    def exec_module(self, module):
        module.__file__ = f"<embedded>/{self.name}.py"  # no such file on disk
        exec(compile(self.source, module.__file__, "exec"), module.__dict__)  # noqa: S102


def test_gloo_run_works_when_the_worker_module_exists_only_in_memory():
    """The page's notebook holds coursekit.sharding in memory: the spawned ranks, which import
    the worker by its module's name, get a copy written to disk (without it they fail with
    ModuleNotFoundError), and sys.path is as it was afterwards."""
    from coursekit import sharding

    name = "course_sharding_in_memory"
    finder = _InMemory(name, Path(sharding.__file__).read_text())
    sys.meta_path.insert(0, finder)
    try:
        module = importlib.import_module(name)
        assert not Path(module.__file__).exists()
        before = list(sys.path)
        E = torch.arange(12.0, dtype=torch.float64).reshape(6, 2)
        ranks = module.run(
            E,
            [torch.tensor([5, 0]), torch.tensor([3])],
            [torch.ones(2, 2), torch.ones(1, 2)],
            repeats=1,
            timeout_s=60,
        )
        assert sys.path == before
        H = torch.cat([r["torch.float64"]["H"] for r in ranks])
        assert torch.equal(H, E[[5, 0, 3]])
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop(name, None)


@pytest.mark.parametrize("bits", [8, 4, 2])
def test_fused_row_bytes_is_the_width_of_fbgemms_fused_rows(bits):
    """The chapter's byte arithmetic (coursekit.bench_ch09.fused_row_bytes: codes packed 8 // bits
    to a byte, then the scale and offset, 4 bytes each at 8 bits, 2 at 4 and 2) is FBGEMM's."""
    from coursekit.bench_ch09 import fused_row_bytes

    # FBGEMM's N-bit rows must hold a whole number of float16s: d a multiple of 16 / bits there
    for d in (1, 3, 5, 8, 64) if bits == 8 else (8, 16, 24, 64):
        E = torch.randn(3, d)
        if bits == 8:
            fused = torch.ops.fbgemm.FloatToFused8BitRowwiseQuantized(E)
        else:
            fused = torch.ops.fbgemm.FloatToFusedNBitRowwiseQuantizedSBHalf(E, bits)
        assert fused.shape[1] == fused_row_bytes(d, bits), (d, bits)


def test_fused_row_bytes_refuses_bit_widths_without_a_format():
    from coursekit.bench_ch09 import fused_row_bytes

    for bits in (3, 1, 16):
        with pytest.raises(ValueError, match="8, 4 or 2"):
            fused_row_bytes(8, bits)


def test_a_lookup_index_error_on_a_bad_send_points_at_route():
    """The round trip feeds the student's route to their sharded_lookup: an IndexError there on a
    send naming a row outside its shard says route is at fault."""
    from autograder.checks.public import ch09 as public

    shards = [np.zeros((3, 2)), np.ones((2, 2))]
    send, counts, owner = np.array([0, 4]), np.array([1, 1]), np.array([0, 1])  # 4 is a global id
    with pytest.raises(AssertionError) as err:
        public.expect(
            REF.sharded_lookup,
            (shards, send, counts, owner),
            np.zeros((2, 2)),
            check="shape",
            label="a round trip",
        )
    text = str(err.value)
    assert "shard 1 (2 rows) was sent row 4" in text and "fix route first" in text
    assert "a local row it does not have" in text


# --------------------------------------------------------------------------------------------
# Part C: lazy decay + flush equals torch.optim.SGD(weight_decay=lam) on the dense gradient
# --------------------------------------------------------------------------------------------
@st.composite
def decay_runs(draw):
    """A table, lr and lam, and T batches of ids (repeats likely, some rows never looked up,
    some batches empty) with their gradient rows."""
    V = draw(st.integers(1, 12))
    d = draw(st.integers(1, 4))
    T = draw(st.integers(1, 12))
    lr = draw(st.sampled_from([0.5, 0.1, 0.03]))
    lam = draw(st.sampled_from([0.0, 0.1, 0.5, 1.5]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    hot = max(1, V // 2)  # the ids come from the first half of the table: the rest is never seen
    batches = []
    for _ in range(T):
        n = draw(st.integers(0, 6))
        ids = rng.integers(0, hot, size=n)
        batches.append((ids, rng.standard_normal((n, d))))
    return rng.standard_normal((V, d)), lr, lam, batches


@settings(max_examples=150, deadline=None)
@given(decay_runs())
def test_lazy_decay_and_flush_equal_torch_sgd_with_weight_decay(run):
    """For plain SGD the coupled L2 step E - lr (G + lam E) and the decoupled (1 - lr lam) E -
    lr G are the same, so torch's SGD(weight_decay=lam) on the dense gradient is the dense rule;
    the lazy steps, then the flush at T, give it to float64 rounding."""
    E0, lr, lam, batches = run
    V, d = E0.shape
    E, last = E0.copy(), np.zeros(V, dtype=np.int64)
    param = torch.nn.Parameter(torch.from_numpy(E0.copy()))
    opt = torch.optim.SGD([param], lr=lr, weight_decay=lam)
    for t, (ids, g) in enumerate(batches, start=1):
        assert REF.lazy_decay_step_(E, last, ids, g, lr, lam, t) is None
        touched = np.zeros(V, dtype=bool)
        touched[ids] = True
        assert (last[touched] == t).all()  # the rows ids touches are up to date, the others wait
        G = torch.zeros(V, d, dtype=torch.float64)
        G.index_add_(0, torch.from_numpy(ids), torch.from_numpy(g))
        param.grad = G
        opt.step()
    T = len(batches)
    assert REF.flush_decay_(E, last, T, lr, lam) is None
    assert (last == T).all()
    np.testing.assert_allclose(E, param.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_lazy_decay_step_touches_only_the_rows_in_ids():
    """A step leaves every other row of E and of last as it was, bit for bit."""
    rng = np.random.default_rng(0)
    E, last = rng.standard_normal((10, 3)), np.array([0, 3, 1, 0, 2, 5, 0, 4, 1, 0])
    E_before, last_before = E.copy(), last.copy()
    ids = np.array([5, 1, 5, 7])
    REF.lazy_decay_step_(E, last, ids, rng.standard_normal((4, 3)), 0.1, 0.5, 6)
    other = np.setdiff1d(np.arange(10), ids)
    assert np.array_equal(E[other], E_before[other]) and np.array_equal(
        last[other], last_before[other]
    )
    assert (last[[1, 5, 7]] == 6).all()
