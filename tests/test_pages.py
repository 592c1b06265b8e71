"""The chapter pages as notebooks that run where a student opens them (book/NN_slug.ipynb).

* Each notebook page (book/*.md with a kernelspec) has its paired notebook, exactly what
  `make release` writes (autograder/release/pages.py), with no MyST markup left in its text.
* The setup cell's runtime (coursekit/standalone.py) serves the embedded modules to `import`,
  `inspect.getsource` included, and says exactly what to install when a package is missing.
* The built site's launch buttons (Colab, Binder, JupyterHub) open those notebooks, at the
  repository and branch of _config.yml, and the student copy (`make student-repo`) has them; the
  site's download of a chapter is the paired notebook.
* One paired notebook (the capstone page, the shortest that uses coursekit, the web2 words and
  glue) runs top to bottom under nbconvert, in a temporary folder, with PYTHONPATH unset and this
  repository out of reach: see `isolated_kernel`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from autograder import nb as notebooks
from autograder.course import BOOK, ROOT
from autograder.release import pages
from autograder.release.student import student_repo
from coursekit import standalone

PAGES = pages.page_sources()
MYST_LEFT = re.compile(r"\{[a-z:]+\}`|^:::|^\([\w-]+\)=|^\$\$ *\(|^```\{", re.MULTILINE)


def test_the_notebook_pages_are_the_chapters_and_the_primer():
    names = {p.stem for p in PAGES}
    assert {"pytorch_primer", "01_one_hot_lookup", "08_capstone"} <= names
    assert "intro" not in names and "references" not in names  # no code: not notebooks


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_paired_notebook_is_what_make_release_writes(page):
    paired = pages.paired_path(page)
    assert paired.is_file(), f"{paired.relative_to(ROOT)} is missing: run `make release`"
    assert paired.read_text(encoding="utf-8") == notebooks.dumps(pages.page_notebook(page)), (
        f"{paired.relative_to(ROOT)} drifted from its page or from coursekit: run `make release`"
    )


def test_no_other_notebook_in_book():
    paired = {pages.paired_path(p) for p in PAGES}
    assert set(BOOK.glob("*.ipynb")) == paired


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_paired_notebook_reads_as_plain_jupyter(page):
    import nbformat

    nb = notebooks.read(pages.paired_path(page))
    nbformat.validate(nbformat.from_dict(nb))
    first_code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert "glue = standalone(COURSEKIT, REQUIRES)" in "".join(first_code["source"])
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            assert not MYST_LEFT.search(text), f"MyST markup left: {MYST_LEFT.search(text)[0]!r}"
        else:
            assert "myst_nb" not in text


def test_the_capstone_notebook_embeds_what_it_imports():
    nb = notebooks.read(BOOK / "08_capstone.ipynb")
    setup = "".join(nb["cells"][1]["source"])
    for module in ("coursekit.capstone", "coursekit.realdata"):
        assert f"{module!r}: r'''" in setup
    assert "'english_words': 'english-words==2.0.2'" in setup
    assert "'coursekit.timing': " not in setup  # only what the page needs


EMBEDDED = {
    "kit": '"""A package."""\n',
    "kit.core": "def double(x):\n    return 2 * x\n",
    "kit.user": "from kit.core import double\n\n\ndef quadruple(x):\n    return double(double(x))\n",
}


def test_embedded_modules_import_and_show_their_source():
    import importlib
    import inspect

    sources = EMBEDDED
    try:
        standalone.use_embedded(sources)
        user = importlib.import_module("kit.user")
        assert user.quadruple(3) == 12
        assert "return double(double(x))" in inspect.getsource(user.quadruple)
        assert importlib.import_module("kit").__path__ == []  # a package, with its submodules
        standalone.use_embedded({**sources, "kit.core": "def double(x):\n    return 3 * x\n"})
        assert importlib.import_module("kit.user").quadruple(1) == 9  # the cell, run again
        assert sum(isinstance(f, standalone.EmbeddedModules) for f in sys.meta_path) == 1
    finally:
        sys.meta_path[:] = [
            f for f in sys.meta_path if not isinstance(f, standalone.EmbeddedModules)
        ]
        for name in list(sys.modules):
            if name == "kit" or name.startswith("kit."):
                del sys.modules[name]


def test_a_missing_package_is_named_with_its_install_command():
    missing = standalone.missing_packages({"numpy": "numpy==2.4.6", "no_such_pkg": "no-such==1.0"})
    assert missing == ["no-such==1.0"]
    with pytest.raises(ModuleNotFoundError, match=r"%pip install no-such==1\.0"):
        standalone.install_or_explain(missing)
    standalone.install_or_explain([])  # nothing missing: nothing to do


def _launch_links(html: str) -> list[str]:
    block = html.split("dropdown-launch-buttons", 1)
    assert len(block) == 2, "no launch buttons on a notebook page"
    return re.findall(r'<a href="([^"]+)"', block[1].split("</ul>", 1)[0])


def _repository():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    url, branch = config["repository"]["url"].rstrip("/"), config["repository"]["branch"]
    org, repo = urlsplit(url).path.strip("/").split("/")[:2]
    return url, branch, org, repo


def _opened_path(link: str) -> str:
    """The repository path a launch link opens, checked against _config.yml's repository."""
    url, branch, org, repo = _repository()
    parts = urlsplit(link.replace("&amp;", "&"))
    query = parse_qs(parts.query)
    if parts.netloc == "colab.research.google.com":
        prefix = f"/github/{org}/{repo}/blob/{branch}/"
        assert parts.path.startswith(prefix), link
        return parts.path[len(prefix) :]
    if parts.netloc == "mybinder.org":
        assert parts.path == f"/v2/gh/{org}/{repo}/{branch}", link
        return query["urlpath"][0].removeprefix("lab/tree/")
    assert parts.path.endswith("/hub/user-redirect/git-pull"), link
    assert query["repo"] == [url] and query["branch"] == [branch], link
    return query["urlpath"][0].removeprefix(f"lab/tree/{repo}/")


