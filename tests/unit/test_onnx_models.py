"""Bring-your-own models: an ONNX graph trains like a registry family, in both modes, and anything the
network cannot run exactly is refused by name before it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from examples.onnx_models import GPT, ResNetCNN, export
from gensyn_py.errors import SpecError
from gensyn_py.proof.replay import UnitRef, fetch_manifest, replay_segment
from gensyn_py.proof.step_trace import trace_step
from gensyn_py.repro.autograd import AUTOGRAD
from gensyn_py.repro.backend import TORCH
from gensyn_py.repro.reference import same_bits
from gensyn_py.repro.tape import Tape
from gensyn_py.sim.cheats import noisy_weights, solve
from gensyn_py.storage.cid import cid_for_bytes
from gensyn_py.train.data import dataset_entry
from gensyn_py.train.graphs.cache import load
from gensyn_py.train.graphs.checks import check_graph
from gensyn_py.train.graphs.graph import parse_graph
from gensyn_py.train.graphs.module import GraphModule, repro_forward
from gensyn_py.train.spec import parse_spec
from gensyn_py.train.trainer import Trainer, init_weights
from tests.unit.onnxkit import BATCH, dataset_of, model_bytes, model_entry, onnx_spec, onnx_spec_dict
from tests.unit.trainkit import store_at

KINDS = ["cnn", "gpt"]


def example(kind: str) -> torch.Tensor:
    ds = dataset_of(kind)
    return torch.from_numpy(ds.x[:BATCH].copy())


@pytest.mark.parametrize("kind", KINDS)
def test_exact_mode_runs_the_graph_with_the_models_own_bits(kind: str) -> None:
    """The interpreter on torch kernels computes what the PyTorch model computes, forward and backward: the
    same bits for the LM; for the CNN within rounding, because the interpreter makes a convolution's input
    contiguous (torch_ops.op_Conv: oneDNN's kernel for a permuted input with a stride corrupts memory in its
    backward), and a contiguous input takes another kernel path."""
    torch.manual_seed(0)
    model = ResNetCNN(3, 4, 2, 1, 5) if kind == "cnn" else GPT(32, 8, 16, 2, 1)
    x = example(kind)
    module = GraphModule(parse_graph(export(model, x)))
    assert dict(module.named_parameters()).keys() == dict(model.named_parameters()).keys()
    mine = module(x)
    mine.square().sum().backward()
    # The CNN's reference without oneDNN: its convolution backward on the permuted input corrupts memory (the
    # defect the interpreter avoids by making that input contiguous).
    with torch.backends.mkldnn.flags(enabled=kind != "cnn"):
        theirs = model(x)
        theirs.square().sum().backward()
    assert torch.equal(mine, theirs) if kind == "gpt" else torch.allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(module.named_parameters(), model.parameters(), strict=True):
        assert p.grad is not None and q.grad is not None
        assert torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-6), name


@pytest.mark.parametrize("kind", KINDS)
def test_repro_mode_is_close_to_torch_and_the_same_bits_on_tape_and_autograd(kind: str) -> None:
    graph = parse_graph(model_bytes(kind))
    module = GraphModule(graph)
    x = example(kind)
    params = dict(module.named_parameters())
    with torch.no_grad():
        on_autograd = repro_forward(AUTOGRAD, params, x, graph)
        tape = Tape(TORCH)
        on_tape = repro_forward(tape, {k: tape.leaf(v.detach(), True, k) for k, v in params.items()}, x, graph)
        plain = module(x)
    assert same_bits(on_autograd.numpy(), on_tape.value.numpy())
    assert torch.allclose(on_autograd, plain, atol=2e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_a_repro_step_is_traced_and_reexecuted_by_the_numpy_reference(kind: str) -> None:
    t = Trainer(onnx_spec(kind), dataset_of(kind), 0, 0, "cpu")
    t.run(1)  # the optimizer state is part of the next step's trace
    trace = trace_step(t)
    assert trace.check() is None  # every op re-executed without torch gives the same bits
    loss = t.train_step()
    assert float(trace.value("loss").reshape(())) == loss


@pytest.mark.parametrize(("kind", "lr", "steps"), [("cnn", 0.003, 24), ("gpt", 0.01, 12)])
def test_both_modes_train_from_the_files_weights_and_learn(kind: str, lr: float, steps: int) -> None:
    over: dict[str, Any] = {"steps_per_unit": steps, "checkpoint_interval": 4,
                            "optimizer": {"name": "adamw", "lr": lr}}
    start = init_weights(onnx_spec(kind, **over))
    graph = parse_graph(model_bytes(kind))
    for name, value in graph.params.items():
        assert np.array_equal(start[name].numpy(), value)  # the job starts from the file's weights, not a seed
    losses = {}
    for mode in ("exact", "repro"):
        t = Trainer(onnx_spec(kind, mode=mode, **over), dataset_of(kind), 0, 0, "cpu")
        losses[mode] = [t.train_step() for _ in range(steps)]
    k = steps // 4
    for mode, seq in losses.items():
        assert np.mean(seq[-k:]) < np.mean(seq[:k]) - 0.05, (mode, seq)
    assert np.allclose(losses["exact"], losses["repro"], rtol=0.05), losses


@pytest.mark.parametrize("kind", KINDS)
def test_a_repro_unit_commits_and_every_segment_replays_accepted(tmp_path: Path, kind: str) -> None:
    spec, ds, store = onnx_spec(kind), dataset_of(kind), store_at(tmp_path)
    c = solve(spec, ds, store, 42, 0, 0)
    manifest = fetch_manifest(store, c.manifest_cid)
    unit = UnitRef(42, 0, 0, c.checkpoint_root)
    for j in range(spec.num_segments):
        v = replay_segment(spec, ds, store, unit, manifest, j, "cpu")
        assert v.accept, v.reason


def test_altered_weights_are_caught_on_an_onnx_model(tmp_path: Path) -> None:
    spec, ds, store = onnx_spec("gpt", steps_per_unit=8, checkpoint_interval=2), dataset_of("gpt"), store_at(tmp_path)
    c = noisy_weights(spec, ds, store, 42, 0, 0)
    manifest = fetch_manifest(store, c.manifest_cid)
    unit = UnitRef(42, 0, 0, c.checkpoint_root)
    verdicts = [replay_segment(spec, ds, store, unit, manifest, j, "cpu").accept for j in range(spec.num_segments)]
    assert False in verdicts


# ---- refused by name ----


def graph_bytes(nodes: list[Any], inits: list[Any] | None = None, in_shape: list[Any] | None = None,
                out_shape: list[int] | None = None, opset: int = 20, domain: str = "") -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape or [BATCH, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape or [BATCH, 5])
    g = helper.make_graph(nodes, "g", [x], [y], initializer=inits or [])
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(g, opset_imports=imports).SerializeToString()


def weights(name: str, shape: list[int]) -> Any:
    return helper.make_tensor(name, TensorProto.FLOAT, shape, np.ones(shape, np.float32).reshape(-1).tolist())


def classifier(extra: list[Any] | None = None, last: str = "h") -> list[Any]:
    """Flatten -> Gemm(w, b) -> (extra nodes reading h and writing y)."""
    return [helper.make_node("Flatten", ["x"], ["f"], name="flat"),
            helper.make_node("Gemm", ["f", "w", "b"], [last], name="fc", transB=1), *(extra or [])]


FC = [weights("w", [5, 192]), weights("b", [5])]


@pytest.mark.parametrize(("data", "names"), [
    (b"not a model at all", ["not an ONNX model file"]),
    (graph_bytes(classifier([helper.make_node("TopK", ["h", "k"], ["y", "i"], name="pick")]),
                 [*FC, helper.make_tensor("k", TensorProto.INT64, [1], [5])]), ["'pick'", "TopK", "whitelist"]),
    (graph_bytes([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn")],
                 [weights(n, [3]) for n in "sbmv"]), ["'bn'", "BatchNormalization", "running statistics"]),
    (graph_bytes(classifier(last="y"), FC, in_shape=[BATCH, "channels", 8, 8]), ["dimension 1 is dynamic"]),
    (graph_bytes(classifier([helper.make_node("Custom", ["h"], ["y"], name="c", domain="com.acme")]), FC,
                 domain="com.acme"), ["'com.acme'"]),
    (graph_bytes(classifier(last="y"), FC, opset=9), ["opset 9"]),
])
def test_a_graph_the_network_cannot_run_is_refused_naming_what(data: bytes, names: list[str]) -> None:
    with pytest.raises(SpecError) as err:
        parse_graph(data)
    assert all(n in str(err.value) for n in names), str(err.value)
    assert str(err.value).startswith("model.onnx: ")


def test_external_weights_are_refused() -> None:
    model = onnx.load_model_from_string(graph_bytes(classifier(last="y"), FC))
    w = model.graph.initializer[0]
    w.data_location = TensorProto.EXTERNAL
    w.ClearField("float_data")
    entry = w.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    with pytest.raises(SpecError, match="external file"):
        parse_graph(model.SerializeToString())


def test_a_graph_that_does_not_fit_the_job_is_refused_naming_the_field() -> None:
    graph = parse_graph(graph_bytes(classifier(last="y"), FC))
    facts = check_graph(graph, BATCH, [3, 8, 8], "float32", [], "repro")
    assert (facts.task, facts.outputs, facts.max_k) == ("classify", 5, 192)
    with pytest.raises(SpecError, match=r"batch_size and dataset.x_shape give \[4, 3, 8, 8\]"):
        check_graph(graph, 4, [3, 8, 8], "float32", [], "exact")
    with pytest.raises(SpecError, match=r"dataset\.x_dtype is int64"):
        check_graph(graph, BATCH, [3, 8, 8], "int64", [], "exact")
    with pytest.raises(SpecError, match=r"dataset.y_shape \[\]\), not \[8\]"):
        check_graph(graph, BATCH, [3, 8, 8], "float32", [8], "exact")


def test_what_has_no_exact_form_is_refused_in_repro_and_runs_in_exact() -> None:
    """A constant tensor added to a trained value, and a mask that is not causal: fine on torch's kernels,
    refused for mode repro with the node's name."""
    added = graph_bytes(classifier([helper.make_node("Add", ["h", "offset"], ["y"], name="shift")]),
                        [*FC, helper.make_tensor("offset", TensorProto.FLOAT, [5], [0.5] * 5)],
                        )
    model = onnx.load_model_from_string(added)
    model.metadata_props.add(key="gensyn.frozen", value="offset")  # not a parameter: a constant of the model
    graph = parse_graph(model.SerializeToString())
    assert "offset" not in graph.params and "offset" in graph.constants
    check_graph(graph, BATCH, [3, 8, 8], "float32", [], "exact")
    with pytest.raises(SpecError, match=r"node 'shift' \(Add\) has no exact form in mode 'repro'"):
        check_graph(graph, BATCH, [3, 8, 8], "float32", [], "repro")
    upper = np.triu(np.ones((5, 5), bool)).reshape(-1).tolist()
    masked = graph_bytes(
        classifier([helper.make_node("Reshape", ["h", "shape"], ["s"], name="rows"),
                    helper.make_node("Where", ["mask", "minf", "s"], ["m"], name="mask"),
                    helper.make_node("Softmax", ["m"], ["p"], name="soft", axis=-1),
                    helper.make_node("ReduceMean", ["p", "axes"], ["y"], name="out", keepdims=0)]),
        [*FC, helper.make_tensor("shape", TensorProto.INT64, [3], [BATCH, 1, 5]),
         helper.make_tensor("axes", TensorProto.INT64, [1], [2]),
         helper.make_tensor("mask", TensorProto.BOOL, [5, 5], upper),
         helper.make_tensor("minf", TensorProto.FLOAT, [], [-np.inf])])
    graph = parse_graph(masked)
    check_graph(graph, BATCH, [3, 8, 8], "float32", [], "exact")
    with pytest.raises(SpecError, match=r"node .mask. .*not the causal mask|node .mask. .*no exact form"):
        check_graph(graph, BATCH, [3, 8, 8], "float32", [], "repro")


