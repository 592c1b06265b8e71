"""``python -m autograder.grade`` (``make grade``): two imports made lighter, in this command only
(plain nbgrader, the tests' own processes and the kernels are unchanged). This process reads and
writes the gradebook through nbgrader's API before the first submission is handed out, so what
that import costs delays every notebook."""

import importlib.util
import sys


def _light_imports() -> None:
    # jsonschema (imported with nbformat) builds 38 IRI parsers (lark grammars) at import when
    # rfc3987-syntax is installed (jupyter-events' jsonschema[format-nongpl] extra brings it):
    # 1-2 s of CPU. Nothing here validates an IRI ("iri" and "iri-reference" are the formats it
    # provides), so it is left out.
    sys.modules.setdefault("rfc3987_syntax", None)
    # nbgrader's package __init__ loads its Jupyter server extensions (formgrader, the
    # assignment list: jupyter_server, its handlers, about 500 modules, 0.4-0.8 s) before any
    # submodule. No server runs here: the package is registered without running it, its
    # submodules (api, plugins, converters, utils) import as usual, and __version__ is set.
    spec = importlib.util.find_spec("nbgrader")
    if spec is None or "nbgrader" in sys.modules:
        return
    package = importlib.util.module_from_spec(spec)
    sys.modules["nbgrader"] = package
    from nbgrader._version import __version__

    package.__version__ = __version__


_light_imports()

from .cli import main  # noqa: E402

raise SystemExit(main())
