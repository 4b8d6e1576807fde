"""Reproducible operators (`repro` mode): float32 results defined bit for bit by device-independent rules.

See docs/repro.md for the definitions. ``primitives`` holds the IEEE-754 binary32 elementwise ops,
``matmul`` the exact-then-round-once matrix product, ``ops`` the composite ops (written once over a
backend so that ``reference`` can execute the same op sequence in NumPy), autograd functions and optimizers.
"""

from gensyn_py.repro.matmul import MAX_K, repro_matmul, repro_sum

__all__ = ["MAX_K", "repro_matmul", "repro_sum"]
