import sys

# nbgrader imports nbformat, which imports jsonschema, which builds 38 IRI parsers (lark grammars)
# at import when rfc3987-syntax is installed (jupyter-events' jsonschema[format-nongpl] extra
# brings it): 1.5-2 s of CPU at every start of `make grade`, before the first notebook. Nothing
# this process does validates an IRI ("iri" and "iri-reference" are the formats it provides), so it is left out
# here, in this command only (plain nbgrader, the tests' processes and the kernels are unchanged).
sys.modules.setdefault("rfc3987_syntax", None)

from .cli import main  # noqa: E402

raise SystemExit(main())
