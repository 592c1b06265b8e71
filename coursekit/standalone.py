"""The first cell of a chapter's notebook (book/NN_slug.ipynb): what a page needs to run where a
student opens it (Colab, Binder, JupyterHub, a laptop), without the website's build and without
this repository.

`make release` writes each page's notebook next to the page (autograder/release/pages.py) and
pastes this module into its first cell, followed by ``REQUIRES`` (the packages the page imports,
pinned as in requirements.txt), ``COURSEKIT`` (the source of every coursekit module the page
imports, and of those they import) and ``glue = standalone(COURSEKIT, REQUIRES)``. So the page's
own cells run unchanged: ``from coursekit.timing import ratios`` imports the copy held in the
cell, and ``glue(name, value)`` prints the value that the website shows in the text.

Self-contained: the standard library only, and no ``from __future__`` (it is pasted mid-cell).
"""

import importlib.abc
import importlib.util
import subprocess
import sys

EMBEDDED = "<embedded>/"  # the file name prefix of the pasted modules (no such file on disk)


def missing_packages(requires):
    """The pinned requirements (``{module: "dist==version"}``) whose module this Python lacks."""
    return [pin for module, pin in requires.items() if importlib.util.find_spec(module) is None]


def install_or_explain(missing):
    """Install what is missing on Colab (a throwaway machine); anywhere else, say what to run."""
    if not missing:
        return
    if "google.colab" in sys.modules:  # Colab's kernel imports it before any cell runs
        print("installing what this page needs:", " ".join(missing))
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", *missing])
        importlib.invalidate_caches()
        return
    raise ModuleNotFoundError(
        f"this page needs {', '.join(missing)}, which this Python does not have. Install them "
        f"into this kernel with  %pip install {' '.join(missing)}  (in a cell of its own), "
        "then run this cell again."
    )


class EmbeddedModules(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """Imports the modules in ``sources`` (``{"coursekit.timing": source, ...}``) from memory,
    ahead of anything installed; ``inspect.getsource`` and tracebacks show their lines."""

    def __init__(self, sources):
        self.sources = dict(sources)

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.sources:
            return None
        spec = importlib.util.spec_from_loader(
            fullname, self, origin=self.get_filename(fullname), is_package=self.is_package(fullname)
        )
        spec.has_location = True  # sets __file__, so that linecache asks get_source for lines
        return spec

    def get_filename(self, fullname):
        tail = "/__init__.py" if self.is_package(fullname) else ".py"
        return EMBEDDED + fullname.replace(".", "/") + tail

    def is_package(self, fullname):
        return any(other.startswith(fullname + ".") for other in self.sources)

    def get_source(self, fullname):
        if fullname not in self.sources:
            raise ImportError(f"{fullname} is not one of the embedded modules", name=fullname)
        return self.sources[fullname]

    def get_code(self, fullname):
        source = self.get_source(fullname)
        return compile(source, self.get_filename(fullname), "exec", dont_inherit=True)


def use_embedded(sources):
    """Put the embedded modules first on the import path (again, when the cell runs again)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, EmbeddedModules)]
    for name in list(sys.modules):
        if name in sources:
            del sys.modules[name]  # a module imported from an earlier run of the cell
    sys.meta_path.insert(0, EmbeddedModules(sources))


def glue(name, value, display=True):
    """Outside the website, print what the website's build would have put into the text."""
    print(f"{name}: {value}")


def standalone(sources, requires):
    """Check (or on Colab, install) the packages, serve the embedded modules; returns glue."""
    install_or_explain(missing_packages(requires))
    use_embedded(sources)
    names = ", ".join(sorted(n for n in sources if "." in n)) or "none"
    print(f"ready: the course helpers this page uses are defined here ({names}).")
    print("Numbers that the website shows in the text are printed as `name: value`.")
    return glue
