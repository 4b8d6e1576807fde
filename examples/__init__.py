"""Runnable examples; `onnx_models` is also imported by the tests and benchmarks."""
