"""Chapter 5 timing: where a tied bigram model's forward time goes, over V.

The input path is a gather E[x] (or, the same numbers, the one-hot product one_hot(x) @ E); the
output path is the dense logits H @ E.T, one dot product per (position, token) pair, which no
indexing trick avoids. The table is the same for both paths: that is weight tying.
"""

from coursekit.timing import Method, lookup_methods, lookup_operands, matmul_cost, run_chapter  # noqa: F401  (inlined: these are defined above)

CH05_SIZES = dict(n_tokens=512, d=64, vocab=(1_000, 4_000, 16_000, 65_536))


def ch05_methods(n_tokens: int, d: int) -> list:
    gather, one_hot = lookup_methods(lambda V: (n_tokens, V, d))

    def logits(V, device):
        E, x = lookup_operands(V, d, n_tokens, device)
        H = E[x]  # (N, d): the looked-up rows, as in the bigram model
        return lambda: H @ E.T

    return [
        gather._replace(label="input: gather E[x]"),
        Method("output: logits H @ E.T", lambda V: matmul_cost(n_tokens, d, V), logits),
        one_hot._replace(label="input: one_hot(x) @ E"),
    ]


def timing(sizes=CH05_SIZES, min_run_time=0.1, repeats=2):
    """Time, predict and plot the input and output paths on this machine; nothing happens under
    nbgrader. The sweep runs ``repeats`` times and keeps each point's fastest time."""
    title = f"Tied bigram forward: {sizes['n_tokens']} tokens, a (V, {sizes['d']}) float32 table"
    methods = ch05_methods(sizes["n_tokens"], sizes["d"])
    kw = dict(min_run_time=min_run_time, repeats=repeats)
    return run_chapter(sizes["vocab"], methods, "V", "vocabulary size V", title, **kw)
