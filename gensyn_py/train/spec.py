"""The versioned job spec (version 1): declarative, validated, canonically hashed.

Nothing a requester sends is executed or unpickled: a spec is plain JSON
checked field by field against the model registry and fixed enumerations.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from gensyn_py.errors import SpecError
from gensyn_py.types import MAX_ROUNDS, MAX_SEGMENTS, MAX_SHARDS, MAX_STEPS_PER_UNIT

SPEC_VERSION = 1
MAX_DATASET_BYTES = 512 * 1024 * 1024  # a dataset in one file, decoded whole; larger ones are chunked
MAX_CHUNKED_DATASET_BYTES = 2**40  # a chunked one: a node holds only the chunks its steps read (train/chunks.py)
MAX_EXAMPLES = 10_000_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _cidv1(v: str) -> str:
    # Stores name content by its CIDv1 in base32 (docs/formats.md); a CIDv0 `Qm...` or any other
    # spelling can never be fetched, so it is refused here rather than retried at every node.
    if not re.fullmatch(r"b[a-z2-7]+", v):
        raise ValueError(f"must be a CIDv1 in base32 ('b' then a-z, 2-7), as `ipfs add --cid-version=1` "
                         f"prints it; got {v[:24]!r}")
    return v


# A content id as every store prints it; the one spelling of a CID field in specs and manifests.
CidV1 = Annotated[str, Field(min_length=8, max_length=128), AfterValidator(_cidv1)]


class OnnxModelRef(_Strict):
    """A requester's own architecture: an ONNX model file by CID (`gensyn_py/train/graphs`), never run as code."""

    cid: CidV1
    size_bytes: int = Field(gt=0, le=2**31 - 1)



class ModelSpec(_Strict):
    """A registry family with its sizes, or `family: "onnx"` with the model file in `onnx`."""

    family: str
    sizes: dict[str, int] = Field(default_factory=dict)
    # None for the registry families, and absent from their dumps (their specs keep the bytes they had)
    onnx: OnnxModelRef | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _known(self) -> ModelSpec:
        from gensyn_py.train.models import ONNX, make_config

        if self.family == ONNX:
            if self.onnx is None:
                raise ValueError("family 'onnx' needs model.onnx: {cid, size_bytes} of the model file")
            if self.sizes:
                raise ValueError("family 'onnx' takes no sizes: the model file fixes them")
            return self
        if self.onnx is not None:
            raise ValueError(f"model.onnx applies to family 'onnx' only, not {self.family!r}")
        make_config(self.family, self.sizes)
        return self


class OptimizerSpec(_Strict):
    name: Literal["sgd", "adamw"]
    lr: float = Field(gt=0, le=10)
    momentum: float = Field(default=0.0, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0, lt=1)
    beta1: float = Field(default=0.9, ge=0, lt=1)
    beta2: float = Field(default=0.999, ge=0, lt=1)
    eps: float = Field(default=1e-8, gt=0, lt=1)


class ScheduleSpec(_Strict):
    kind: Literal["constant", "cosine", "linear_warmup"] = "constant"
    warmup_steps: int = Field(default=0, ge=0)
    min_lr_ratio: float = Field(default=0.0, ge=0, le=1)


class AggregationSpec(_Strict):
    """How a sharded round's unit results become the next global model (gensyn_py/proof/aggregation.py).

    `average`: their weighted average (FedAvg).  `diloco`: an outer Nesterov step with `outer_lr` and
    `outer_momentum` over the averaged parameter delta, the outer momentum carried across rounds in the
    aggregate.  `inner_state`: what a shard's next-round unit starts its optimizer with: `reset` (fresh)
    or `carry` (the optimizer state its shard's unit ended the previous round with)."""

    rule: Literal["average", "diloco"] = "average"
    outer_lr: float = Field(default=0.7, gt=0, le=10)
    outer_momentum: float = Field(default=0.9, ge=0, lt=1)
    inner_state: Literal["reset", "carry"] = "reset"


class HardwareSpec(_Strict):
    device_class: Literal["cpu", "cuda"] = "cpu"
    min_memory_mb: int = Field(default=0, ge=0)


