"""The trust boundary between the grader and a kernel, without a kernel: milliseconds each.

The grader writes a check's cases into a file, the kernel runs the harness (the same source
``make grade`` ships, executed here in-process on a student function) and writes outcomes back,
and the grader reads them with :func:`read_outcomes`, which must refuse anything a hostile kernel
could plant: compressed members (zip bombs), object arrays (pickles), oversized arrays, symbolic
links, malformed JSON.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile

import numpy as np
import pytest

from autograder.checks import harness
from autograder.checks.framework import Case
from autograder.checks.judges import Outcome, common_problems, outcome_of
from autograder.grade import exchange
from autograder.grade.sandbox import OutputCap, _to_output

A8 = "08_capstone"


def _kernel_ns():
    ns = {"__name__": "__course_grader__"}
    exec(compile(exchange.harness_source(), "<grader>", "exec"), ns)  # noqa: S102 - our harness
    return ns


def _exchange(tmp_path, fn, cases):
    """Run one exchange as make grade does, the kernel side in this process."""
    in_path, out_json, out_npz = exchange.new_paths(tmp_path)
    exchange.write_new(in_path, exchange.encode_cases(cases))
    _kernel_ns()["_course_run"]({"f": fn}, "f", str(in_path), str(out_json), str(out_npz))
    return out_json, out_npz


CASES = [
    Case("a table and ids", (np.arange(6.0).reshape(3, 2), np.array([2, 0, 2]))),
    Case("a float32 table", (np.ones((2, 3), np.float32), np.array([1]))),
]


def test_cases_round_trip_through_the_file(tmp_path):
    out_json, out_npz = _exchange(tmp_path, lambda E, ids: E[ids], CASES)
    got = exchange.read_outcomes(CASES, out_json, out_npz)
    assert [o.value.tolist() for o in got] == [
        [[4.0, 5.0], [0.0, 1.0], [4.0, 5.0]],
        [[1.0, 1.0, 1.0]],
    ]
    assert got[1].value.dtype == np.float32 and not got[0].modified


def test_encoding_keeps_python_types_generators_and_nested_containers(tmp_path):
    rng = np.random.default_rng(5)
    case = Case("mixed", ((1, 2.5, None), {"k": [np.int32(3)]}, rng, True))
    seen = {}

    def f(t, d, g, b):
        seen.update(t=t, d=d, draw=g.standard_normal(), b=b)
        return np.zeros(1)

    exchange.read_outcomes([case], *_exchange(tmp_path, f, [case]))
    assert seen["t"] == (1, 2.5, None) and seen["b"] is True
    assert seen["d"] == {"k": [3]} and isinstance(seen["d"]["k"][0], np.int32)
    assert seen["draw"] == np.random.default_rng(5).standard_normal()


def test_a_companion_function_is_called_in_the_kernel_and_its_floats_come_back(tmp_path):
    """best_dim's cases also ask for the student's heldout_error curve (Outcome.companion)."""
    M = np.arange(6.0).reshape(2, 3)
    case = Case("with a companion", (M, 2))
    case.meta["companion"] = ("g", [(M, d) for d in range(3)])

    def g(M, d):
        if d == 2:
            raise ValueError("no")
        return M.sum() * d

    in_path, out_json, out_npz = exchange.new_paths(tmp_path)
    exchange.write_new(in_path, exchange.encode_cases([case]))
    user_ns = {"f": lambda M, k: k, "g": g}
    _kernel_ns()["_course_run"](user_ns, "f", str(in_path), str(out_json), str(out_npz))
    (got,) = exchange.read_outcomes([case], out_json, out_npz)
    assert got.companion == [0.0, 15.0, None] and got.value == 2
    # without it in the namespace: None per call; a case without a companion carries None
    exchange.write_new(in_path.with_suffix(".2.npz"), exchange.encode_cases([case, CASES[0]]))
    _kernel_ns()["_course_run"](
        {"f": lambda *a: 1}, "f", str(in_path.with_suffix(".2.npz")), str(out_json), str(out_npz)
    )
    got = exchange.read_outcomes([case, CASES[0]], out_json, out_npz)
    assert got[0].companion == [None, None, None] and got[1].companion is None


def test_a_whole_companion_brings_back_every_element_of_the_return(tmp_path):
    """The tied cases of chapter 5 ask for the student's untied return, whole."""
    M = np.arange(6.0).reshape(2, 3).astype(np.float32)
    case = Case("with a whole companion", (M, 2))
    case.meta["companion"] = ("g", [(M, 1), (M, 0)], "whole")

    def g(M, k):
        if k == 0:
            raise ValueError("no")
        return float(M.sum()), M * k

    in_path, out_json, out_npz = exchange.new_paths(tmp_path)
    exchange.write_new(in_path, exchange.encode_cases([case]))
    user_ns = {"f": lambda M, k: k, "g": g}
    _kernel_ns()["_course_run"](user_ns, "f", str(in_path), str(out_json), str(out_npz))
    (got,) = exchange.read_outcomes([case], out_json, out_npz)
    assert got.companion[1] is None
    assert got.companion[0] == [
        ["float", "float64", [], [15.0]],
        ["numpy.ndarray", "float32", [2, 3], M.reshape(-1).tolist()],
    ]
    result = json.loads(out_json.read_text())
    result["outcomes"][0]["companion"] = [[["float", "float64", [2], [1.0]]], None]
    out_json.write_text(json.dumps(result))
    with pytest.raises(exchange.HarnessError, match="malformed"):
        exchange.read_outcomes([case], out_json, out_npz)


