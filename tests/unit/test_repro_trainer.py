"""The Trainer in mode `repro`: whole training segments are bit-identical across thread counts, processes
and the NumPy reference for every model family; the state layout, resume, commitments and replay work as
in mode `exact`; the digits MLP reaches the same accuracy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from gensyn_py.proof.replay import UnitRef, fetch_manifest, replay_segment
from gensyn_py.proof.state import decode_state, encode_state, state_hash, state_hash_of_bytes
from gensyn_py.repro.autograd import cross_entropy
from gensyn_py.repro.backend import TORCH
from gensyn_py.repro.reference import NUMPY, same_bits
from gensyn_py.repro.tape import Tape
from gensyn_py.sim.cheats import noisy_weights, solve
from gensyn_py.train.repro_step import ReproStep, loss_of, train_step
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import dataset_for, digits_flat, store_at, tiny_spec

FAMILIES = ["mlp", "cnn", "transformer"]
ADAMW = {"name": "adamw", "lr": 0.01, "weight_decay": 0.01}
ROOT = Path(__file__).resolve().parents[2]


def repro_spec(family: str, **over: Any) -> Any:
    return tiny_spec(family, mode="repro", **over)


def numpy_segment(t: Trainer, steps: int) -> tuple[list[float], Any, dict[str, Any]]:
    """The same steps as `t` would take, run by the NumPy reference from t's current state."""
    assert isinstance(t.engine, ReproStep)
    flat = t.engine.flat.numpy().copy()
    opt: dict[str, Any] = {k: v.numpy().copy() for k, v in t.engine.opt.items()}
    losses = []
    for s in range(t.step, t.step + steps):
        x, y = t.batch(s)
        loss, flat, opt = train_step(NUMPY, t.engine.prog, flat, opt, x.numpy(), y.numpy(), t.learning_rate(s))
        losses.append(float(np.asarray(loss).reshape(())))
    return losses, flat, opt


@pytest.mark.parametrize(("family", "optimizer"), [("mlp", None), ("cnn", None), ("transformer", None),
                                                   ("mlp", ADAMW), ("transformer", ADAMW)])
def test_segment_is_bit_identical_across_threads_and_the_numpy_reference(family: str, optimizer: Any) -> None:
    over = {"optimizer": optimizer} if optimizer else {}
    ds = dataset_for(family)
    one = Trainer(repro_spec(family, threads=1, **over), ds, 1, 1, "cpu")  # the thread count is set here
    n_losses, n_flat, n_opt = numpy_segment(one, 3)
    losses = one.run(3)
    assert torch.get_num_threads() == 1
    two = Trainer(repro_spec(family, threads=2, **over), ds, 1, 1, "cpu")
    assert two.run(3) == losses
    assert torch.get_num_threads() == 2
    assert encode_state(one.state_dict()) == encode_state(two.state_dict())
    assert n_losses == losses
    assert isinstance(one.engine, ReproStep)
    assert same_bits(n_flat, one.engine.flat.numpy())
    assert sorted(n_opt) == sorted(one.engine.opt)
    assert all(same_bits(np.asarray(n_opt[k]), one.engine.opt[k].numpy()) for k in n_opt)


def test_separate_process_gives_the_same_states_for_every_family() -> None:
    code = (
        "import json\n"
        "from gensyn_py.proof.state import state_hash\n"
        "from gensyn_py.train.trainer import Trainer\n"
        "from tests.unit.trainkit import dataset_for, tiny_spec\n"
        "out = {}\n"
        "for f in ['mlp', 'cnn', 'transformer']:\n"
        "    t = Trainer(tiny_spec(f, mode='repro'), dataset_for(f), 0, 0, 'cpu')\n"
        "    t.run(2)\n"
        "    out[f] = state_hash(t.state_dict()).hex()\n"
        "print(json.dumps(out))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300,
                         cwd=ROOT)
    child = json.loads(res.stdout.strip().splitlines()[-1])
    for f in FAMILIES:
        t = Trainer(repro_spec(f), dataset_for(f), 0, 0, "cpu")
        t.run(2)
        assert child[f] == state_hash(t.state_dict()).hex(), f


@pytest.mark.parametrize("optimizer", [None, ADAMW])
def test_resume_from_checkpoint_continues_bit_identically(optimizer: Any) -> None:
    spec = repro_spec("mlp", **({"optimizer": optimizer} if optimizer else {}))
    straight = Trainer(spec, digits_flat(), 1, 0, "cpu")
    straight_losses = straight.run(6)
    first = Trainer(spec, digits_flat(), 1, 0, "cpu")
    first_losses = first.run(2)
    saved = encode_state(first.state_dict())
    resumed = Trainer(spec, digits_flat(), 1, 0, "cpu")
    resumed.load_state_dict(decode_state(saved))
    assert first_losses + resumed.run(4) == straight_losses
    assert state_hash(resumed.state_dict()) == state_hash(straight.state_dict())


