"""Job spec validation, canonical encoding and spec hash."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from gensyn_py.errors import SpecError
from gensyn_py.train.spec import canonical_json, parse_spec
from tests.unit.trainkit import spec_dict, tiny_spec


@pytest.mark.parametrize("family", ["mlp", "cnn", "transformer"])
def test_valid_spec_parses_for_every_family(family: str) -> None:
    spec = tiny_spec(family)
    assert spec.version == 1
    assert spec.num_segments == 4


def test_spec_hash_is_keccak_of_sorted_compact_json() -> None:
    from eth_hash.auto import keccak

    spec = tiny_spec()
    raw = spec.canonical_bytes()
    assert raw == json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":")).encode()
    assert spec.spec_hash() == keccak(raw)
    assert len(spec.spec_hash()) == 32


def test_spec_hash_ignores_key_order_and_defaults_are_explicit() -> None:
    d = spec_dict()
    reordered = dict(reversed(list(d.items())))
    assert parse_spec(reordered).spec_hash() == parse_spec(d).spec_hash()
    assert parse_spec(tiny_spec().canonical_bytes()).spec_hash() == tiny_spec().spec_hash()


def test_a_fine_tune_names_its_parent_and_a_spec_without_one_keeps_its_bytes() -> None:
    d = spec_dict()
    plain = parse_spec(d)
    assert b'"init"' not in plain.canonical_bytes() and plain.init is None  # the bytes (and hash) it always had
    tuned = parse_spec({**d, "init": {"parent_job": 7}})
    assert tuned.init is not None and tuned.init.parent_job == 7
    assert b'"init":{"parent_job":7}' in tuned.canonical_bytes() and tuned.spec_hash() != plain.spec_hash()
    assert parse_spec(tuned.canonical_bytes()) == tuned
    for bad, why in (({"parent_job": 0}, "init.parent_job"), ({"parent_job": "7"}, "init.parent_job"),
                     ({}, "init.parent_job"), ({"parent_job": 7, "weights": "x"}, "init.weights")):
        with pytest.raises(SpecError, match=why):
            parse_spec({**d, "init": bad})


def test_spec_hash_changes_with_any_field() -> None:
    assert tiny_spec(seed=8).spec_hash() != tiny_spec().spec_hash()
    assert tiny_spec(threads=2).spec_hash() != tiny_spec().spec_hash()


def _with(path: str, value: Any) -> dict[str, Any]:
    d = copy.deepcopy(spec_dict())
    *parents, last = path.split(".")
    node = d
    for p in parents:
        node = node[p]
    node[last] = value
    return d


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        ("mode", "fast", "mode"),
        ("checkpoint_interval", 3, "must divide"),
        ("checkpoint_interval", 0, "checkpoint_interval"),
        ("steps_per_unit", -1, "steps_per_unit"),
        ("batch_size", 0, "batch_size"),
        ("seed", -1, "seed"),
        ("threads", 0, "threads"),
        ("rounds", 0, "rounds"),
        ("shards", 100000, "shards"),
        ("model.family", "resnet", "unknown model family"),
        ("model.sizes", {"hidden": 0}, "positive integer"),
        ("model.sizes", {"width": 3}, "unknown sizes"),
        ("optimizer.name", "lion", "optimizer.name"),
        ("optimizer.lr", 0.0, "optimizer.lr"),
        ("optimizer.momentum", 1.5, "optimizer.momentum"),
        ("optimizer.weight_decay", -0.1, "optimizer.weight_decay"),
        ("schedule.kind", "step", "schedule.kind"),
        ("schedule.warmup_steps", 10_000, "warmup_steps"),
        ("hardware.device_class", "tpu", "hardware.device_class"),
        ("hardware.min_memory_mb", -5, "min_memory_mb"),
        ("dataset.cid", "not a cid!", "dataset.cid"),
        ("dataset.cid", "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", "CIDv1 in base32"),
        ("dataset.x_dtype", "float16", "dataset.x_dtype"),
        ("dataset.x_shape", [0, 8], "positive"),
        ("dataset.num_examples", 0, "num_examples"),
        ("dataset.size_bytes", 10**12, "size_bytes"),
        ("version", 2, "unsupported spec version"),
        ("code", "import os", "code"),
    ],
)
def test_bad_field_gives_clear_spec_error(path: str, value: Any, fragment: str) -> None:
    with pytest.raises(SpecError, match=fragment.replace(".", r"\.")):
        parse_spec(_with(path, value))


@pytest.mark.parametrize("family", ["mlp", "cnn", "transformer"])
def test_repro_mode_is_accepted_and_hashed_apart_from_exact(family: str) -> None:
    spec = tiny_spec(family, mode="repro")
    assert spec.mode == "repro"
    assert spec.spec_hash() != tiny_spec(family).spec_hash()


def test_repro_mode_rejects_contractions_beyond_the_exact_rule() -> None:
    # 2048 sequences x 16 positions = 32768 rows in the gradient matmuls, over the 2**14 the rule allows
    with pytest.raises(SpecError, match="contractions up to 16384"):
        tiny_spec("transformer", mode="repro", batch_size=2048)
    tiny_spec("transformer", batch_size=2048)  # exact mode has no such limit


def test_transformer_heads_must_divide_width() -> None:
    d = spec_dict("transformer")
    d["model"]["sizes"] = {"d_model": 10, "n_heads": 3}
    with pytest.raises(SpecError, match="not divisible"):
        parse_spec(d)


def test_non_json_and_non_object_rejected() -> None:
    with pytest.raises(SpecError, match="not valid JSON"):
        parse_spec(b"{nope")
    with pytest.raises(SpecError, match="JSON object"):
        parse_spec(b"[1, 2]")


def test_string_where_number_expected_rejected() -> None:
    with pytest.raises(SpecError, match="batch_size"):
        parse_spec(_with("batch_size", "16"))


def test_canonical_json_rejects_nan() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_spec_hash_covers_the_exact_stored_bytes_whatever_their_formatting() -> None:
    """A spec as an outside client writes it (indented, `0` for a float, keys in its own order) is the spec
    whose hash is keccak256 of those bytes; the same content in canonical form hashes differently."""
    from gensyn_py.crypto.hashing import keccak256
    from gensyn_py.train.spec import parse_spec_bytes

    d = spec_dict()
    d["optimizer"]["weight_decay"] = 0
    raw = json.dumps(dict(reversed(list(d.items()))), indent=2).encode()
    spec = parse_spec_bytes(raw, keccak256(raw))
    assert spec.spec_hash() == keccak256(raw)
    assert spec.optimizer.weight_decay == 0.0
    assert parse_spec(raw).spec_hash() == keccak256(spec.canonical_bytes()) != keccak256(raw)


def test_spec_bytes_that_do_not_hash_to_the_on_chain_hash_are_refused_before_parsing() -> None:
    from gensyn_py.crypto.hashing import keccak256
    from gensyn_py.train.spec import parse_spec_bytes

    raw = b"not even json"
    with pytest.raises(SpecError, match="not to the on-chain spec hash") as e:
        parse_spec_bytes(raw, keccak256(b"something else"))
    assert "0x" + keccak256(raw).hex() in str(e.value)


def test_a_key_written_twice_is_refused() -> None:
    # Python keeps the last value, other JSON readers the first: the same bytes would mean two specs.
    text = canonical_json(spec_dict()).decode()
    doubled = text.replace('"seed":', '"seed":7,"seed":', 1)
    with pytest.raises(SpecError, match="repeats the key 'seed'"):
        parse_spec(doubled)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_json_number_literals_are_refused(literal: str) -> None:
    text = canonical_json(spec_dict()).decode().replace('"lr":0.1', f'"lr":{literal}', 1)
    assert literal in text
    with pytest.raises(SpecError, match=f"holds {literal}"):
        parse_spec(text)