def test_an_in_place_companion_brings_back_the_arguments_it_changes(tmp_path):
    """The capstone's train_step_ cases ask for the student's own sparse_adam_step_, which
    returns None: the companion brings back the arguments it changed (an output ("args", ...))."""
    E, m = np.zeros((2, 3)), np.ones((2, 3), dtype=np.float32)
    case = Case("with an in-place companion", (E, 2))
    case.meta["companion"] = ("step", [(E, m, 2.0), (E, m, 0.0)], ("args", (0, 1)))

    def step(E, m, k):
        if k == 0:
            raise ValueError("no")
        E += k
        m *= k

    in_path, out_json, out_npz = exchange.new_paths(tmp_path)
    exchange.write_new(in_path, exchange.encode_cases([case]))
    user_ns = {"f": lambda E, k: k, "step": step}
    _kernel_ns()["_course_run"](user_ns, "f", str(in_path), str(out_json), str(out_npz))
    (got,) = exchange.read_outcomes([case], out_json, out_npz)
    assert got.companion[1] is None
    assert got.companion[0] == [
        ["numpy.ndarray", "float64", [2, 3], [2.0] * 6],
        ["numpy.ndarray", "float32", [2, 3], [2.0] * 6],
    ]
    # in this process too (the visible tests), and the case's own arrays are left alone
    assert outcome_of(lambda E, k: k, case, {"step": step}).companion == got.companion
    assert not E.any() and (m == 1).all()


def test_a_planted_companion_that_is_not_numbers_is_refused(tmp_path):
    M = np.ones((2, 2))
    case = Case("with a companion", (M, 1))
    case.meta["companion"] = ("g", [(M, 0), (M, 1)])
    out_json, out_npz = _exchange(tmp_path, lambda M, k: k, [case])
    result = json.loads(out_json.read_text())
    result["outcomes"][0]["companion"] = ["1.0", 2.0]
    out_json.write_text(json.dumps(result))
    with pytest.raises(exchange.HarnessError, match="malformed"):
        exchange.read_outcomes([case], out_json, out_npz)


def test_an_argument_changed_by_the_student_is_seen_from_outside(tmp_path):
    def vandal(E, ids):
        E[0] = np.nan
        return E[ids]

    got = exchange.read_outcomes(CASES, *_exchange(tmp_path, vandal, CASES))
    assert got[0].modified == [0] and got[1].modified == [0]


def test_the_modification_rule_treats_nan_as_equal_to_nan():
    a = np.array([np.nan, 1.0])
    assert harness.same_array(a, a.copy())
    assert not harness.same_array(a, np.array([np.nan, 2.0]))
    assert not harness.same_array(a, a.astype(np.float32))
    assert not harness.same_array(a, [np.nan, 1.0])  # not an ndarray any more


def _npz_bytes(arrays, compression=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for key, arr in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, arr, allow_pickle=True)
            zf.writestr(f"{key}.npy", member.getvalue())
    return buf.getvalue()


def _planted(tmp_path, arrays, compression=zipfile.ZIP_STORED, result=None):
    out_json, out_npz = tmp_path / "out.json", tmp_path / "out.npz"
    keys = list(arrays)
    doc = result or {
        "status": "ok",
        "outcomes": [{"types": ["x"]}],
        "values": [keys],
        "after": [[]],
    }
    out_json.write_text(json.dumps(doc))
    out_npz.write_bytes(_npz_bytes(arrays, compression))
    return out_json, out_npz


