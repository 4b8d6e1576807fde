"""The trace of a repro training step: it reproduces the step, the NumPy reference re-executes it without
torch, its roots bind every value, and any output element recomputes from its op's inputs alone."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from gensyn_py.proof.state import state_entry
from gensyn_py.proof.step_program import input_leaf
from gensyn_py.proof.step_trace import trace_step
from gensyn_py.proof.trace import (
    SLICE_BITS,
    Trace,
    TraceError,
    TracingBackend,
    check_element,
    prove_element,
    recompute_element,
    verify_element,
)
from gensyn_py.repro.backend import TORCH
from gensyn_py.repro.reference import round_int, same_bits
from gensyn_py.train.repro_step import SCALAR_KEYS, ReproStep
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import dataset_for, tiny_spec

ROOT = Path(__file__).resolve().parents[2]
SCALARS = set(SCALAR_KEYS["adamw"])


def trainer(family: str, steps: int = 1, **over: Any) -> Trainer:
    t = Trainer(tiny_spec(family, mode="repro", **over), dataset_for(family), 0, 0, "cpu")
    t.run(steps)  # one step in, so the optimizer state is part of the trace
    return t


@cache
def mlp_trace() -> Trace:
    return trace_step(trainer("mlp"))


def elements(n: int) -> list[int]:
    return sorted({0, n - 1, n // 2}) if n else []


def test_trace_is_the_next_step_and_the_reference_reexecutes_it() -> None:
    t = trainer("mlp")
    before = t.state_dict()
    tr = trace_step(t)
    assert t.step == 1  # tracing does not advance the trainer
    assert tr.check() is None
    loss = t.train_step()
    assert isinstance(t.engine, ReproStep)
    assert float(tr.value("loss").reshape(())) == loss
    assert_bound_to_states(tr, t.engine.prog.names[0], before, t.state_dict())
    assert any(k.endswith("/momentum_buffer") for k in tr.outputs)
    key = "model/" + t.engine.prog.names[0]
    assert same_bits(tr.value(key), trace_step(t).value(key)) is False  # the next step moves on


def assert_bound_to_states(tr: Trace, first: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    """The trace's inputs are the state's entries at t, its outputs the entries at t + 1 (`proof/state.py`):
    every parameter and optimizer entry is one, and a step's input leaf is the state tree's leaf. A scalar
    (stored once per parameter) is read from the `first` parameter's entry."""
    learned = {k for k in after if k.startswith(("model/", "optim/"))}
    assert set(tr.outputs) == learned | {"loss"}
    read = {k for k in before if k.startswith("model/") or (k.startswith("optim/") and (
        k.rsplit("/", 1)[1] not in SCALARS or k.startswith(f"optim/{first}/")))}
    assert set(tr.inputs) == read | {"x", "y", "lr"}
    for key, i in tr.inputs.items():
        if key not in ("x", "y", "lr"):
            assert input_leaf(tr, i) == state_entry(key, before[key].numpy())
    for key in learned:
        assert state_entry(key, tr.value(key)) == state_entry(key, after[key].numpy()), key


@pytest.mark.parametrize("family", ["cnn", "transformer"])
def test_cnn_and_transformer_steps_trace_and_recompute(family: str) -> None:
    t = trainer(family, batch_size=4, optimizer={"name": "adamw", "lr": 0.01})
    tr = trace_step(t)
    assert tr.check() is None
    before = t.state_dict()
    t.train_step()
    assert isinstance(t.engine, ReproStep)
    assert_bound_to_states(tr, t.engine.prog.names[0], before, t.state_dict())
    rng = np.random.default_rng(0)
    for i, op in enumerate(tr.ops):
        if op.code != "input" and tr.values[i].size:
            assert check_element(tr, i, int(rng.integers(tr.values[i].size))), (i, op.code)


def test_every_op_output_element_recomputes_from_its_inputs() -> None:
    tr = mlp_trace()
    codes = set()
    for i, op in enumerate(tr.ops):
        if op.code == "input":
            continue
        codes.add(op.code)
        for e in elements(tr.values[i].size):
            assert check_element(tr, i, e), (i, op.code, e)
    assert {"matmul", "sum", "ldexp_f", "frexp_m", "where", "cat", "narrow", "gather", "onehot"} <= codes


def test_tampered_value_is_found_by_reexecution_and_by_its_element() -> None:
    tr = mlp_trace()
    j = next(i for i, op in enumerate(tr.ops) if op.code == "matmul" and tr.values[i].size > 4)
    values = list(tr.values)
    values[j] = values[j].copy()
    values[j].reshape(-1)[3] = np.nextafter(values[j].reshape(-1)[3], np.float32(np.inf))  # one ulp
    bad = replace(tr, values=values)
    assert bad.check() == j
    assert not check_element(bad, j, 3) and check_element(bad, j, 2)
    assert bad.root != tr.root and bad.tensor_roots[j] != tr.tensor_roots[j]
    assert bad.tensor_roots[:j] == tr.tensor_roots[:j]