def test_state_keeps_the_exact_mode_layout() -> None:
    spec = repro_spec("transformer", optimizer=ADAMW)
    t = Trainer(spec, dataset_for("transformer"), 0, 1, "cpu")
    exact = Trainer(tiny_spec("transformer", optimizer=ADAMW), dataset_for("transformer"), 0, 1, "cpu")
    assert t.state_dict().keys() == exact.state_dict().keys()  # no optimizer state before the first step
    t.run(1)
    exact.run(1)
    keys, exact_keys = set(t.state_dict()), set(exact.state_dict())
    assert exact_keys <= keys
    assert keys - exact_keys == {k.replace("/step", f"/{b}") for k in exact_keys if k.endswith("/step")
                                 for b in ("beta1_power", "beta2_power")}
    assert all(t.state_dict()[k].shape == exact.state_dict()[k].shape for k in exact_keys)
    assert t.state_dict()["cursor"].tolist() == [0, 1, 1]


@pytest.mark.parametrize("family", FAMILIES)
def test_module_forward_and_autograd_match_the_tape_program(family: str) -> None:
    """trainer.model(x) (autograd functions) gives the program's bits, and so does loss.backward()."""
    t = Trainer(repro_spec(family), dataset_for(family), 0, 0, "cpu")
    assert isinstance(t.engine, ReproStep)
    x, y = t.batch(0)
    tape = Tape(TORCH)
    params = {n: tape.leaf(p.detach(), requires_grad=True, name=n) for n, p in t.model.named_parameters()}
    loss = loss_of(tape, t.engine.prog, params, x, y)
    grads = tape.backward(loss)
    out = t.model(x)
    logits = out.reshape(-1, out.shape[-1])
    assert torch.equal(cross_entropy(logits, y).view(1, 1), loss.value)
    cross_entropy(logits, y).backward()
    for n, p in t.model.named_parameters():
        assert p.grad is not None and same_bits(p.grad.numpy(), grads[n].numpy()), n
    with torch.no_grad():
        ref = Trainer(tiny_spec(family), dataset_for(family), 0, 0, "cpu").model(x)
        assert (t.model(x) - ref).abs().max().item() < 1e-4 * (1 + ref.abs().max().item())


def test_digits_mlp_reaches_the_exact_mode_accuracy() -> None:
    from gensyn_py.sim.walkthrough import demo_spec_dict
    from gensyn_py.train.data import dataset_entry, digits, to_tensors
    from gensyn_py.train.spec import parse_spec

    train, held = digits(image=False)
    x, y = to_tensors(held, np.arange(held.num_examples), "cpu")
    acc = {}
    for mode in ("exact", "repro"):
        spec = parse_spec({**demo_spec_dict(dataset_entry(train, train.to_bytes())), "mode": mode})
        t = Trainer(spec, train, 0, 0, "cpu")
        t.run(spec.steps_per_unit)
        with torch.no_grad():
            acc[mode] = (t.model(x).argmax(-1) == y).float().mean().item()
    assert acc["repro"] >= 0.90, acc
    assert abs(acc["repro"] - acc["exact"]) <= 0.02, acc


@pytest.mark.parametrize("family", FAMILIES)
def test_repro_unit_commits_and_replays_accepted(tmp_path: Path, family: str) -> None:
    spec, ds, store = repro_spec(family, steps_per_unit=4), dataset_for(family), store_at(tmp_path)
    c = solve(spec, ds, store, 42, 1, 0)
    manifest = fetch_manifest(store, c.manifest_cid)
    unit = UnitRef(42, 1, 0, c.checkpoint_root)
    for j in range(spec.num_segments):
        v = replay_segment(spec, ds, store, unit, manifest, j, "cpu")
        assert v.accept, v.reason


def test_repro_unit_with_altered_weights_is_rejected(tmp_path: Path) -> None:
    spec, store = repro_spec("mlp"), store_at(tmp_path)
    c = noisy_weights(spec, digits_flat(), store, 42, 0, 0)
    manifest = fetch_manifest(store, c.manifest_cid)
    unit = UnitRef(42, 0, 0, c.checkpoint_root)
    verdicts = [replay_segment(spec, digits_flat(), store, unit, manifest, j, "cpu") for j in range(spec.num_segments)]
    assert [v.accept for v in verdicts] == [True, False, False, True]
    assert state_hash_of_bytes(encode_state(Trainer(spec, digits_flat(), 0, 0, "cpu").state_dict())) == \
        manifest.state_hashes[0]


def test_flat_grads_copy_in_place_gives_the_cat_of_reshapes() -> None:
    """The torch backend's one-copy flat gradient (transposed and permuted views among them) equals the cat of
    reshapes that the other backends run, bit for bit; a backend that is not torch's runs the cat itself."""
    from gensyn_py.repro.backend import TORCH
    from gensyn_py.repro.reference import NUMPY
    from gensyn_py.train.repro_step import flat_grads

    gen = torch.Generator().manual_seed(5)
    grads = [torch.randn(7, 5, generator=gen).t(), torch.randn(3, generator=gen),
             torch.randn(2, 3, 4, generator=gen).permute(2, 0, 1), torch.randn(1, 6, generator=gen)]
    want = torch.cat([g.reshape(-1) for g in grads])
    got = flat_grads(TORCH, grads)
    assert got.is_contiguous() and torch.equal(got.view(torch.int32), want.view(torch.int32))
    ref = flat_grads(NUMPY, [g.numpy() for g in grads])
    assert np.array_equal(np.asarray(ref), want.numpy())
    kept: dict[str, Any] = {}
    first = flat_grads(TORCH, grads, kept)
    again = flat_grads(TORCH, [g * 2 for g in grads], kept)
    assert again.data_ptr() == first.data_ptr() == kept["grad"].data_ptr()  # the same buffer, step after step
    assert torch.equal(again, want * 2)
