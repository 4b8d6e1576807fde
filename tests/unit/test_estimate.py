"""`gensyn job estimate`'s arithmetic: parameter counts, FLOPs, time, tokens and cloud cost. No chain."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gensyn_py.cli.main import cli
from gensyn_py.devnet.deploy import DEFAULT_PARAMS
from gensyn_py.errors import ConfigError
from gensyn_py.requester.amounts import E18, format_tokens, parse_tokens
from gensyn_py.requester.estimate import HARDWARE, HardwareClass, estimate, load_hardware
from gensyn_py.requester.pricing import PoolParams, escrow_for, unit_count
from gensyn_py.train.flops import param_count, spec_costs, train_flops_per_example
from gensyn_py.train.models import build_model, make_config
from gensyn_py.train.spec import JobSpec, parse_spec
from tests.unit.trainkit import spec_dict

POOL = PoolParams.from_mapping(DEFAULT_PARAMS)  # 2 validators per unit, fee 10 tokens, challenge window 60 s
# One made-up machine with round numbers: 1 GFLOP/s, 1 ms per step, $3.60 an hour.
ROUND = HardwareClass("round", "cpu", 1e9, 3.6, 0.001)


def spec_of(family: str = "mlp", **over: Any) -> JobSpec:
    return parse_spec(spec_dict(family, **over))


@pytest.mark.parametrize(
    ("family", "sizes"),
    [
        ("mlp", {}), ("mlp", {"hidden": 48, "depth": 3, "in_features": 20, "num_classes": 7}),
        ("cnn", {}), ("cnn", {"channels": 5, "image_size": 12, "num_classes": 3}),
        ("transformer", {}), ("transformer", {"vocab_size": 50, "seq_len": 24, "d_model": 48, "n_heads": 4,
                                              "n_layers": 3}),
    ],
)
def test_parameter_count_matches_the_registry_model(family: str, sizes: dict[str, int]) -> None:
    model = build_model(family, sizes)
    assert param_count(make_config(family, sizes)) == sum(p.numel() for p in model.parameters())


def test_mlp_flops_are_six_per_parameter_per_example() -> None:
    spec = spec_of("mlp", batch_size=32)  # 64 -> 16 -> 10
    params = 64 * 16 + 16 + 16 * 10 + 10
    assert spec_costs(spec) == (params, 6 * params * 32)


def test_cnn_counts_each_conv_weight_at_every_pixel() -> None:
    cfg = make_config("cnn", {"channels": 4})  # 8x8 images, 10 classes
    conv = (9 * 4 + 9 * 4 * 4) * 64
    linear = 4 * 4 * 4 * 10
    assert train_flops_per_example(cfg) == 6 * (conv + linear)


def test_transformer_flops_scale_with_the_dataset_sequence_length() -> None:
    spec = spec_of("transformer", batch_size=4)  # the synthetic tokens are 16 long; d_model 16, 1 layer
    params = param_count(make_config("transformer", {"d_model": 16}))
    per_token = 6 * params + 6 * 1 * 16 * 16
    assert spec_costs(spec) == (params, per_token * 16 * 4)


def test_estimate_adds_up_training_verification_aggregation_and_tokens() -> None:
    spec = spec_of("mlp", rounds=2, shards=3, steps_per_unit=8, checkpoint_interval=2, batch_size=16)
    params, per_step = spec_costs(spec)
    est = estimate(spec, 7 * E18, POOL, (ROUND,))

    assert est.units == unit_count(2, 3) == 8 and est.training_units == 6
    assert est.training_flops == per_step * 8 * 6
    assert est.verification_flops == per_step * 2 * 2 * 6  # 2 validators x one 2-step segment x 6 units
    assert est.aggregation_flops == 2 * params * 3 * 2 * 3  # 2 rounds, each aggregated once and replayed twice
    assert est.total_flops == est.training_flops + est.verification_flops + est.aggregation_flops
    assert est.escrow == escrow_for(2, 3, 7 * E18, POOL) == 8 * (7 + 2 * 10) * E18
    assert est.max_solver_pay == 8 * 7 * E18 and est.max_validator_fees == 8 * 2 * 10 * E18
    assert est.protocol_wait_s == 4 * 60  # 2 rounds x (training + aggregation phase) x challenge window

    (hw,) = est.hardware
    step_s = per_step / 1e9 + 0.001
    assert hw.unit_s == pytest.approx(8 * step_s)
    assert hw.wall_s == pytest.approx(2 * (8 * step_s + 2 * step_s + 2 * params * 3 / 1e9))
    assert hw.cloud_usd == pytest.approx(6 * 8 * step_s / 3600 * 3.6)
    assert hw.compute_s == pytest.approx(6 * (8 + 4) * step_s + 2 * 3 * (2 * params * 3 / 1e9))


def test_single_shard_jobs_have_no_aggregation_cost() -> None:
    est = estimate(spec_of("mlp", rounds=3, shards=1), 10 * E18, POOL, (ROUND,))
    assert est.aggregation_flops == 0 and est.units == 3 and est.protocol_wait_s == 3 * 60


def test_cpu_throughput_and_price_scale_with_the_spec_threads() -> None:
    cpu = next(h for h in HARDWARE if h.name == "cpu")
    one = estimate(spec_of("mlp", threads=1), E18, POOL, (cpu,)).hardware[0]
    four = estimate(spec_of("mlp", threads=4), E18, POOL, (cpu,)).hardware[0]
    compute_part = one.unit_s - 8 * cpu.step_overhead_s  # 8 steps per unit
    assert four.unit_s == pytest.approx(compute_part / 4 + 8 * cpu.step_overhead_s)
    assert four.cloud_usd == pytest.approx(four.unit_s * 4 * 4 * cpu.usd_per_hour / 3600)  # 4 units x 4 threads


def test_repro_mode_is_slower_by_the_stated_factor() -> None:
    exact = estimate(spec_of("mlp"), E18, POOL, (ROUND,))
    repro = estimate(spec_of("mlp", mode="repro"), E18, POOL, (ROUND,))
    assert repro.total_flops == exact.total_flops
    assert repro.hardware[0].unit_s == pytest.approx(ROUND.repro_slowdown * exact.hardware[0].unit_s)


def test_only_hardware_of_the_spec_device_class_is_eligible() -> None:
    cpu_job = estimate(spec_of("mlp"), E18, POOL)
    cuda_job = estimate(spec_of("mlp", hardware={"device_class": "cuda"}), E18, POOL)
    assert {h.name for h in cpu_job.hardware if h.eligible} == {"cpu"}
    assert {h.name for h in cuda_job.hardware if h.eligible} == {"cuda-consumer", "a100", "h100"}


def test_the_hardware_table_can_be_overridden_and_extended(tmp_path: Path) -> None:
    path = tmp_path / "hw.json"
    path.write_text(json.dumps({"h100": {"usd_per_hour": 2.0},
                                "l4": {"device_class": "cuda", "flops_per_s": 3e13, "usd_per_hour": 0.8,
                                       "step_overhead_s": 0.002}}))
    table = {h.name: h for h in load_hardware(path)}
    assert table["h100"].usd_per_hour == 2.0 and table["h100"].flops_per_s == 30e12
    assert table["l4"].usd_per_hour == 0.8
    path.write_text(json.dumps({"h100": {"price": 2.0}}))
    with pytest.raises(ConfigError, match="fields from"):
        load_hardware(path)


def test_token_amounts_parse_and_print_exactly() -> None:
    assert parse_tokens("12.5") == 12_500_000_000_000_000_000
    assert parse_tokens("0.000000000000000001") == 1
    assert format_tokens(12_500_000_000_000_000_000) == "12.50"
    for bad in ("-1", "abc", "1e-19", "nan"):
        with pytest.raises(ConfigError):
            parse_tokens(bad)


def test_estimate_command_prints_a_table_and_json_offline(tmp_path: Path) -> None:
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps(spec_dict("mlp", rounds=2, shards=2)))
    env = {"GENSYN_DEPLOYMENTS_DIR": str(tmp_path), "GENSYN_CHAIN_ID": "", "GENSYN_RPC_URL": "http://127.0.0.1:9"}

    table = CliRunner().invoke(cli, ["job", "estimate", str(spec), "--max-price", "4"], env=env)
    assert table.exit_code == 0, table.output
    assert "h100" in table.output and "protocol defaults" in table.output

    shown = CliRunner().invoke(cli, ["job", "estimate", str(spec), "--max-price", "4", "--json"], env=env)
    data = json.loads(shown.output)
    assert data["units"] == 6 and data["tokens"]["escrow"] == str(6 * (4 + 20) * E18)
    assert data["tokens"]["maxSolverPay"] == str(6 * 4 * E18) and data["hardware"][0]["cloudUsd"] > 0
    assert data["flops"]["total"] == sum(data["flops"][k] for k in ("training", "verification", "aggregation"))
    assert {h["name"] for h in data["hardware"]} == {"cpu", "cuda-consumer", "a100", "h100"}


def test_estimate_rejects_a_bad_spec(tmp_path: Path) -> None:
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps(spec_dict("mlp", checkpoint_interval=3)))
    result = CliRunner().invoke(cli, ["job", "estimate", str(spec)])
    assert result.exit_code == 1
    assert "checkpoint_interval 3 must divide steps_per_unit 8" in result.stderr


def test_estimate_shows_both_verification_modes_side_by_side(tmp_path: Path) -> None:
    """repro (the default) and exact: the same tokens, repro `repro_slowdown` times slower, exact replayed only
    within the solver's replay class."""
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({k: v for k, v in spec_dict("mlp").items() if k != "mode"}))  # the default mode
    env = {"GENSYN_DEPLOYMENTS_DIR": str(tmp_path), "GENSYN_CHAIN_ID": "", "GENSYN_RPC_URL": "http://127.0.0.1:9"}
    table = CliRunner().invoke(cli, ["job", "estimate", str(spec)], env=env)
    assert table.exit_code == 0, table.output
    assert "repro *" in table.output and "exact" in table.output and "this spec's mode" in table.output
    assert "solver's replay class" in " ".join(table.output.split())
    data = json.loads(CliRunner().invoke(cli, ["job", "estimate", str(spec), "--json"], env=env).output)
    assert data["mode"] == "repro"
    repro, exact = data["modes"]
    assert (repro["mode"], exact["mode"]) == ("repro", "exact") and repro["hardware"] == exact["hardware"] == "cpu"
    cpu = next(h for h in HARDWARE if h.name == "cpu")
    assert repro["unitS"] == pytest.approx(exact["unitS"] * cpu.repro_slowdown)


def test_a_spec_without_a_mode_is_repro() -> None:
    d = spec_dict("mlp")
    d.pop("mode", None)
    assert parse_spec(d).mode == "repro"
