"""The ONNX ops a model may use, and the bounds that protect the nodes that train and replay it.

Two kinds of op: those that may carry the trained computation (`TRAINABLE`: every value that depends on
the input or a parameter flows only through these), and those allowed only on constants (`CONSTANT_ONLY`:
the shape arithmetic, masks and scale factors an exporter writes, evaluated with NumPy).
"""

from __future__ import annotations

TRAINABLE = frozenset([
    # contractions
    "Gemm", "MatMul", "Conv",
    # normalisation (BatchNormalization is refused with advice: its running statistics live outside the
    # parameters, so training them would be state no commitment covers)
    "LayerNormalization",
    # activations
    "Relu", "Gelu", "Sigmoid", "Tanh", "Erf",
    # pooling
    "MaxPool", "AveragePool", "GlobalAveragePool", "ReduceMean",
    # elementwise arithmetic
    "Add", "Mul", "Sub", "Div", "Neg",
    # data movement
    "Reshape", "Flatten", "Transpose", "Concat", "Slice", "Gather", "Split", "Squeeze", "Unsqueeze", "Identity",
    # attention pieces: a softmax, and a causal mask applied with Where
    "Softmax", "Where",
    # identity in training as in inference: a protocol step is deterministic, so there is no random mask
    "Dropout",
    # the shape of a value (its dimensions are fixed, so the result is a constant)
    "Shape",
])

CONSTANT_ONLY = frozenset([
    "Constant", "ConstantOfShape", "Cast", "Not", "Trilu", "Pow", "Reciprocal", "Sqrt", "Equal", "Less",
    "Greater", "Range", "Expand", "And", "Or",
])

ALLOWED = TRAINABLE | CONSTANT_ONLY

ADVICE = {
    "BatchNormalization": "its running statistics are state outside the parameters; use LayerNormalization, "
                          "or export with the model in eval mode so the exporter folds it into the convolution",
    "Loop": "control flow is not supported; export a graph with fixed shapes",
    "If": "control flow is not supported; export a graph with fixed shapes",
    "Scan": "control flow is not supported; export a graph with fixed shapes",
    "SplitToSequence": "sequence ops are not supported; export with the TorchScript exporter "
                       "(torch.onnx.export(..., dynamo=False)) or with dynamo's optimizer on",
}

MAX_GRAPH_BYTES = 2**31 - 1  # protobuf's own limit; a bigger model cannot be one ONNX file without external data
MAX_PARAMS = 1_000_000_000
MAX_NODES = 20_000
MAX_ACTIVATION_BYTES = 64 * 2**30  # every intermediate value of one forward pass at the spec's batch size
FROZEN_KEY = "gensyn.frozen"  # model metadata: comma-separated float initializers that are not trained