class DatasetSpec(_Strict):
    cid: CidV1
    x_shape: list[int] = Field(min_length=1, max_length=4)
    x_dtype: Literal["float32", "int64"]
    y_shape: list[int] = Field(default_factory=list, max_length=4)
    num_examples: int = Field(gt=0, le=MAX_EXAMPLES)
    size_bytes: int = Field(gt=0, le=MAX_CHUNKED_DATASET_BYTES)
    # None: `cid` is one dataset file. Else `cid` is a chunk manifest and each chunk holds this many examples
    # (train/chunks.py); absent from the dumps of single-file entries, whose bytes and hashes stay as they were.
    chunk_examples: int | None = Field(default=None, gt=0, exclude_if=lambda v: v is None)


    @model_validator(mode="after")
    def _one_file_fits(self) -> DatasetSpec:
        if self.chunk_examples is None and self.size_bytes > MAX_DATASET_BYTES:
            raise ValueError(f"size_bytes {self.size_bytes:,}: a dataset in one file is at most "
                             f"{MAX_DATASET_BYTES:,} bytes; store a larger one in chunks "
                             f"(`gensyn data pack --chunk-examples N`, chunk_examples)")
        return self

    @field_validator("x_shape", "y_shape")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(d <= 0 for d in v):
            raise ValueError(f"every dimension must be positive, got {v}")
        return v


class StepTableRef(_Strict):
    """The step table a requester published for a repro job (`gensyn_py/proof/published_table.py`), so that each node
    checks only its own unit's entries instead of reading every unit's batches."""

    cid: CidV1
    size_bytes: int = Field(gt=0, le=2**36)



class InitSpec(_Strict):
    """Where round 0 starts instead of the seeded init: the final model of a previous job on the same deployment
    (`parent_job`, a fine-tune). Every node checks it before training or replaying: the parent is completed, it
    trained the same model, and its final model's bytes match the parent's on-chain final state hash. The
    optimizer starts fresh."""

    parent_job: int = Field(ge=1)


class JobSpec(_Strict):
    """Everything needed to train and verify a job, and nothing executable."""

    version: Literal[1] = 1
    model: ModelSpec
    optimizer: OptimizerSpec
    schedule: ScheduleSpec = Field(default_factory=ScheduleSpec)
    batch_size: int = Field(gt=0, le=65536)
    steps_per_unit: int = Field(gt=0, le=MAX_STEPS_PER_UNIT)
    checkpoint_interval: int = Field(gt=0)
    seed: int = Field(ge=0, lt=2**63)
    rounds: int = Field(default=1, gt=0, le=MAX_ROUNDS)
    shards: int = Field(default=1, gt=0, le=MAX_SHARDS)
    aggregation: AggregationSpec = Field(default_factory=AggregationSpec)
    # `repro` (deterministic kernels) is bit-exact on any machine, so it is honest on a network of mixed hardware;
    # `exact` (stock kernels, faster) is bit-exact only within one replay class (gensyn_py/node/replay_class.py).
    mode: Literal["exact", "repro"] = "repro"
    threads: int = Field(default=1, gt=0, le=256)
    hardware: HardwareSpec = Field(default_factory=HardwareSpec)
    dataset: DatasetSpec
    # None: the seeded init, and absent from every dump (specs without it keep the bytes, so the hashes, they had)
    init: InitSpec | None = Field(default=None, exclude_if=lambda v: v is None)
    # None: nodes rebuild the whole step table; absent from every dump (older specs keep their bytes)
    step_table: StepTableRef | None = Field(default=None, exclude_if=lambda v: v is None)
    # keccak256 of the exact bytes this spec was parsed from (`parse_spec_bytes`): the on-chain spec hash.
    _source_hash: bytes | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _consistent(self) -> JobSpec:
        if self.mode == "repro" and self.model.onnx is None:  # a graph's contractions: checked when it is fetched
            from gensyn_py.repro.opset import MAX_K
            from gensyn_py.train.models import family, make_config

            k = family(self.model.family).repro_max_k(make_config(self.model.family, self.model.sizes),
                                                      self.batch_size)
            if k > MAX_K:
                raise ValueError(f"mode 'repro' supports contractions up to {MAX_K} (batch x positions, widths); "
                                 f"this job needs {k}")
        if self.steps_per_unit % self.checkpoint_interval:
            raise ValueError(
                f"checkpoint_interval {self.checkpoint_interval} must divide "
                f"steps_per_unit {self.steps_per_unit}"
            )
        if self.steps_per_unit // self.checkpoint_interval > MAX_SEGMENTS:
            raise ValueError(f"{self.steps_per_unit // self.checkpoint_interval} checkpoint segments per unit; "
                             f"at most {MAX_SEGMENTS}")
        if self.schedule.warmup_steps > self.steps_per_unit * self.rounds:
            raise ValueError("schedule.warmup_steps exceeds the job's total steps")
        if self.aggregation != AggregationSpec() and self.shards < 2:
            raise ValueError("aggregation settings apply to sharded jobs only (shards >= 2): one shard's unit "
                             "result is the round's model")
        if self.step_table is not None and self.mode != "repro":
            raise ValueError("step_table applies to mode 'repro' only: an exact job has no step table")
        if self.dataset.num_examples < self.shards:
            raise ValueError(f"{self.dataset.num_examples} examples cannot fill {self.shards} shards")
        return self

    def __eq__(self, other: object) -> bool:
        """Specs are equal by content; where a spec was parsed from (its source hash) is not content."""
        if not isinstance(other, JobSpec):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    def __hash__(self) -> int:
        return hash(self.canonical_bytes())

    @property
    def num_segments(self) -> int:
        return self.steps_per_unit // self.checkpoint_interval

    def canonical_bytes(self) -> bytes:
        """Sorted-key compact JSON, UTF-8: the bytes a requester stores (and hashes) for a spec it built."""
        return canonical_json(self.model_dump(mode="json"))

    def spec_hash(self) -> bytes:
        """The bytes32 spec hash used on-chain: keccak256 of the exact bytes stored under the job's specCid.

        For a spec parsed from those bytes (`parse_spec_bytes`) that is their hash, whatever their formatting;
        for one built here, the hash of its canonical bytes, which is what the requester stores."""
        if self._source_hash is not None:
            return self._source_hash
        from gensyn_py.crypto.hashing import keccak256

        return keccak256(self.canonical_bytes())


