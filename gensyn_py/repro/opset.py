"""The op set of repro mode: every op a backend implements, its argument kinds, and limits.

Plain data with no torch import, shared by the torch backend, the NumPy reference and the trace.
"""

from __future__ import annotations

MAX_K = 2**14  # the largest contraction (matmul K, sum length) the exact integer rule supports

# op name -> argument kinds: "t" a tensor input, "ts" a list of tensor inputs, "a" an attribute (part of the
# op's definition), "l" a tensor used only for its device (not an input).
OP_ARGS: dict[str, tuple[str, ...]] = {
    "const": ("a", "l"),
    "zeros": ("a", "l"),
    "index_map": ("a", "a", "l"),
    "add": ("t", "t"),
    "sub": ("t", "t"),
    "mul": ("t", "t"),
    "div": ("t", "t"),
    "sqrt": ("t",),
    "neg": ("t",),
    "abs": ("t",),
    "maximum": ("t", "t"),
    "minimum": ("t", "t"),
    "clamp": ("t", "a", "a"),
    "lt": ("t", "t"),
    "gt": ("t", "t"),
    "eq": ("t", "t"),
    "isnan": ("t",),
    "where": ("t", "t", "t"),
    "floor": ("t",),
    "to_int32": ("t",),
    "from_int": ("t",),
    "ldexp": ("t", "t"),
    "ldexp_f": ("t", "t"),
    "frexp": ("t",),
    "matmul": ("t", "t"),
    "sum": ("t", "a"),
    "index_sum": ("t", "t", "a"),
    "rowmax": ("t",),
    "first_max": ("t", "t"),
    "t": ("t",),
    "reshape": ("t", "a"),
    "permute": ("t", "a"),
    "narrow": ("t", "a", "a", "a"),
    "cat": ("ts", "a"),
    "append_ones": ("t",),
    "take": ("t", "t"),
    "embed": ("t", "t"),
    "gather": ("t", "t"),
    "onehot": ("t", "a", "l"),
}

# ops whose output element i depends only on element i of each (broadcast) input
ELEMENTWISE = frozenset([
    "add", "sub", "mul", "div", "sqrt", "neg", "abs", "maximum", "minimum", "clamp", "lt", "gt", "eq", "isnan",
    "where", "floor", "to_int32", "from_int", "ldexp", "ldexp_f", "frexp_m", "frexp_e",
])
# exact data movement: each output element is one input element (or a constant 0 / 1)
MOVEMENT = frozenset(["t", "reshape", "permute", "narrow", "cat", "append_ones", "take", "embed", "gather"])
# ops with no tensor inputs: the output is a function of the attributes
CONSTANT = frozenset(["const", "zeros", "index_map"])
