"""The first cell of every exercise: is this environment ready for the course?

Self-contained (inlined into each exercise notebook by `make release`).
"""

import os
import sys


def check_environment(min_numpy=(2, 0), min_torch=(2, 0)):
    """Print what this kernel has and say what to do about anything missing."""
    problems = []
    print(f"Python {sys.version.split()[0]}")
    if sys.version_info < (3, 10):
        problems.append("Python 3.10 or newer is needed: start a newer kernel.")
    try:
        import numpy

        version = tuple(int(p) for p in numpy.__version__.split(".")[:2])
        print(f"numpy  {numpy.__version__}")
        if version < min_numpy:
            problems.append(f"numpy {numpy.__version__} is too old: pip install 'numpy>=2'")
    except ImportError:
        problems.append("numpy is missing: pip install numpy")
    if os.environ.get("NBGRADER_EXECUTION"):
        # The grader needs numpy only; skipping torch keeps every graded kernel fast.
        print("(grading: torch check skipped)")
    else:
        try:
            import torch

            version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
            if torch.cuda.is_available():
                device = f"CUDA GPU: {torch.cuda.get_device_name(0)}"
            elif getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
                device = "Apple GPU (MPS)"
            else:
                device = f"CPU ({torch.get_num_threads()} threads)"
            print(f"torch  {torch.__version__}  ->  timing cells will run on: {device}")
            if version < min_torch:
                problems.append(f"torch {torch.__version__} is too old: see the course README")
        except ImportError:
            problems.append(
                "torch is missing. The graded functions need only numpy, but the timing cell "
                "needs torch: pip install torch (CPU-only: see the course README)."
            )
    if problems:
        print("\nTo fix before you start:")
        for p in problems:
            print(" -", p)
    else:
        print("\nEverything needed is here. Work through the notebook from the top.")
    return not problems
