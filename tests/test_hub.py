"""A class on a real JupyterHub, end to end: `make hub`, then nbgrader's whole loop through it.

`make hub` starts (as root) with an instructor and three students, real Unix users; every step a
student takes goes through the hub's proxy with that student's own login and token (the hub's
REST API to start the server, then the server's Contents API and nbgrader's handlers, the ones
JupyterLab's Assignments tab calls), never an nbgrader command run on a student's behalf:

* the instructor releases 01_one_hot_lookup in formgrader (its API);
* student 1 and student 2 fetch it into their own homes; student 1 submits the classic mistake,
  then the correct answer (the latest is the one graded); student 2 the classic mistake; both
  validate first;
* the due date passes; student 3 submits a corrupt notebook, late;
* the instructor collects in formgrader, grades with `make grade` (the sandboxed grader, as root),
  sees the grades in formgrader, generates and releases the feedback there;
* each student fetches their feedback and finds their score and, for student 2, the mistake
  named; student 3 finds the corrupt notebook and the lateness named;
* student 1 presses the website's JupyterHub launch button (the nbgitpuller link `make configure`
  writes; the student copy served from a git repository on this machine, the trial has no
  GitHub): it is cloned into their home and the notebook opens; pressed again after they edited
  it, their edit is kept;
* no student can read another's work, the exchange's inbound folder, the course's solutions/ or
  grading folder, nor import the course's code; a student's token opens no other server;
* SIGTERM to `make hub` stops everything it started and removes the users and their homes.

Each step's wall time is printed (`pytest -s`). The loop runs once for the module (one fixture);
the tests then check what it saw.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import signal
import socket
import string
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from autograder import samples
from autograder.course import COURSE_ID, ROOT
from autograder.release.configure import nbgitpuller_link
from autograder.release.student import student_repo
from autograder.samples import ch01
from tests.browser.hub_student import BrowserStudent
from tests.hubclient import Hub, HubUser

pytestmark = pytest.mark.slow

A = "01_one_hot_lookup"
NB = f"{A}/{A}.ipynb"
NB_IN_COPY = f"exercises/{NB}"  # the exercise in the student copy
HUB_DIR = Path("/tmp/course-hub-test")  # fixed: a crashed run is undone by the next one
INSTRUCTOR = "ethub-teacher"
STUDENT = "ethub-s"
S1, S2, S3 = (f"{STUDENT}{i}" for i in (1, 2, 3))
MISTAKE = ch01.MISTAKES[ch01.DEMO_MISTAKE]
SHOTS = ROOT / "_build" / "hub-screenshots"  # what student 1 saw, step by step: look at them


class Steps:
    """Each step's name, wall time and what the student (or instructor) saw."""

    def __init__(self):
        self.rows: list[tuple[str, float, str]] = []

    def __call__(self, name: str, fn, saw=lambda r: ""):
        start = time.monotonic()
        result = fn()
        self.rows.append((name, time.monotonic() - start, saw(result)))
        return result

    def table(self) -> str:
        return "\n".join(f"{t:7.2f} s  {name}  {saw}" for name, t, saw in self.rows)


def _user(settings: dict, name: str) -> HubUser:
    role = "instructor" if name == settings["instructor"] else "student"
    return HubUser(settings["url"], name, settings["passwords"][role]).login()


def _ok(answer: dict) -> dict:
    """A formgrader action's answer, which must say it succeeded (else its log is shown)."""
    assert answer.get("success"), f"formgrader: {answer}"
    return answer


