"""Reproducible operators (`repro` mode): float32 results defined bit for bit by device-independent rules.

See docs/repro.md for the definitions. ``primitives`` holds the IEEE-754 binary32 elementwise ops,
``matmul`` the exact-then-round-once matrix product, ``backend`` the op interface and its torch
implementation, ``ops`` the composite ops, ``layers`` the layer ops with explicit backward passes,
``tape`` and ``autograd`` the two ways of chaining them, ``trace`` the recorded op sequence with Merkle
roots, and ``reference`` the NumPy interpreter that runs the same sequences without torch.  Nothing is
imported here, so the NumPy reference can be used without importing torch.
"""
