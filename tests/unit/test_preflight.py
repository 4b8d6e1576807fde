"""The solver's preflight estimates: honest small jobs pass, oversized or too-slow ones do not."""

from __future__ import annotations

import pytest

from gensyn_py.node.hardware import HardwareProfile
from gensyn_py.node.preflight import UnfitJob, check_fit, check_labels, estimate
from tests.unit.trainkit import dataset_for, tiny_spec


@pytest.mark.parametrize("family", ["mlp", "cnn", "transformer"])
def test_a_small_job_fits_a_slow_small_node(family: str) -> None:
    spec = tiny_spec(family, steps_per_unit=100, checkpoint_interval=20)
    est = check_fit(spec, HardwareProfile("cpu", 512, 200), commit_window=60)
    assert est.params > 0 and est.flops_per_step > 0 and 0 < est.memory_mb < 50 and est.seconds < 30
    check_labels(spec, dataset_for(family))


def test_memory_grows_with_the_model_and_is_checked_against_the_node() -> None:
    small = estimate(tiny_spec(), 1000)
    big_spec = tiny_spec(model={"family": "mlp", "sizes": {"hidden": 1_000_000}})
    assert estimate(big_spec, 1000).memory_mb > 100 * small.memory_mb
    with pytest.raises(UnfitJob, match="MiB"):
        check_fit(big_spec, HardwareProfile("cpu", 1024, 1000), commit_window=None)


def test_time_is_checked_against_the_commit_window_with_a_margin() -> None:
    spec = tiny_spec(steps_per_unit=100_000, checkpoint_interval=1000)
    with pytest.raises(UnfitJob, match="commit window is 30 s"):
        check_fit(spec, HardwareProfile("cpu", 8000, 10_000), commit_window=30)
    check_fit(spec, HardwareProfile("cpu", 8000, 10_000), commit_window=3600)


def test_float_labels_for_a_classifier_are_refused() -> None:
    import numpy as np

    from gensyn_py.train.data import Dataset

    ds = dataset_for("mlp")
    spec = tiny_spec()
    check_labels(spec, ds)
    floats = Dataset(ds.x, np.asarray(ds.y).astype(np.float32))
    with pytest.raises(UnfitJob, match="labels are float32"):
        check_labels(spec, floats)