ONE = [Case("one", (np.zeros(2),))]


def test_a_plain_answer_is_read(tmp_path):
    got = exchange.read_outcomes(ONE, *_planted(tmp_path, {"v0_0": np.arange(3.0)}))
    assert got[0].value.tolist() == [0.0, 1.0, 2.0]


def test_a_compressed_member_is_refused(tmp_path):
    paths = _planted(tmp_path, {"v0_0": np.zeros(1000)}, zipfile.ZIP_DEFLATED)
    with pytest.raises(exchange.HarnessError, match="packed in an unexpected way"):
        exchange.read_outcomes(ONE, *paths)


def test_an_object_array_is_refused(tmp_path):
    paths = _planted(tmp_path, {"v0_0": np.array([{"a": 1}], dtype=object)})
    with pytest.raises(exchange.HarnessError, match="could not be read|not numbers"):
        exchange.read_outcomes(ONE, *paths)


def test_an_oversized_array_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(exchange, "MAX_ELEMENTS", 10)
    paths = _planted(tmp_path, {"v0_0": np.zeros(11)})
    with pytest.raises(exchange.HarnessError, match="too large"):
        exchange.read_outcomes(ONE, *paths)


def test_a_symlink_planted_as_the_results_is_refused(tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"status": "ok", "outcomes": [], "values": [], "after": []}))
    link = tmp_path / "out.json"
    os.symlink(secret, link)
    with pytest.raises(exchange.HarnessError, match="could not be read"):
        exchange.read_outcomes(ONE, link, tmp_path / "out.npz")


def test_a_writer_that_never_answers_is_reported(tmp_path):
    with pytest.raises(exchange.HarnessError, match="no results came back"):
        exchange.read_outcomes(ONE, tmp_path / "none.json", tmp_path / "none.npz")


@pytest.mark.parametrize(
    "doc",
    [
        ["not", "a", "dict"],
        {"status": "ok", "outcomes": "x", "values": [], "after": []},
        {"status": "ok", "outcomes": [{}, {}], "values": [[]], "after": [[]]},
        {"status": "ok", "outcomes": [{"types": [1]}], "values": [[]], "after": [[]]},
        {"status": "ok", "outcomes": [{}], "values": [["nope"]], "after": [[]]},
    ],
)
def test_malformed_results_are_refused(tmp_path, doc):
    with pytest.raises(exchange.HarnessError, match="malformed"):
        exchange.read_outcomes(ONE, *_planted(tmp_path, {"v0_0": np.zeros(1)}, result=doc))


def test_more_outcomes_than_cases_are_refused(tmp_path):
    doc = {"status": "ok", "outcomes": [{}, {}], "values": [[], []], "after": [[], []]}
    with pytest.raises(exchange.HarnessError, match="malformed"):
        exchange.read_outcomes(ONE, *_planted(tmp_path, {"v0_0": np.zeros(1)}, result=doc))


def test_the_output_cap_counts_characters_per_output_and_per_cell():
    cap = OutputCap(per_output=10, per_cell=25)
    assert cap.text("x" * 5) == "x" * 5
    assert cap.text("y" * 50) == "y" * 10 and cap.dropped == 40
    assert cap.text("z" * 50) == "z" * 10 and cap.left == 0
    assert cap.text("w") == "" and cap.dropped == 81


def test_a_huge_image_is_dropped_whole_and_its_text_kept():
    cap = OutputCap(per_output=100)
    out = _to_output(
        "display_data", {"data": {"image/png": "A" * 1000, "text/plain": "<Figure>"}}, cap
    )
    assert out["data"] == {"text/plain": "<Figure>"} and cap.dropped == 1000


def _two_in_place(E, m, ids, g):
    """Changes E and m (both graded) in place; returns None."""
    m[ids] += g
    E[ids] -= m[ids]


SEVERAL = [
    Case(
        "two graded arguments",
        (np.zeros((3, 2)), np.zeros((3, 2)), np.array([2, 0]), np.ones((2, 2))),
        output=("args", (0, 1)),
    )
]


def test_several_graded_arguments_come_back_in_order_and_are_not_modified(tmp_path):
    got = exchange.read_outcomes(SEVERAL, *_exchange(tmp_path, _two_in_place, SEVERAL))
    inside = harness.call(_two_in_place, SEVERAL[0].args, {}, SEVERAL[0].output)
    assert [v.tolist() for v in got[0].values] == [v.tolist() for v in inside["values"]]
    assert got[0].values[0].tolist() == [[-1.0, -1.0], [0.0, 0.0], [-1.0, -1.0]]
    assert got[0].values[1].tolist() == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    assert got[0].modified == inside["modified"] == [] and got[0].returned_none


