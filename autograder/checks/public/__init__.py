"""Each chapter's public judges and mistake models, one module per chapter (``public/chNN.py``).

``make release`` pastes a chapter's module, after :mod:`..harness`, :mod:`..compare`,
:mod:`..judges` and :mod:`..visible`, into the released notebook's test-helper cell, so the
visible tests name mistakes exactly as the hidden checks do. A public module therefore builds
each mistake from the case and the *expected* value, never from the reference solution, and
imports only numpy, the standard library and those four modules. Each defines
``expect = make_expect(JUDGES)``; the hidden checks (``checks/chNN.py``) import the same judges.
"""
