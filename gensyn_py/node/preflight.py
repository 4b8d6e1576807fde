"""Preflight: before a solver claims a unit it checks that it can finish it.

- the spec and dataset are fetched and checked against the chain (`JobContent`);
- the on-chain job shape matches the spec: the unit's round and shard lie inside
  the spec's, the pool's segment count for the unit is the spec's, and, when the
  `submitJob` call can be decoded from its transaction, rounds, shards, steps per
  unit, checkpoint interval and device class equal the spec's;
- the dataset's labels fit the model (classes, or the vocabulary of a language model);
- a repro job's on-chain step table root, when it has one, is the spec's and dataset's
  (`proof/step_table.py`): a dispute game judges the solver's steps against that table, so a
  solver that took a job with another table could lose a game while training exactly the spec;
- the model fits the node's memory: parameters x 4 bytes x (weights, gradients and
  two Adam moments) plus activations at the batch size, under 80% of `memory_mb`;
- the training fits the commit window at the node's measured throughput, with a margin.

A failed check raises `UnfitJob`; the solver quarantines the job and does not claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gensyn_py.errors import GensynError
from gensyn_py.types import AGGREGATION_SHARD, JobParams, Unit

if TYPE_CHECKING:
    from gensyn_py.node.hardware import HardwareProfile
    from gensyn_py.proof.step_table import StepTable
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec

BYTES_PER_VALUE = 4
STATE_FACTOR = 4  # weights, gradients, Adam's two moments
MEMORY_SHARE = 0.8  # of the node's measured memory a unit may use
TIME_MARGIN = 2.0  # the estimate times this must fit the window
STEP_OVERHEAD_S = 0.002  # Python and framework cost of one step, whatever its size


class UnfitJob(GensynError):
    """This node cannot finish this job: its content or shape is wrong, or it does not fit."""


@dataclass(frozen=True)
class Estimate:
    params: int
    flops_per_step: int
    memory_mb: float
    seconds: float


def estimate(spec: JobSpec, throughput_mflops: int) -> Estimate:
    """Parameters, FLOPs per step, memory (MiB) and seconds for one unit of `spec` on this node."""
    from gensyn_py.train.flops import spec_costs

    try:
        params, flops_per_step = spec_costs(spec)
    except TypeError:  # an unknown family: count nothing rather than refuse
        params, flops_per_step = 0, 0
    memory = (params * STATE_FACTOR + 2 * batch_activations(spec)) * BYTES_PER_VALUE / 2**20
    per_step = flops_per_step / (max(throughput_mflops, 1) * 1e6) + STEP_OVERHEAD_S
    return Estimate(params, flops_per_step, memory, per_step * spec.steps_per_unit)


def batch_activations(spec: JobSpec) -> int:
    """Activation values of one forward pass at the spec's batch size (an ONNX graph's measured on the meta
    device, a registry family's from its sizes)."""
    from gensyn_py.train.models import graph_facts, make_config
    from gensyn_py.train.models.cnn import CNNConfig
    from gensyn_py.train.models.mlp import MLPConfig
    from gensyn_py.train.models.transformer import TransformerConfig

    if spec.model.onnx is not None:
        return graph_facts(spec).activation_bytes // BYTES_PER_VALUE
    cfg: Any = make_config(spec.model.family, spec.model.sizes)
    if isinstance(cfg, MLPConfig):
        acts = cfg.in_features + cfg.hidden * cfg.depth + cfg.num_classes
    elif isinstance(cfg, CNNConfig):
        acts = 3 * cfg.channels * cfg.image_size**2 + cfg.num_classes
    elif isinstance(cfg, TransformerConfig):
        d, t = cfg.d_model, cfg.seq_len
        acts = t * (cfg.n_layers * (16 * d + 2 * cfg.n_heads * t) + 2 * cfg.vocab_size)
    else:
        acts = 0
    return spec.batch_size * acts


def check_labels(spec: JobSpec, dataset: Dataset) -> None:
    """The labels are integers the model can output (class ids, or token ids below the vocabulary). A chunked
    dataset's labels are checked chunk by chunk, for the chunks a unit reads (`check_unit`)."""
    from gensyn_py.train.chunks import ChunkedDataset

    if not isinstance(dataset, ChunkedDataset):
        _check_label_values(dataset.y, label_limit(spec))


def label_limit(spec: JobSpec) -> int | None:
    """How many classes (or tokens) the model outputs; None when the family says nothing."""
    from gensyn_py.train.models import graph_facts, make_config

    if spec.model.onnx is not None:
        return graph_facts(spec).outputs
    cfg = make_config(spec.model.family, spec.model.sizes)
    limit: int | None = getattr(cfg, "num_classes", None) or getattr(cfg, "vocab_size", None)
    return limit


def _check_label_values(labels: Any, limit: int | None) -> None:
    import numpy as np

    y = np.asarray(labels)
    if limit is None or y.size == 0:
        return
    if not np.issubdtype(y.dtype, np.integer):
        raise UnfitJob(f"dataset labels are {y.dtype}; the model needs integer class ids below {limit}")
    low, high = int(y.min()), int(y.max())
    if low < 0 or high >= limit:
        raise UnfitJob(f"dataset labels span {low}..{high}; the model has {limit} classes")


MAX_UNIT_DATA_BYTES = 16 * 2**30  # the chunks one unit's steps read, all held by the node that trains it