def test_an_ungraded_argument_changed_next_to_graded_ones_is_still_modified(tmp_path):
    def also_scales_g(E, m, ids, g):
        g *= 2.0
        _two_in_place(E, m, ids, g)

    got = exchange.read_outcomes(SEVERAL, *_exchange(tmp_path, also_scales_g, SEVERAL))
    inside = harness.call(also_scales_g, SEVERAL[0].args, {}, SEVERAL[0].output)
    assert got[0].modified == inside["modified"] == [3]


def test_the_graded_positions_of_each_output_kind():
    assert harness.graded_args("return") == ()
    assert harness.graded_args(("arg", 2)) == (2,)
    assert harness.graded_args(("args", [0, 1, 2])) == (0, 1, 2)
    with pytest.raises(ValueError):
        harness.graded_args(("rows", 0))


# ------------------------------------------------------------------------------------------
# Arrays nested in lists, tuples and dicts; warnings; where an exception came from
# ------------------------------------------------------------------------------------------
NESTED = [
    Case(
        "shards in a list, a dict of arrays",
        ([np.arange(4.0).reshape(2, 2), np.ones((1, 2))], {"w": (np.zeros(2), np.arange(3))}, 3),
    )
]


@pytest.mark.parametrize(
    "how,modified",
    [
        ("nothing", []),
        ("a shard in place", [0]),
        ("a shard replaced in the list", [0]),
        ("a shard appended", [0]),
        ("an array deep in the dict", [1]),
        ("an array added to the dict", [1]),
        ("a copy changed (allowed)", []),
    ],
)
def test_an_array_nested_in_a_list_or_dict_changed_by_the_call_is_seen(tmp_path, how, modified):
    def f(shards, d, k):
        if how == "a shard in place":
            shards[1][0, 0] = 5.0
        elif how == "a shard replaced in the list":
            shards[0] = shards[0] * 2
        elif how == "a shard appended":
            shards.append(np.zeros((0, 2)))
        elif how == "an array deep in the dict":
            d["w"][1][:] = 0
        elif how == "an array added to the dict":
            d["v"] = np.zeros(1)
        elif how == "a copy changed (allowed)":
            s = [t.copy() for t in shards]
            s[0][:] = -1
        return np.zeros(k)

    got = exchange.read_outcomes(NESTED, *_exchange(tmp_path, f, NESTED))
    inside = harness.call(f, NESTED[0].args, {}, "return")
    assert got[0].modified == inside["modified"] == modified


def test_a_planted_path_that_is_not_indices_or_keys_is_refused(tmp_path):
    out_json, out_npz = _exchange(tmp_path, lambda s, d, k: np.zeros(k), NESTED)
    result = json.loads(out_json.read_text())
    assert [e[1] for e in result["after"][0]] == [[0], [1], ["w", 0], ["w", 1]]
    for bad in ([0, [{"x": 1}], result["after"][0][0][2]], [0, [], "no-such-key"], [0, "k"]):
        doc = {**result, "after": [[bad]]}
        out_json.write_text(json.dumps(doc))
        with pytest.raises(exchange.HarnessError, match="malformed"):
            exchange.read_outcomes(NESTED, out_json, out_npz)


def _casts_nan(E):
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (E - E.min()) / (E.max() - E.min())  # 0 / 0 for a constant E
    return t.astype(np.uint8)


def _repairs_nan(E):
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (E - E.min()) / (E.max() - E.min())
    return np.nan_to_num(t).astype(np.uint8)


def test_the_runtime_warnings_of_a_call_come_back_as_text(tmp_path):
    case = [Case("a constant row", (np.full(3, 2.0),))]
    (cast,) = exchange.read_outcomes(case, *_exchange(tmp_path, _casts_nan, case))
    inside = harness.call(_casts_nan, case[0].args, {})
    assert (
        cast.warnings == inside["warnings"] == ["RuntimeWarning: invalid value encountered in cast"]
    )
    (repaired,) = exchange.read_outcomes(case, *_exchange(tmp_path, _repairs_nan, case))
    assert repaired.warnings == [] and repaired.value.tolist() == cast.value.tolist()

    def warns(E):
        np.float64(1.0) / np.float64(0.0)  # a divide warning, twice: listed once
        np.float64(2.0) / np.float64(0.0)
        import warnings

        warnings.warn("not a RuntimeWarning", UserWarning, stacklevel=2)
        return E

    assert harness.call(warns, case[0].args, {})["warnings"] == [
        "RuntimeWarning: divide by zero encountered in scalar divide"
    ]


