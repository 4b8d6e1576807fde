"""The README's real-work examples (examples/workloads.py) end to end on a local market at a small size: an
ONNX ResNet-style CNN on a packed image folder, an ONNX GPT-style LM on a packed text corpus, and a fine-tune
of the LM's verified result; each learns, and nobody is slashed."""

from __future__ import annotations

from pathlib import Path

from examples.workloads import run
from tests.integration.market_kit import TEST_PARAMS


def test_the_three_workload_examples_run_end_to_end_and_learn(tmp_path: Path) -> None:
    said: list[str] = []
    # the tests' shorter windows, and both models shrunk
    report = run(tmp_path, steps=20, say=said.append, windows=TEST_PARAMS, tiny=True)
    by_name = {j.name: j for j in report.jobs}
    assert set(by_name) == {"cnn", "lm", "fine-tune"}
    for job in report.jobs:
        assert job.loss_after < job.loss_before, job  # each job's verified model learned from where it started
    lm, tuned = by_name["lm"], by_name["fine-tune"]
    assert tuned.loss_before == lm.loss_after  # the fine-tune started from the LM job's verified result
    assert report.slashed == []
    assert any("packing the data" in line for line in said)