def canonical_json(obj: Any) -> bytes:
    """Sorted keys, no whitespace, ASCII only, no NaN."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def _describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "spec"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


def parse_spec_bytes(data: bytes, expected_hash: bytes | None = None) -> JobSpec:
    """Parse the exact bytes stored under a job's specCid; the spec's hash is then keccak256 of those bytes.

    With `expected_hash` (the on-chain spec hash), the bytes are checked before they are parsed."""
    from gensyn_py.crypto.hashing import keccak256

    digest = keccak256(data)
    if expected_hash is not None and digest != expected_hash:
        raise SpecError(f"the spec bytes hash to 0x{digest.hex()}, "
                        f"not to the on-chain spec hash 0x{expected_hash.hex()}")
    spec = parse_spec(data)
    spec._source_hash = digest  # a private attribute: allowed on the frozen model
    return spec


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique: a spec with a key twice means two things to two parsers."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise SpecError(f"job spec repeats the key {key!r}")
        obj[key] = value
    return obj


def _no_constant(name: str) -> Any:
    raise SpecError(f"job spec holds {name}, which is not JSON")


def parse_spec(data: bytes | str | dict[str, Any]) -> JobSpec:
    """Parse and validate a spec from JSON (bytes/str) or a dict; SpecError on anything wrong."""
    try:
        obj = json.loads(data, object_pairs_hook=_unique_keys, parse_constant=_no_constant) \
            if isinstance(data, bytes | str) else data
        if not isinstance(obj, dict):
            raise SpecError("job spec must be a JSON object")
        if obj.get("version") not in (None, SPEC_VERSION):
            got = obj.get("version")
            raise SpecError(f"unsupported spec version {got!r}; this node speaks {SPEC_VERSION}")
        return JobSpec.model_validate(obj)
    except json.JSONDecodeError as e:
        raise SpecError(f"job spec is not valid JSON: {e}") from None
    except ValidationError as e:
        raise SpecError(f"invalid job spec: {_describe(e)}") from None
