"""`make configure REPO=... HUB=...`: the launch buttons' repository and hub, in one command.

* It writes `_config.yml`'s repository url and branch and the JupyterHub button's hub, and
  changes nothing else (comments included); bad input changes nothing and says why.
* One exercise page, built by Jupyter Book with the configured `_config.yml` (a one-page book,
  not a second build of the site), has Binder, JupyterHub (nbgitpuller) and Colab buttons that
  open that page's notebook in the configured repository and on the configured hub, exactly the
  links `autograder.release.configure.launch_links` gives (the student copy's README uses them).
* The student copy made with that `_config.yml` carries it and names the hub and repository.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from autograder.course import ROOT
from autograder.release import configure
from autograder.release.student import student_repo

REPO, HUB, BRANCH = (
    "https://github.com/acme-univ/embeddings-2027",
    "https://hub.acme.edu/ml",
    "term2",
)
PAGE = "exercises/01_one_hot_lookup/01_one_hot_lookup"


def _run(config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograder.release.configure", "--config", str(config), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def configured(tmp_path_factory) -> Path:
    config = tmp_path_factory.mktemp("configure") / "_config.yml"
    config.write_bytes((ROOT / "_config.yml").read_bytes())
    proc = _run(config, "--repo", REPO + ".git", "--hub", HUB + "/", "--branch", BRANCH)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return config


def test_make_configure_runs_this_command():
    proc = subprocess.run(
        ["make", "-s", "-n", "configure", f"REPO={REPO}", f"HUB={HUB}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert f'python -m autograder.release.configure --repo "{REPO}" --hub "{HUB}"' in proc.stdout
    usage = subprocess.run(["make", "-s", "configure"], cwd=ROOT, capture_output=True, text=True)
    assert usage.returncode == 2 and "usage: make configure REPO=" in usage.stdout


def test_it_writes_the_three_values_and_nothing_else(configured):
    before = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    after = yaml.safe_load(configured.read_text(encoding="utf-8"))
    assert after["repository"] == {**before["repository"], "url": REPO, "branch": BRANCH}
    assert after["launch_buttons"] == {**before["launch_buttons"], "jupyterhub_url": HUB}
    rest = {k for k in before if k not in ("repository", "launch_buttons")}
    assert {k: after[k] for k in rest} == {k: before[k] for k in rest}
    comments = lambda p: [ln for ln in p.read_text().splitlines() if ln.strip().startswith("#")]  # noqa: E731
    assert comments(configured) == comments(ROOT / "_config.yml")
    assert configure.read(configured) | {"binder": "", "colab": ""} == {
        "url": REPO, "branch": BRANCH, "hub": HUB, "binder": "", "colab": ""
    }  # fmt: skip


@pytest.mark.parametrize(
    "args, says",
    [
        (["--repo", "https://gitlab.com/acme/x", "--hub", HUB], "must be a GitHub repository"),
        (["--repo", "github.com/acme/x", "--hub", HUB], "must be a GitHub repository"),
        (["--repo", REPO, "--hub", "hub.acme.edu"], "HUB must be the hub's address"),
        (["--repo", REPO, "--hub", HUB + "/hub/"], "without its /hub/"),
        (["--repo", REPO, "--hub", HUB, "--branch", "a b"], "BRANCH must be a branch name"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(tmp_path, args, says):
    config = tmp_path / "_config.yml"
    config.write_bytes((ROOT / "_config.yml").read_bytes())
    proc = _run(config, *args)
    assert proc.returncode == 2 and says in proc.stderr and "is unchanged" in proc.stderr, proc
    assert config.read_bytes() == (ROOT / "_config.yml").read_bytes()


def _one_page_book(configured: Path, tmp: Path) -> Path:
    """A book of the one exercise page, with the configured _config.yml (less the course's
    Sphinx extension and its vendored MathJax, which make no buttons) and the bibliography."""
    book = tmp / "book"
    (book / Path(PAGE).parent).mkdir(parents=True)
    (book / f"{PAGE}.ipynb").write_bytes((ROOT / f"{PAGE}.ipynb").read_bytes())
    config = yaml.safe_load(configured.read_text(encoding="utf-8"))
    for bib in config["bibtex_bibfiles"]:  # sphinxcontrib-bibtex, always on, needs one
        (book / bib).parent.mkdir(parents=True, exist_ok=True)
        (book / bib).write_bytes((ROOT / bib).read_bytes())
    config["sphinx"].pop("local_extensions", None)
    for key in ("html_static_path", "mathjax_path"):
        config["sphinx"]["config"].pop(key, None)
    (book / "_config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (book / "_toc.yml").write_text(f"format: jb-book\nroot: {PAGE}\n", encoding="utf-8")
    return book


@pytest.mark.slow
def test_a_page_built_with_it_launches_into_the_repository_and_the_hub(configured, tmp_path):
    book = _one_page_book(configured, tmp_path)
    proc = subprocess.run(
        ["jupyter-book", "build", str(book), "--builder", "html"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    html_file = book / "_build" / "html" / f"{PAGE}.html"
    assert proc.returncode == 0 and html_file.is_file(), (proc.stdout + proc.stderr)[-3000:]
    block = html_file.read_text(encoding="utf-8").split("dropdown-launch-buttons", 1)[1]
    links = re.findall(r'<a href="([^"]+)"', block.split("</ul>", 1)[0])
    links = {urlsplit(u).netloc: u.replace("&amp;", "&") for u in links}
    want = configure.launch_links(configure.read(configured), f"{PAGE}.ipynb")
    assert links == {urlsplit(u).netloc: u for u in want.values()}, (links, want)
    hub = urlsplit(want["jupyterhub"])
    assert f"{hub.scheme}://{hub.netloc}{hub.path}" == f"{HUB}/hub/user-redirect/git-pull"
    query = parse_qs(hub.query)
    assert query["repo"] == [REPO] and query["branch"] == [BRANCH], query
    assert query["urlpath"] == [f"lab/tree/embeddings-2027/{PAGE}.ipynb"], query


def test_the_student_copy_carries_it_and_names_the_hub(configured, tmp_path):
    copy = student_repo(tmp_path / "student-repo", config=configured)
    assert (copy / "_config.yml").read_bytes() == configured.read_bytes()
    readme = (copy / "README.md").read_text(encoding="utf-8")
    link = configure.launch_links(configure.read(configured), "exercises")["jupyterhub"]
    assert HUB in readme and REPO in readme and link in readme, readme
    assert "hub.example.edu" not in readme


def test_an_unconfigured_student_copy_names_no_hub(tmp_path):
    config = tmp_path / "_config.yml"
    config.write_bytes((ROOT / "_config.yml").read_bytes())
    _run(config, "--repo", REPO, "--hub", "https://hub.example.edu")
    assert configure.is_placeholder(configure.read(config)["hub"])
    readme = (student_repo(tmp_path / "copy", config=config) / "README.md").read_text()
    assert "JupyterHub (" not in readme and "git-pull" not in readme, readme
    assert "launch buttons (Binder, Colab, JupyterHub)" in readme
