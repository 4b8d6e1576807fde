"""A node's replay class (`gensyn_py.node.replay_class`): stable, canonical, and changed by every field that
decides exact-mode bits. No network: the CPU text is injected, nvidia-smi is only read when installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gensyn_py.crypto.hashing import keccak256
from gensyn_py.node.replay_class import (
    SCHEMA,
    ReplayClass,
    build_settings,
    class_id_of,
    cpu_fields,
    measure,
    short,
)

CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse4_1 sse4_2 avx avx2 fma avx512f avx512bw amx_tile amx_bf16 ht syscall
processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse4_1 sse4_2 avx avx2 fma avx512f avx512bw amx_tile amx_bf16 ht syscall
"""


@pytest.fixture
def cpuinfo(tmp_path: Path) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    return path


def test_the_measurement_is_stable_across_calls(cpuinfo: Path) -> None:
    a, b = measure("cpu", cpuinfo=cpuinfo), measure("cpu", cpuinfo=cpuinfo)
    assert a.description == b.description and a.class_id == b.class_id
    assert a.fields["schema"] == SCHEMA and a.fields["device"] == "cpu"
    assert a.fields["torch"] and a.fields["blas"] and a.fields["cpu_capability"]


def test_the_id_is_keccak_of_the_canonical_json_as_the_registry_computes_it(cpuinfo: Path) -> None:
    rc = measure("cpu", cpuinfo=cpuinfo)
    assert rc.description == json.dumps(dict(rc.fields), sort_keys=True, separators=(",", ":"))
    assert rc.class_id == keccak256(rc.description.encode()) and len(rc.class_id) == 32
    # Field order does not matter: the JSON is sorted.
    assert ReplayClass(dict(reversed(list(rc.fields.items())))).class_id == rc.class_id
    assert class_id_of("") == bytes(32)
    assert short(rc.class_id) == "0x" + rc.class_id[:6].hex()


@pytest.mark.parametrize("field,value", [
    ("torch", "2.99.0"), ("torch_commit", "deadbeef"), ("blas", "openblas"), ("cpu_capability", "SVE256"),
    ("cpu_model", "AMD EPYC 9654"), ("cpu_flags", "avx,avx2"), ("device", "cuda"),
])
def test_every_field_changes_the_class(cpuinfo: Path, field: str, value: str) -> None:
    base = measure("cpu", cpuinfo=cpuinfo)
    assert base.fields[field] != value
    assert measure("cpu", {field: value}, cpuinfo=cpuinfo).class_id != base.class_id


def test_gpu_fields_change_the_class() -> None:
    a = ReplayClass({"schema": SCHEMA, "device": "cuda", "gpu": "NVIDIA H100", "capability": "9.0",
                     "driver": "550.54", "cuda": "12.4", "cudnn": "90100"})
    for field, value in (("gpu", "NVIDIA A100"), ("capability", "8.0"), ("driver", "535.1"), ("cuda", "12.1"),
                         ("cudnn", "8902")):
        assert ReplayClass({**a.fields, field: value}).class_id != a.class_id
    assert "NVIDIA H100 sm_9.0" in a.summary()


def test_cpu_fields_keep_only_kernel_relevant_flags_sorted() -> None:
    f = cpu_fields(CPUINFO)
    assert f["cpu_model"] == "Intel(R) Xeon(R) Platinum 8480+"
    assert f["cpu_flags"] == "amx_bf16,amx_tile,avx,avx2,avx512bw,avx512f,fma,sse4_1,sse4_2"
    assert cpu_fields("") == {"cpu_model": "unknown", "cpu_flags": ""}


def test_build_settings_parses_torch_config() -> None:
    text = "PyTorch built with:\n  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, LAPACK_INFO=mkl, USE_CUDA=0, \n"
    assert build_settings(text) == {"BLAS_INFO": "mkl", "BUILD_TYPE": "Release", "LAPACK_INFO": "mkl", "USE_CUDA": "0"}
    assert build_settings("nothing here") == {}