def test_the_file_must_be_the_content_its_cid_names() -> None:
    data = model_bytes("cnn")
    with pytest.raises(SpecError, match="the spec names"):
        load(cid_for_bytes(model_bytes("gpt")) + "x", data)
    with pytest.raises(SpecError, match="spec declares 12"):
        load("bafkreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", data, size_bytes=12)


@pytest.mark.parametrize(("model", "message"), [
    ({"family": "onnx"}, "needs model.onnx"),
    ({**model_entry(model_bytes("cnn")), "sizes": {"hidden": 4}}, "takes no sizes"),
    ({"family": "mlp", "onnx": model_entry(model_bytes("cnn"))["onnx"]}, "applies to family 'onnx' only"),
])
def test_the_spec_names_an_onnx_model_one_way_only(model: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec({**onnx_spec_dict("cnn"), "model": model})


def test_a_registry_spec_keeps_its_bytes_and_hash() -> None:
    from tests.unit.trainkit import tiny_spec

    assert b"onnx" not in tiny_spec("mlp").canonical_bytes()


def test_a_classifier_named_for_a_language_dataset_is_refused_before_training() -> None:
    lm = dataset_of("gpt")
    spec = parse_spec({**onnx_spec_dict("cnn"), "dataset": dataset_entry(lm, lm.to_bytes())})
    with pytest.raises(SpecError, match=r"graph's input is \[8, 3, 8, 8\]; batch_size and dataset.x_shape give "
                                        r"\[8, 8\]"):
        Trainer(spec, lm, 0, 0, "cpu")


def test_a_spec_file_names_a_local_model_file_which_is_checked_and_uploaded(tmp_path: Path) -> None:
    import json

    from gensyn_py.requester.spec_file import load_spec
    from gensyn_py.storage.local import LocalStore

    data = model_bytes("gpt")
    (tmp_path / "lm.onnx").write_bytes(data)
    ds = dataset_of("gpt")
    (tmp_path / "tokens.safetensors").write_bytes(ds.to_bytes())
    spec = {**onnx_spec_dict("gpt"), "model": {"family": "onnx", "file": "lm.onnx"},
            "dataset": {"file": "tokens.safetensors"}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    store = LocalStore(tmp_path / "store")
    loaded = load_spec(tmp_path / "spec.json", store)
    assert loaded.spec.model.onnx is not None
    assert loaded.spec.model.onnx.cid == cid_for_bytes(data) and store.get(loaded.spec.model.onnx.cid) == data
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07 not onnx")
    (tmp_path / "spec.json").write_text(json.dumps({**spec, "model": {"family": "onnx", "file": "bad.onnx"}}))
    with pytest.raises(SpecError, match=r"bad\.onnx: model\.onnx: "):
        load_spec(tmp_path / "spec.json", store)


@pytest.mark.parametrize("kind", KINDS)
def test_every_op_of_an_onnx_step_opens_and_recomputes_as_a_dispute_needs(kind: str) -> None:
    """The dispute game's off-chain side on a custom model: any op's output element recomputes from its inputs,
    every op leaf opens as the contract rebuilds it, and a dot op's operands are the elements it reads."""
    from gensyn_py.proof.onchain_trace import DOT_OPS, dot_operands, open_op
    from gensyn_py.proof.trace import check_element

    t = Trainer(onnx_spec(kind), dataset_of(kind), 0, 0, "cpu")
    t.run(1)
    tr = trace_step(t)
    rng = np.random.default_rng(0)
    codes = set()
    for i, op in enumerate(tr.ops):
        if op.code == "input" or not tr.values[i].size:
            continue
        codes.add(op.code)
        assert check_element(tr, i, int(rng.integers(tr.values[i].size))), (i, op.code)
        assert open_op(tr, i).leaf() == tr.op_leaf(i), (i, op.code)
        if op.code in DOT_OPS:
            d = dot_operands(tr, i, tr.values[i].size // 2, 0)
            assert d.length > 0
    assert {"matmul", "sum", "permute", "narrow", "cat", "take" if kind == "cnn" else "embed"} <= codes