@pytest.fixture(scope="module")
def student_copy(tmp_path_factory) -> Path:
    return student_repo(tmp_path_factory.mktemp("student") / "student-repo")


def test_launch_buttons_open_notebooks_of_the_student_copy(built_site, student_copy):
    """Every launch button of every chapter page opens book/<page>.ipynb (never the .md), at
    _config.yml's repository and branch, and the student copy holds that notebook."""
    checked = 0
    for page in PAGES:
        html = (built_site / "book" / f"{page.stem}.html").read_text(encoding="utf-8")
        links = _launch_links(html)
        hosts = {urlsplit(u).netloc for u in links}
        assert {"colab.research.google.com", "mybinder.org"} <= hosts, links
        assert len(links) == 3, links  # Binder, JupyterHub, Colab
        for link in links:
            path = _opened_path(link)
            assert path == f"book/{page.stem}.ipynb", f"{page.name}: {link} opens {path}"
            assert (student_copy / path).is_file(), f"the student copy lacks {path}"
            checked += 1
    assert checked == 3 * len(PAGES)


def test_the_download_of_a_chapter_is_its_paired_notebook(built_site):
    for page in PAGES:
        served = built_site / "_sources" / "book" / f"{page.stem}.ipynb"
        assert served.read_bytes() == pages.paired_path(page).read_bytes(), served
        html = (built_site / "book" / f"{page.stem}.html").read_text(encoding="utf-8")
        assert f"_sources/book/{page.stem}.ipynb" in html


LAUNCHER = '''\
"""A kernel for tests/test_pages.py: the course venv's interpreter without this repository.

Started as `python -I launcher.py ROOT ...`. -I leaves PYTHONPATH, the user's site-packages and
the script's folder off sys.path, but the venv's site-packages still holds the editable install
of the repository (`pip install -e .`: a .pth file that puts a finder for coursekit and
autograder on sys.meta_path). This takes that finder, and any sys.path entry that is ROOT, off;
with `check` it prints whether coursekit and autograder can still be found; otherwise it refuses
to start while they can, and starts the kernel.
"""
import importlib.util
import json
import os
import sys

root = os.path.realpath(sys.argv.pop(1))
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.getcwd()) != root]
found = {name: importlib.util.find_spec(name) is not None for name in ("coursekit", "autograder")}
if sys.argv[1:] == ["check"]:
    print(json.dumps(found))
    sys.exit(0)
if any(found.values()):
    sys.exit(f"the repository is still importable: {found}")
from ipykernel.kernelapp import launch_new_instance

launch_new_instance()
'''


@pytest.fixture(scope="module")
def isolated_kernel(tmp_path_factory):
    """(folder, env): a temporary folder outside the repository with a kernel spec "isolated"
    (the launcher above) and an environment without PYTHONPATH that finds that spec."""
    folder = tmp_path_factory.mktemp("outside")
    assert not folder.resolve().is_relative_to(ROOT)
    launcher = folder / "launcher.py"
    launcher.write_text(LAUNCHER, encoding="utf-8")
    spec = folder / "share" / "kernels" / "isolated"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-I", str(launcher), str(ROOT), "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "isolated", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUPYTER_PATH")}
    env["JUPYTER_PATH"] = str(folder / "share")
    return folder, env


CAN_IMPORT = (
    "import importlib.util, json; print(json.dumps({n: importlib.util.find_spec(n) is not None"
    " for n in ('coursekit', 'autograder')}))"
)


def _can_import(cmd, folder, env) -> dict:
    out = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_isolated_kernel_cannot_import_the_repository(isolated_kernel):
    """The guard is needed (the editable install makes coursekit importable from anywhere) and
    it works (through the launcher, neither coursekit nor autograder can be found)."""
    folder, env = isolated_kernel
    plain = _can_import([sys.executable, "-c", CAN_IMPORT], folder, env)
    assert plain == {"coursekit": True, "autograder": True}, (
        f"expected the venv's editable install to make the course importable here: {plain}"
    )
    launcher = [sys.executable, "-I", str(folder / "launcher.py"), str(ROOT), "check"]
    assert _can_import(launcher, folder, env) == {"coursekit": False, "autograder": False}


@pytest.mark.slow
def test_a_paired_notebook_runs_without_the_repository(isolated_kernel):
    """book/08_capstone.ipynb, copied alone into a folder outside the repository, runs top to
    bottom under `jupyter nbconvert --execute` in the isolated kernel: its coursekit modules
    come from its setup cell, glue prints, nothing fails."""
    folder, env = isolated_kernel
    nb_path = folder / "08_capstone.ipynb"
    nb_path.write_bytes((BOOK / "08_capstone.ipynb").read_bytes())
    cmd = [
        str(Path(sys.executable).parent / "jupyter"),
        "nbconvert",
        "--to=notebook",
        "--execute",
        "--ExecutePreprocessor.kernel_name=isolated",
        "--ExecutePreprocessor.timeout=600",
        "--output=executed.ipynb",
        str(nb_path),
    ]
    proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    done = notebooks.read(folder / "executed.ipynb")
    outputs = [o for c in done["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error"]
    text = "".join("".join(o.get("text", "")) for o in outputs)
    assert "ready: the course helpers this page uses are defined here" in text
    glued = set(re.findall(r'glue\("(\w+)"', (BOOK / "08_capstone.md").read_text()))
    printed = set(re.findall(r"^(\w+): ", text, re.MULTILINE))
    assert glued <= printed, f"glue() printed {printed}, not {glued}"
