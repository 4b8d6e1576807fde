"""Bring-your-own models: an ONNX graph, parsed and checked against a whitelist, run by an interpreter.

Nothing a requester sends is executed as code. A model file is an ONNX graph (`graph.parse_graph`): its ops
must be on the whitelist (`whitelist.py`), its float initializers are the trainable parameters and their
initial values, and every other value is computed by the interpreter (`interpreter.py`) from the op's
definition: with torch's kernels in mode `exact` (`torch_ops.py`) or with the repro layer ops in mode
`repro` (`repro_ops.py`), so a custom model is bit-exact on any hardware like a registry family.
"""