def _start_all(users: list[HubUser]) -> None:
    """Everyone starts at once, as a class does (the hub spawns concurrently)."""
    threads = [threading.Thread(target=u.start) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _released(user: HubUser) -> dict:
    return {a["status"]: a for a in user.nbgrader("list", course_id=COURSE_ID)["value"]}


def _fetch(user: HubUser) -> dict:
    user.nbgrader("fetch", course_id=COURSE_ID, assignment_id=A)
    return _released(user)


def _submit(user: HubUser) -> dict:
    answer = user.nbgrader("submit", course_id=COURSE_ID, assignment_id=A)
    assert answer.get("success"), f"{user.name}: submit failed: {answer}"
    return {a["status"]: a for a in answer["value"]}


def _feedback(user: HubUser, fetch: bool = True) -> str:
    """fetch_feedback (unless fetched in the browser), then the page it put in the student's home
    (the latest submission's)."""
    data = {"course_id": COURSE_ID, "assignment_id": A}
    listed = (
        user.json("POST", "assignments/fetch_feedback", data=data)
        if fetch
        else user.json("GET", "assignments", params={"course_id": COURSE_ID})
    )
    subs = next(a for a in listed["value"] if a["status"] == "submitted")["submissions"]
    latest = max(subs, key=lambda s: s["timestamp"])
    assert latest["has_local_feedback"], f"{user.name}: no feedback fetched: {latest}"
    return user.read_text(latest["local_feedback_path"] + f"/{A}.html")


def _browser_student_one(steps: Steps, b, s1: HubUser, mistake: dict, correct: dict) -> dict:
    """Student 1 in JupyterLab's Assignments tab (chromium): every click theirs; what they typed
    saved through their own Contents API."""
    seen = {}
    steps(f"{S1}: log in (browser), JupyterLab opens", b.log_in)
    seen[f"{S1} tab"] = steps(f"{S1}: Assignments tab", b.assignments, _line_with_a)
    seen[f"{S1} fetch"] = steps(f"{S1}: Fetch", b.fetch, lambda t: t.replace("\n", " ")[:60])
    seen[f"{S1} list"] = _released(s1)
    seen[f"{S1} heading"] = steps(f"{S1}: open the notebook", lambda: b.open_notebook(A), str)
    s1.save_notebook(NB, mistake)
    seen["s1 validate mistake"] = steps(
        f"{S1}: Validate (the classic mistake)", lambda: b.validate("mistake"), _dialog_seen
    )
    seen["s1 first submit"] = steps(f"{S1}: Submit (early)", lambda: b.submit("mistake"), str)
    time.sleep(1.1)  # nbgrader's timestamps: the later submission is later by more than rounding
    s1.save_notebook(NB, correct)
    seen["s1 validate"] = steps(
        f"{S1}: Validate (the correct answer)", lambda: b.validate("correct"), _dialog_seen
    )
    seen["s1 submit"] = steps(f"{S1}: Submit again", lambda: b.submit("correct"), str)
    return seen


def _line_with_a(text: str) -> str:
    return next((ln for ln in text.splitlines() if A in ln), text[:80]).strip()


def _dialog_seen(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " | ".join(lines[1:2] + [ln for ln in lines if "float32" in ln and "expected" in ln][:1])


def _students_steps(steps: Steps, users: dict, browser, now_due) -> dict:
    """Fetch, solve, validate and submit, each student through their own server."""
    mistake, correct = samples.build(A, MISTAKE.sources), samples.build(A, {})
    s2, s3 = users[S2], users[S3]
    seen = _browser_student_one(steps, browser, users[S1], mistake, correct)
    seen[f"{S2} list"] = steps(f"{S2}: list released", lambda: _released(s2), ", ".join)
    seen[f"{S2} fetch"] = steps(f"{S2}: fetch", lambda: _fetch(s2), ", ".join)
    s2.save_notebook(NB, mistake)
    seen["s2 validate"] = steps(
        f"{S2}: save the classic mistake, validate",
        lambda: s2.nbgrader("validate", path=NB),
        _validated,
    )
    seen["s2 submit"] = steps(f"{S2}: submit", lambda: _submit(s2))
    seen["due"] = steps("instructor: the due date passes (formgrader)", now_due)
    steps(f"{S3}: fetch", lambda: _fetch(s3))
    s3.save_text(NB, '{"cells": [ this is not JSON')
    seen["s3 validate"] = steps(
        f"{S3}: save a corrupt notebook, validate",
        lambda: s3.nbgrader("validate", path=NB),
        _validated,
    )
    seen["s3 submit"] = steps(f"{S3}: submit (late)", lambda: _submit(s3))
    return seen


def _validated(answer: dict) -> str:
    if not answer.get("success"):
        return "validate: error: " + str(answer.get("value"))[-200:].replace("\n", " ")
    failed = answer["value"].get("failed", [])
    return f"validate: {len(failed)} failing test cell(s)" if failed else "validate: success"


def _grade(grading: Path) -> subprocess.CompletedProcess:
    """`make grade` as the instructor runs it (as root: each kernel gets its own uid)."""
    proc = subprocess.run(
        ["make", "-s", "grade", f"GRADING={grading}", f"ASSIGNMENT={A}", "JOBS=2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"make grade failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _loop(hub: Hub, steps: Steps, playwright) -> dict:
    settings = steps("make hub: up", hub.wait_up)
    seen = {"settings": settings}
    inst = steps("instructor: log in, token", lambda: _user(settings, INSTRUCTOR))
    users = {n: steps(f"{n}: log in, token", lambda n=n: _user(settings, n)) for n in (S1, S2, S3)}
    everyone = [inst, *users.values()]
    steps("everyone: start servers (hub API)", lambda: _start_all(everyone))
    steps("everyone: servers ready", lambda: max(u.wait_ready() for u in everyone))
    seen["release"] = steps(
        "instructor: release (formgrader)",
        lambda: _ok(inst.json("POST", f"formgrader/api/assignment/{A}/release")),
        lambda r: r.get("log", "")[-80:],
    )

    def now_due():
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        body = {"duedate_notimezone": stamp, "duedate_timezone": "+0000"}
        time.sleep(0.1)
        return inst.json("PUT", f"formgrader/api/assignment/{A}", json=body)

    browser = BrowserStudent(
        playwright, settings["url"], S1, settings["passwords"]["student"], SHOTS
    )
    seen["browser"] = browser
    seen.update(_students_steps(steps, users, browser, now_due))
    seen["collect"] = steps(
        "instructor: collect (formgrader)",
        lambda: _ok(inst.json("POST", f"formgrader/api/assignment/{A}/collect")),
        lambda r: f"{r['log'].count('ollecting')} collected",
    )
    seen["grade"] = steps("instructor: make grade", lambda: _grade(hub.grading))
    seen["formgrader"] = steps(
        "instructor: grades in formgrader",
        lambda: {s["student"]: s for s in inst.json("GET", f"formgrader/api/submissions/{A}")},
    )
    seen["generate"] = steps(
        "instructor: generate feedback (formgrader)",
        lambda: _ok(inst.json("POST", f"formgrader/api/assignment/{A}/generate_feedback")),
    )
    seen["release feedback"] = steps(
        "instructor: release feedback (formgrader)",
        lambda: _ok(inst.json("POST", f"formgrader/api/assignment/{A}/release_feedback")),
    )
    seen[f"{S1} feedback view"] = steps(
        f"{S1}: Fetch Feedback, (view feedback), open the page (browser)",
        browser.feedback,
        _score_seen,
    )
    seen[f"{S1} feedback"] = _feedback(users[S1], fetch=False)
    for name in (S2, S3):
        seen[f"{name} feedback"] = steps(
            f"{name}: fetch feedback, read it", lambda u=users[name]: _feedback(u), _score_seen
        )
    seen["button"] = _launch_button(
        steps, browser, users[S1], settings, hub.grading.parent / (hub.grading.name + "-pull")
    )
    seen["users"] = users
    seen["instructor"] = inst
    return seen


def _student_copy_remote(where: Path, owner: str) -> str:
    """The student copy (`make student-repo`) as a git repository for nbgitpuller to clone: a
    bare one on this machine, owned by the student who clones it (git refuses a local repository
    of another user: "dubious ownership")."""
    work = student_repo(where / "embeddings-student")
    git = ["git", "-c", "user.name=course", "-c", "user.email=course@localhost"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "student copy"]):
        subprocess.run([*git, *args], cwd=work, check=True, capture_output=True)
    bare = where / "remote" / "embeddings-student"  # cloned as ~/embeddings-student
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    os.chmod(where, 0o755)
    os.chmod(bare.parent, 0o755)
    subprocess.run(["chown", "-R", f"{owner}:{owner}", str(bare)], check=True)
    return f"file://{bare}"


def _launch_button(steps: Steps, browser, s1: HubUser, settings: dict, where: Path) -> dict:
    """The website's JupyterHub button, twice: the clone, then a pull that keeps an edit."""
    remote = _student_copy_remote(where, S1)
    link = nbgitpuller_link(settings["url"].rstrip("/"), remote, "main", NB_IN_COPY)
    seen = {"link": link}
    seen["heading"] = steps(
        f"{S1}: the website's JupyterHub button (nbgitpuller clones)",
        lambda: browser.git_pull(link, "launch_button"),
        str,
    )
    pulled = f"embeddings-student/{NB_IN_COPY}"
    seen["cloned"] = s1.read_text(pulled)
    edited = json.loads(seen["cloned"])
    edited["cells"][0]["source"] = "# My notes: " + "".join(edited["cells"][0]["source"])
    s1.save_notebook(pulled, edited)
    steps(
        f"{S1}: the button again, after an edit (nbgitpuller pulls)",
        lambda: browser.git_pull(link, "launch_button_again"),
    )
    seen["after edit"] = json.loads(s1.read_text(pulled))["cells"][0]["source"]
    return seen


def _score_seen(page: str) -> str:
    m = re.search(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)", re.sub(r"<[^>]+>", " ", page))
    return f"page shows {m.group(0)}" if m else "page shows no score"


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    assert os.geteuid() == 0, "the hub test makes Unix users: run it as root (as CI does)"
    grading = Path(f"/tmp/course-hub-test-grading-{os.getpid()}")
    grading.mkdir(mode=0o755)
    modes = {p: os.stat(p) for p in (ROOT, grading)}
    steps = Steps()
    hub = Hub(HUB_DIR, grading, INSTRUCTOR, STUDENT, 3)
    seen: dict = {"modes_before": modes, "grading_dir": grading, "grading": grading}
    pw = sync_playwright().start()
    try:
        try:
            seen.update(_loop(hub, steps, pw))
            seen["probes"] = _probes(seen)
        finally:
            if "browser" in seen:
                seen["browser"].close()
            pw.stop()
            seen["stop"] = steps("SIGTERM: stop everything", hub.stop)
            seen["out"] = "".join(hub.out)
            print("\n" + steps.table())
        yield seen
    finally:
        subprocess.run(["rm", "-rf", str(grading), f"{grading}-pull"], check=False)


PROBE = """
import getpass, json, os
r = {"whoami": getpass.getuser()}
def probe(name, fn):
    try:
        fn()
        r[name] = "read"
    except Exception as e:
        r[name] = type(e).__name__
probe("own notebook", lambda: open(os.path.expanduser("~/$nb")).read())
probe("another student's home", lambda: os.listdir("$other_home"))
probe("another student's notebook", lambda: open("$other_home/$nb").read())
probe("the exchange's inbound", lambda: os.listdir("$inbound"))
probe("the course's solutions", lambda: open("$root/solutions/$nb").read())
probe("the course's folder", lambda: os.listdir("$root"))
probe("the grading folder", lambda: os.listdir("$grading"))
probe("the course's code", lambda: __import__("autograder.checks"))
import resource
r["kernel MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(r))
"""


def _server_uids() -> dict[str, set[int]]:
    """user name -> uids of the processes running jupyterhub.singleuser for them."""
    found: dict[str, set[int]] = {}
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            environ = (d / "environ").read_bytes().split(b"\0")
            uid = d.stat().st_uid
        except OSError:
            continue
        if "jupyterhub.singleuser" in cmd:
            user = next((e[16:].decode() for e in environ if e.startswith(b"JUPYTERHUB_USER=")), "")
            found.setdefault(user, set()).add(uid)
    return found


def _rss_mb(uid: int) -> float:
    """Resident memory of every process of the user, in MB."""
    total = 0
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and d.stat().st_uid == uid:
                m = re.search(r"^VmRSS:\s+(\d+) kB", (d / "status").read_text(), re.M)
                total += int(m.group(1)) if m else 0
        except OSError:
            continue
    return round(total / 1024)


def _probes(seen: dict) -> dict:
    """What the users can reach, seen from their own kernels, tokens and servers."""
    users, inst, st = seen["users"], seen["instructor"], seen["settings"]
    homes = st["homes"]
    code = string.Template(PROBE).substitute(
        nb=NB,
        other_home=homes[S1],
        root=ROOT,
        grading=seen["grading_dir"],
        inbound=Path(st["state"]).parent / "exchange" / COURSE_ID / "inbound",
    )
    s2 = users[S2]
    kernel = s2.run_code(code)
    out = {
        "kernel": json.loads(kernel["stdout"].strip().splitlines()[-1])
        if not kernel["error"]
        else kernel
    }
    out["other server"] = users[S1].call("GET", "api/contents", ok=None).status_code  # own
    s1_on_s2 = users[S1]
    out["s1 token on s2"] = s1_on_s2.session.get(
        s2.url("api/contents"), headers=s1_on_s2.headers(), timeout=60, allow_redirects=False
    ).status_code
    out["contents outside home"] = s2.call("GET", "api/contents/../" + S1, ok=None).status_code
    out["student formgrader"] = s2.call("GET", "formgrader/api/status", ok=None).status_code
    out["student course list"] = s2.call("GET", "formgraders", ok=None).status_code
    out["instructor course list"] = inst.call("GET", "formgraders", ok=None).status_code
    lab = s2.call("GET", "lab").text
    out["student lab disables"] = re.findall(r"@jupyter/nbgrader:[a-z-]+", lab)
    out["pwd"] = {n: pwd.getpwnam(n) for n in (INSTRUCTOR, S1, S2, S3)}
    out["home modes"] = {n: os.stat(h).st_mode & 0o7777 for n, h in homes.items()}
    out["fetched owner"] = {n: os.stat(Path(homes[n]) / NB).st_uid for n in (S1, S2)}
    out["server uids"] = _server_uids()
    out["server MB"] = {n: _rss_mb(p.pw_uid) for n, p in out["pwd"].items()}
    print(f"\nmemory: servers {out['server MB']} MB; a kernel {out['kernel'].get('kernel MB')} MB")
    try:
        HubUser(st["url"], INSTRUCTOR, st["passwords"]["student"]).login()
        out["student password as instructor"] = "logged in"
    except AssertionError as exc:
        out["student password as instructor"] = str(exc)[:100]
    return out


def _csv(path: Path) -> dict[str, dict]:
    with path.open(newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def test_make_hub_says_where_to_log_in_and_as_whom(loop):
    out = loop["out"]
    assert f"http://127.0.0.1:{loop['settings']['url'].rsplit(':', 1)[1]}" in out
    assert INSTRUCTOR in out and all(s in out for s in (S1, S2, S3)), out
    assert loop["settings"]["passwords"]["student"] in out


def test_every_user_is_a_unix_user_whose_server_runs_as_them(loop):
    p = loop["probes"]
    assert all(mode == 0o700 for mode in p["home modes"].values()), p["home modes"]
    for name in (INSTRUCTOR, S1, S2, S3):
        assert p["server uids"].get(name) == {p["pwd"][name].pw_uid}, (name, p["server uids"])
    assert p["kernel"].get("whoami") == S2, p["kernel"]
    for name in (S1, S2):
        assert p["fetched owner"][name] == p["pwd"][name].pw_uid, "fetched into their own home"


def test_release_reaches_students_who_fetch_it(loop):
    assert "Released as" in loop["release"]["log"], loop["release"]
    assert A in loop[f"{S1} tab"] and "Fetch" in loop[f"{S1} tab"], loop[f"{S1} tab"]
    assert "released" in loop[f"{S2} list"], loop[f"{S2} list"]
    for name in (S1, S2):
        listed = loop[f"{name} list"] if name == S1 else loop[f"{name} fetch"]
        fetched = listed["fetched"]
        assert fetched["path"] == A and fetched["notebooks"][0]["path"] == NB, fetched
    assert loop[f"{S1} heading"].startswith("Exercise 1"), (
        "the fetched notebook opens in JupyterLab"
    )


def test_validate_tells_the_correct_answer_from_the_classic_mistake(loop):
    assert "Success! Your notebook passes all the tests." in loop["s1 validate"]
    assert "The following cell failed" in loop["s1 validate mistake"]
    assert MISTAKE.says in loop["s1 validate mistake"], loop["s1 validate mistake"][-1500:]
    failed = loop["s2 validate"]["value"]["failed"]
    assert failed and any(MISTAKE.says in f["error"] for f in failed), failed
    corrupt = loop["s3 validate"]
    assert not corrupt["success"] and "NotJSONError" in corrupt["value"], corrupt


def test_submissions_reach_the_exchange_and_the_latest_is_graded(loop):
    first, shown = loop["s1 first submit"], loop["s1 submit"]
    assert len(first) == 1 and len(shown) == 2 and first[0] in shown, (first, shown)
    grades = loop["formgrader"]
    assert grades[S1]["score"] == grades[S1]["max_score"] > 0, grades[S1]
    assert 0 < grades[S2]["score"] < grades[S2]["max_score"], grades[S2]
    assert loop["s2 submit"]["submitted"]["submissions"], loop["s2 submit"]


def test_make_grade_names_the_corrupt_notebook(loop):
    proc = loop["grade"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout + proc.stderr
    line = next((ln for ln in text.splitlines() if S3 in ln and A in ln), "")
    assert line and re.search(r"JSON|not a notebook|could not be read", line), text[-3000:]
    assert loop["formgrader"][S3]["score"] == 0


def test_a_submission_after_the_due_date_is_marked_late(loop):
    rows = _csv(loop["grading"] / "submissions.csv")
    late = {s: float(rows[s]["seconds_late"] or 0) for s in (S1, S2, S3)}
    assert late[S3] > 0 and late[S1] == late[S2] == 0, late
    assert "late" in re.sub(r"<[^>]+>", " ", loop[f"{S3} feedback"]).lower()


def test_each_student_fetches_feedback_with_their_score_and_mistake(loop):
    grades = loop["formgrader"]
    for name in (S1, S2):
        page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", loop[f"{name} feedback"]))
        score, top = grades[name]["score"], grades[name]["max_score"]
        assert re.search(rf"{score:g}\s*/\s*{top:g}", page), (name, score, top, page[:600])
    assert MISTAKE.says in loop[f"{S2} feedback"]
    score, top = grades[S1]["score"], grades[S1]["max_score"]
    assert re.search(rf"Score:\s*{score:g}\s*/\s*{top:g}", loop[f"{S1} feedback view"]), (
        "student 1 sees their score in JupyterLab",
        loop[f"{S1} feedback view"][:400],
    )
    assert MISTAKE.says not in loop[f"{S1} feedback"]
    for name in (S1, S2, S3):
        assert "BEGIN HIDDEN" not in loop[f"{name} feedback"]
        assert "autograder.checks" not in loop[f"{name} feedback"]


def test_the_websites_jupyterhub_button_clones_the_student_copy_and_keeps_edits(loop):
    button = loop["button"]
    assert "/hub/user-redirect/git-pull?repo=file" in button["link"], button["link"]
    assert button["heading"].startswith("Exercise 1"), "the button opens the notebook in JupyterLab"
    assert button["cloned"] == (ROOT / "exercises" / NB).read_text(encoding="utf-8")
    assert "".join(button["after edit"]).startswith("# My notes: "), "the pull kept the edit"


def test_students_cannot_read_each_other_or_the_course(loop):
    seen = loop["probes"]["kernel"]
    assert seen.get("own notebook") == "read", seen  # the probe can succeed
    for what in (
        "another student's home",
        "another student's notebook",
        "the exchange's inbound",
        "the course's solutions",
        "the course's folder",
        "the grading folder",
    ):
        assert seen.get(what) == "PermissionError", (what, seen)
    assert seen.get("the course's code") == "ModuleNotFoundError", seen


def test_a_students_token_opens_only_their_own_server(loop):
    p = loop["probes"]
    assert p["other server"] == 200
    assert p["s1 token on s2"] in (403, 404), p["s1 token on s2"]
    assert p["contents outside home"] in (400, 403, 404), p["contents outside home"]
    assert "logged in" not in p["student password as instructor"]


def test_only_the_instructor_has_formgrader_and_the_course_list(loop):
    p = loop["probes"]
    assert p["student formgrader"] == 404 and p["student course list"] == 404, p
    assert p["instructor course list"] == 200, p
    assert "@jupyter/nbgrader:formgrader" in p["student lab disables"], p["student lab disables"]


def test_sigterm_stops_everything_and_removes_the_users(loop):
    # make itself dies of the SIGTERM it passed on; the hub's process reports what it undid
    assert loop["stop"] in (0, -signal.SIGTERM), loop["out"][-3000:]
    assert "stopped: users" in loop["out"] and "could not undo" not in loop["out"], loop["out"]
    for name in (INSTRUCTOR, S1, S2, S3):
        with pytest.raises(KeyError):
            pwd.getpwnam(name)
    uids = {e.pw_uid for e in loop["probes"]["pwd"].values()}
    alive = [d.name for d in Path("/proc").iterdir() if d.name.isdigit() and _uid(d) in uids]
    assert not alive, f"processes of the trial's users still run: {alive}"
    for path, before in loop["modes_before"].items():
        now = os.stat(path)
        assert (now.st_mode, now.st_gid) == (before.st_mode, before.st_gid), path
    left = sorted(p.name for p in HUB_DIR.iterdir()) if HUB_DIR.exists() else []
    assert left in ([], ["jupyterhub.log"]), left
    owned = [p for p in loop["grading"].rglob("*") if os.lstat(p).st_uid in uids]
    assert not owned, f"files still owned by the removed users: {owned[:5]}"
    port = int(loop["settings"]["url"].rstrip("/").rsplit(":", 1)[1])
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("127.0.0.1", port))  # nothing listens where the hub was


def _uid(d: Path) -> int | None:
    try:
        return d.stat().st_uid
    except OSError:
        return None