def check_unit_data(spec: JobSpec, dataset: Dataset, unit: Unit) -> list[int]:
    """A chunked dataset: the chunks this unit's steps read fit `MAX_UNIT_DATA_BYTES`; they are fetched now
    (checked against the manifest, kept for training) and returned, so that their labels can be checked before
    a claim; none for a dataset in one file."""
    from gensyn_py.train.chunks import ChunkedDataset, unit_chunks

    if not isinstance(dataset, ChunkedDataset) or unit.shard == AGGREGATION_SHARD:
        return []
    chunks = unit_chunks(dataset, spec, unit.round, unit.shard)
    need = sum(dataset.manifest.chunks[k].size_bytes for k in chunks)
    if need > MAX_UNIT_DATA_BYTES:
        raise UnfitJob(f"the unit reads {len(chunks)} dataset chunks, {need:,} bytes; a unit may read at most "
                       f"{MAX_UNIT_DATA_BYTES:,}")
    for k in sorted(chunks):
        dataset.chunk(k)
    return sorted(chunks)


def check_shape(spec: JobSpec, unit: Unit, num_segments: int | None, params: JobParams | None) -> None:
    """The on-chain job (and this unit of it) has the spec's shape.

    The job's own shape comes before the unit's place in it: a job whose chain shape differs from its spec is
    refused for that reason whichever of its units a node looks at first (a unit beyond the spec's rounds or
    shards is only a symptom of it)."""
    if num_segments is not None and unit.shard != AGGREGATION_SHARD and num_segments != spec.num_segments:
        raise UnfitJob(f"the pool counts {num_segments} segments per unit, the spec {spec.num_segments}")
    if params is not None:
        from gensyn_py.types import DEVICE_CLASSES

        pairs = {
            "rounds": (params.rounds, spec.rounds), "shards": (params.shards, spec.shards),
            "stepsPerUnit": (params.steps_per_unit, spec.steps_per_unit),
            "checkpointInterval": (params.checkpoint_interval, spec.checkpoint_interval),
            "deviceClass": (params.device_class, DEVICE_CLASSES[spec.hardware.device_class]),
        }
        for name, (chain, declared) in pairs.items():
            if chain != declared:
                raise UnfitJob(f"on-chain {name} is {chain}, the spec says {declared}")
    if unit.round >= spec.rounds:
        raise UnfitJob(f"unit round {unit.round} is outside the spec's {spec.rounds} rounds")
    if unit.shard != AGGREGATION_SHARD and unit.shard >= spec.shards:
        raise UnfitJob(f"unit shard {unit.shard} is outside the spec's {spec.shards} shards")


def check_fit(spec: JobSpec, hardware: HardwareProfile, commit_window: int | None) -> Estimate:
    """The unit fits this node's memory and, at its throughput with a margin, the commit window."""
    est = estimate(spec, hardware.throughput_mflops)
    if hardware.memory_mb > 0 and est.memory_mb > MEMORY_SHARE * hardware.memory_mb:
        raise UnfitJob(f"the model needs about {est.memory_mb:,.0f} MiB ({est.params:,} parameters); "
                       f"this node has {hardware.memory_mb:,} MiB")
    if commit_window is not None and est.seconds * TIME_MARGIN > commit_window:
        raise UnfitJob(f"a unit takes about {est.seconds:,.1f} s here ({spec.steps_per_unit:,} steps at "
                       f"{hardware.throughput_mflops:,} MFLOP/s); the commit window is {commit_window} s")
    return est


def check_steps(spec: JobSpec, dataset: Dataset, steps_root: bytes, published: StepTable | None = None) -> None:
    """A job's on-chain step table root is zero (no game) or the one the spec and dataset give. With a table the
    requester published (its root already checked against the chain), each unit's own entries are checked by
    `check_unit` instead, so no node reads other units' batches."""
    if steps_root == bytes(32):
        return
    if spec.mode != "repro":
        raise UnfitJob(f"an {spec.mode} job has a step table root on-chain")
    if published is not None:
        return
    from gensyn_py.proof.step_table import step_table

    mine = step_table(spec, dataset).root()
    if mine != steps_root:
        raise UnfitJob(f"the job's on-chain step table root 0x{steps_root.hex()} is not its spec's and dataset's "
                       f"(0x{mine.hex()}): a dispute would judge honest steps against another program or batch")


def check_unit(spec: JobSpec, dataset: Dataset, unit: Unit, published: StepTable | None = None) -> None:
    """What differs between the units of one job: the chunks this unit reads (their size and labels), and a
    published step table's entries for this unit."""
    from gensyn_py.errors import VerificationError
    from gensyn_py.train.chunks import ChunkedDataset

    chunks = check_unit_data(spec, dataset, unit)
    if chunks:
        assert isinstance(dataset, ChunkedDataset)
        limit = label_limit(spec)
        for k in chunks:
            _check_label_values(dataset.chunk(k).y, limit)
    if published is not None and unit.shard != AGGREGATION_SHARD:
        from gensyn_py.proof.published_table import verify_unit

        try:
            verify_unit(published, spec, dataset, unit.round, unit.shard)
        except VerificationError as e:
            raise UnfitJob(str(e)) from None


def preflight(spec: JobSpec, dataset: Dataset | None, hardware: HardwareProfile, unit: Unit,
              num_segments: int | None, params: JobParams | None, steps_root: bytes = bytes(32),
              published: StepTable | None = None) -> Estimate:
    """Every check of the job, cheapest first; raises `UnfitJob` at the first that fails. What differs between
    its units is `check_unit`'s, run for each unit."""
    check_shape(spec, unit, num_segments, params)
    est = check_fit(spec, hardware, None if params is None else params.commit_window)
    if dataset is not None:
        check_labels(spec, dataset)
        check_steps(spec, dataset, steps_root, published)
    return est