STUDENT = """
import numpy as np


def _helper(x):
    return [1, 2][x]


def outer(x):
    return _helper(x) + 1


def reshaper(x):
    return np.arange(x).reshape(2, 2)
"""


def test_an_exception_names_the_function_it_came_from(tmp_path):
    """The innermost frame of the notebook's code (module __main__), not numpy's or the grader's."""
    ns = {"__name__": "__main__"}
    exec(compile(STUDENT, "<cell>", "exec"), ns)  # noqa: S102 - our own fixture
    case = [Case("an index too large", (5,))]
    (got,) = exchange.read_outcomes(case, *_exchange(tmp_path, ns["outer"], case))
    assert got.error_type == "IndexError" and got.raised_in == "_helper"
    assert harness.call(ns["outer"], (5,), {})["raised_in"] == "_helper"
    assert harness.call(ns["_helper"], (5,), {})["raised_in"] == "_helper"
    assert harness.call(ns["reshaper"], (5,), {})["raised_in"] == "reshaper"  # not numpy's
    assert harness.call(lambda x: [][x], (5,), {})["raised_in"] is None  # this module's lambda
    message = common_problems(case[0], got, Outcome(), "outer")
    assert message.startswith("outer raised IndexError (raised in _helper, which outer called)")
    assert "(raised in" not in common_problems(
        case[0], dataclasses.replace(got, raised_in="outer"), Outcome(), "outer"
    )


@pytest.mark.parametrize(
    "name,passes",
    [
        ("only m bias-corrected (lr / (1 - b1**t)) in sparse_adam_step_", True),
        ("no bias correction written inline in train_step_ (a correct Part A unused)", False),
    ],
)
def test_the_capstone_step_cells_judge_a_part_a_bug_through_the_kernel_as_in_process(
    tmp_path, name, passes
):
    """make grade's kernel runs the student's own sparse_adam_step_ for train_step_'s arrays
    cases as the in-process checks do: a Part A bug passes them, the same bug inline does not."""
    from autograder import checks, samples

    ns: dict = {}
    sources = {**samples.reference_sources(A8), **samples.module(A8).MISTAKES[name].sources}
    for src in [*samples.given_sources(A8).values(), *sources.values()]:
        exec(compile(src, "<sample>", "exec"), ns)  # noqa: S102 - our own fixtures
    cells = ("test_train_step_update", "test_train_step_repeated", "test_train_step_padding")
    for gid in cells:
        check = checks.for_assignment(A8)[gid]
        cases = check.cases()
        assert all("companion" in c.meta for c in cases)
        in_path, out_json, out_npz = exchange.new_paths(tmp_path / gid)
        (tmp_path / gid).mkdir()
        exchange.write_new(in_path, exchange.encode_cases(cases))
        _kernel_ns()["_course_run"](ns, check.function, str(in_path), str(out_json), str(out_npz))
        kernel = check.verdict(exchange.read_outcomes(cases, out_json, out_npz), cases)
        here = check.run(ns[check.function])
        assert kernel.passed == here.passed == passes, (gid, kernel.message)


def test_the_grading_kernels_first_line_refuses_torch_jax_and_tensorflow_with_the_rule():
    """harness.blocker_line, run first in a fresh interpreter of the course's venv (which has
    torch): each framework and its submodules raise ModuleNotFoundError naming the rule, numpy
    and matplotlib still import, and the line leaves no name behind."""
    import subprocess
    import sys

    probe = (
        "import importlib, json\n"
        "before = set(globals())\n" + harness.blocker_line() + "said = {}\n"
        "for m in ('torch', 'torch.nn.functional', 'jax.numpy', 'tensorflow'):\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "        said[m] = 'imported'\n"
        "    except ModuleNotFoundError as exc:\n"
        "        said[m] = str(exc)\n"
        "import numpy, matplotlib\n"
        "print(json.dumps([said, sorted(set(globals()) - before - {'said', 'm', 'exc'})]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    said, left = json.loads(proc.stdout)
    for module, message in said.items():
        root = module.split(".")[0]
        assert message == harness.not_available(root), (module, message)
    assert "numpy and the standard library" in harness.not_available("torch")
    assert left == ["before", "matplotlib", "numpy"], left  # block_frameworks is gone again