def test_matmul_element_narrows_to_one_integer_multiply_add() -> None:
    tr = mlp_trace()
    j = next(i for i, op in enumerate(tr.ops) if op.code == "matmul" and tr.values[tr.ops[i].inputs[0]].shape[-1] > 32)
    got = recompute_element(tr, j, 5)
    d = got.detail
    assert d is not None and not d.special
    assert same_bits(np.asarray(got.value), tr.values[j].reshape(-1)[5])
    assert len(d.a) == len(d.b) == len(d.partial) > 32
    assert all(a == (h << SLICE_BITS) + lo and 0 <= lo < 2**SLICE_BITS for a, h, lo in zip(d.a, d.a_hi, d.a_lo,
                                                                                            strict=True))
    steps = [d.partial[0]] + [d.partial[k] - d.partial[k - 1] for k in range(1, len(d.partial))]
    assert steps == [a * b for a, b in zip(d.a, d.b, strict=True)]
    assert d.partial[-1] == d.n == (d.s_hi << SLICE_BITS) + d.s_lo
    assert np.float32(round_int(d.n, d.scale)) == np.float32(d.value)
    # a solver that got one product wrong: the prefix sums agree up to that k and differ from k on
    k = len(d.a) // 2
    theirs = [p + (1 if i >= k else 0) for i, p in enumerate(d.partial)]
    first = next(i for i, (x, y) in enumerate(zip(d.partial, theirs, strict=True)) if x != y)
    assert first == k


def test_sum_and_onehot_elements_expose_their_rule() -> None:
    tr = mlp_trace()
    for i, op in enumerate(tr.ops):
        if op.code == "sum":
            r = recompute_element(tr, i, 0)
            assert r.detail is not None and r.detail.block_b == 127 and set(r.detail.b) <= {2**23}
            return
    raise AssertionError("no sum op in the trace")


def test_trace_root_is_stable_and_bytes_round_trip() -> None:
    tr = mlp_trace()
    again = trace_step(trainer("mlp"))
    assert again.root == tr.root
    back = Trace.from_bytes(tr.to_bytes())
    assert back.root == tr.root  # the root hashes every op's code, inputs and attributes (NaN constants too)
    assert [(op.code, op.inputs) for op in back.ops] == [(op.code, op.inputs) for op in tr.ops]
    assert all(tr.verify_op(i) for i in (0, len(tr.ops) // 2, len(tr.ops) - 1))


def test_reference_checks_a_trace_in_a_process_without_torch(tmp_path: Path) -> None:
    tr = mlp_trace()
    path = tmp_path / "step.trace"
    path.write_bytes(tr.to_bytes())
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # any import of torch now fails\n"
        "from gensyn_py.proof.trace import Trace, check_element\n"
        "t = Trace.from_bytes(open(sys.argv[1], 'rb').read())\n"
        "assert all(check_element(t, i, 0) for i, op in enumerate(t.ops) if op.code != 'input' and t.values[i].size)\n"
        "print(t.check(), t.root.hex())\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True,
                         timeout=120, cwd=ROOT)
    assert out.stdout.split() == ["None", tr.root.hex()]


def test_element_proofs_verify_against_tensor_roots() -> None:
    tr = mlp_trace()
    for i in (next(i for i, op in enumerate(tr.ops) if op.code == "matmul"),
              next(i for i, op in enumerate(tr.ops) if op.code == "gt")):
        arr = tr.values[i]
        for e in elements(arr.size):
            p = prove_element(arr, e)
            value = arr.reshape(-1)[e]
            assert verify_element(tr.tensor_roots[i], arr.shape, str(arr.dtype), e, value, p)
            other = ~value if arr.dtype == bool else np.float32(value) + np.float32(1)
            assert not verify_element(tr.tensor_roots[i], arr.shape, str(arr.dtype), e, np.asarray(other), p)


def test_tracing_refuses_a_tensor_no_traced_op_produced() -> None:
    tb = TracingBackend(TORCH)
    x = tb.input("x", torch.ones(3))
    tb.add(x, x)
    with pytest.raises(TraceError, match="no traced op produced"):
        tb.add(x, torch.ones(3))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("family", ["mlp", "transformer"])
def test_a_step_traced_on_cuda_equals_the_cpu_trace_op_by_op(family: str) -> None:
    """The dispute game compares traces by op output roots: a CUDA solver's trace must be a CPU validator's."""
    spec = tiny_spec(family, mode="repro", steps_per_unit=2, checkpoint_interval=2)
    cpu = Trainer(spec, dataset_for(family), 0, 0, "cpu")
    gpu = Trainer(spec, dataset_for(family), 0, 0, "cuda")
    tc, tg = trace_step(cpu), trace_step(gpu)
    assert [o.code for o in tc.ops] == [o.code for o in tg.ops]
    assert tc.root == tg.root
