"""A repro step runs without torch's NaN fill of fresh memory (repro/unfilled.py), and the process-wide switch is
restored by the last step to leave, whatever the threads."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import torch.utils.deterministic as _det

from gensyn_py.repro import unfilled
from gensyn_py.repro.unfilled import unfilled_memory
from gensyn_py.train import repro_step
from gensyn_py.train.trainer import Trainer
from tests.unit.trainkit import dataset_for, tiny_spec

det: Any = _det  # the switch is not in torch's type stubs


@pytest.fixture(autouse=True)
def fill_on() -> Iterator[None]:
    was = det.fill_uninitialized_memory
    det.fill_uninitialized_memory = True
    yield
    det.fill_uninitialized_memory = was


@pytest.mark.parametrize("before", [True, False])
def test_the_switch_is_off_inside_and_as_found_after(before: bool) -> None:
    det.fill_uninitialized_memory = before
    with unfilled_memory():
        assert det.fill_uninitialized_memory is False
    assert det.fill_uninitialized_memory is before
    with pytest.raises(RuntimeError), unfilled_memory():
        raise RuntimeError("a failing step")
    assert det.fill_uninitialized_memory is before


def test_overlapping_steps_in_threads_restore_the_fill_when_the_last_leaves() -> None:
    """A leaves while B is inside: the fill stays off for B; B leaves last and restores it. A plain save and
    restore per step would leave it off (B saved False) or turn it on under B (A restored True)."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def a() -> None:
        with unfilled_memory():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with unfilled_memory():
            b_in.set()
            a_out.wait(5)
            seen["b after a left"] = det.fill_uninitialized_memory

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"b after a left": False}
    assert det.fill_uninitialized_memory is True and unfilled._inside == 0


def test_a_repro_training_step_runs_unfilled_and_an_exact_one_filled(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = repro_step.train_step

    def watched(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(det.fill_uninitialized_memory)
        return real(*args, **kwargs)

    monkeypatch.setattr(repro_step, "train_step", watched)
    ds = dataset_for("mlp")
    Trainer(tiny_spec("mlp", mode="repro"), ds, 0, 0, "cpu").run(2)
    assert seen == [False, False] and det.fill_uninitialized_memory is True
    Trainer(tiny_spec("mlp", mode="exact"), ds, 0, 0, "cpu").run(1)
    assert det.fill_uninitialized_memory is True
