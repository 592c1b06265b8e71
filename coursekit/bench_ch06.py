"""Chapter 6 timing: the gather E[ids] against the one-hot matmul one_hot(ids) @ E, as the row
width d grows at a fixed vocabulary V."""

from coursekit.timing import lookup_methods, run_chapter  # noqa: F401  (inlined: these are defined above)

CH06_SIZES = dict(n_tokens=512, V=8_192, widths=(16, 64, 256, 1024, 2048))


def ch06_methods(n_tokens: int, V: int) -> list:
    # GPT-2's init scale for the table; the timing does not depend on it.
    return lookup_methods(lambda d: (n_tokens, V, d), scale=0.02)


def timing(sizes=CH06_SIZES, min_run_time=0.1, repeats=2):
    """Time, predict and plot both formulations over d; nothing happens under nbgrader.
    The sweep runs ``repeats`` times and keeps each point's fastest time."""
    title = f"{sizes['n_tokens']} lookups into a ({sizes['V']:,}, d) float32 table"
    methods = ch06_methods(sizes["n_tokens"], sizes["V"])
    kw = dict(min_run_time=min_run_time, repeats=repeats)
    return run_chapter(sizes["widths"], methods, "d", "row width d", title, **kw)
