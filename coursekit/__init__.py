"""Student-facing helpers: environment check, timing, gradient checking.

Nothing here grades or reveals an answer; `make release` inlines what an exercise notebook needs,
so the released notebooks run anywhere (JupyterLab, Binder, Colab) without this package.
"""
