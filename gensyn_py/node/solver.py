"""The solver daemon: claims units it is fit for, trains them, commits, and collects its pay.

One unit at a time. Training saves a record (checkpoint CIDs, hashes and
losses) after every checkpoint, so a solver killed mid-unit resumes from its
last local checkpoint and commits exactly what an uninterrupted run would
have. Claims and commits are keyed by the unit's epoch (`openedAt` for a
claim, the commit deadline for a commit), so a reopened unit can be claimed
again but no claim or commit is ever sent twice.

Partial progress (issue 11). While training, the solver publishes its first segments every
`partial_every` segments (default: each quarter of the unit, every segment when it has fewer than
four; 0 turns it off): the partial manifest goes to the store, its root on-chain (`commitPartial`,
a cold path that costs the honest path nothing). Claiming a unit that has a partial, it fetches the
partial manifest and last checkpoint, checks them against the on-chain root and resumes from there;
if they are unavailable or do not check out it logs why and trains from the start.

A validator that cannot fetch a unit's data reports it "unavailable", and a
requester that cannot download its model claims the same: the solver answers
each on-chain with the leaves and proofs it committed, after publishing the data
again (`proof/availability.py`), or loses its collateral.

A solver also keeps the network moving around its own units (drawing
validators, closing verdicts, finalizing) and times out units whose solver
vanished, which frees them for itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from gensyn_py.errors import ContentNotFound, ContractRevert, GensynError, TrainingError, VerificationError
from gensyn_py.node.daemon import Handler, Triage
from gensyn_py.node.preflight import check_shape, check_unit, preflight
from gensyn_py.node.progress import Board, UnitBar, board
from gensyn_py.node.role import NodeConfig, NodeDaemon
from gensyn_py.proof.availability import republish
from gensyn_py.proof.commitment import Manifest, UnitCommitment
from gensyn_py.proof.sampler import segment_for
from gensyn_py.types import (
    AGGREGATION_SHARD,
    DEVICE_CLASSES,
    NO_CLASS,
    REQUESTER_SLOT,
    ROLE_SOLVER,
    VERDICT_UNAVAILABLE,
    JobParams,
    PartialRef,
    Unit,
    UnitStatus,
)

if TYPE_CHECKING:
    import torch

    from gensyn_py.chain.events import EventRecord
    from gensyn_py.proof.resume import Resume
    from gensyn_py.train.data import Dataset
    from gensyn_py.train.spec import JobSpec

# Reverts that mean "this unit is not for us (now)": skip it.
CLAIM_MISSES = frozenset({"BadUnitStatus", "ScoreTooLow", "HardwareMismatch", "PriceTooHigh", "JobNotActive",
                          "InsufficientFreeStake", "NodeJailed"})


ENDED = (UnitStatus.FINAL, UnitStatus.CANCELLED, UnitStatus.OPEN, UnitStatus.VOIDED)  # not in a solver's hands
NOT_ARMED = 2**64 - 1  # `commitBy` of a unit whose phase waits for the one it is built on to be Verified


class Interrupted(TrainingError):
    """Training stopped because the daemon is shutting down; the record allows a resume."""


class Voided(TrainingError):
    """Training stopped because the unit was voided: a unit of an earlier phase it starts from was overturned."""


class SolverDaemon(NodeDaemon):
    role_bits = ROLE_SOLVER
    role_name = "solver"
    progress: Board | None = None
    _unit_bar: UnitBar | None = None  # the bar of the unit being trained, for `train_unit`'s step hook
    data_parallel = 1  # processes that train one repro unit together (1: this one alone)

    def __init__(self, config: NodeConfig, records_dir: Path, device: str | None = None,
                 partial_every: int | None = None, progress: Board | None = None, data_parallel: int = 1) -> None:
        super().__init__(config)
        self.progress = progress  # None: the process's board (bars on a terminal only)
        self.records_dir = records_dir
        self.records_dir.mkdir(parents=True, exist_ok=True)
        self.device = device
        self.partial_every = partial_every  # segments between partial commits; None: a quarter; 0: never
        self.data_parallel = data_parallel
        self._fit: dict[int, tuple[JobParams | None, int | None]] = {}  # job -> preflight passed (params, segments)
        self._unit_fit: set[int] = set()  # units whose own data and step table entries passed `check_unit`
        self._exact: dict[int, bool] = {}  # job -> its spec is mode exact (set by `preflight`)
        # Work done on a unit whose phase is not armed yet (pipelined rounds: it opened for claims when the phase it
        # is built on was Committed; it may commit once that one is Verified), by commit key. Lost on a restart:
        # the unit's record (or a quick aggregation) gives it again.
        self._ready: dict[tuple[str, int, int], tuple[UnitCommitment, float, UnitBar]] = {}

    def handlers(self) -> dict[str, Handler]:
        return {
            "UnitOpened": self._note_open,
            "UnitReopened": self._note_open,
            "UnitTimedOut": self._note_open,
            "UnitClaimed": self._note_claimed,
        }

    def _note_open(self, record: EventRecord) -> None:
        self.follow("open", int(record.args["unitId"]))

    def _note_claimed(self, record: EventRecord) -> None:
        unit_id = int(record.args["unitId"])
        self.unfollow("open", unit_id)
        # Our own units are worked on; others' are watched so a vanished solver's unit gets freed.
        self.follow("mine" if record.args["solver"] == self.address else "watch", unit_id)

    # -- the cycle's time-based work -----------------------------------------------------------

    def tick(self) -> None:
        self.games.tick()  # a game's clock runs: its moves come first
        # Units we hold are trained and committed right here, so by the claim below we hold none
        # (except one past its deadline, which is no longer ours to finish).
        for unit in self.units(i for i, _ in self.followed("mine")):
            if self.stopping:
                return
            self.isolated(unit.job_id, unit.unit_id, partial(self._advance_mine, unit))
        # Other solvers' units are kept moving until final: a solver that vanished after committing
        # leaves nobody else to draw its validators or finalize; a timed-out unit comes back open.
        for unit in self.units(i for i, _ in self.followed("watch")):
            if unit.status in ENDED:
                self.unfollow("watch", unit.unit_id)
                if unit.status is UnitStatus.OPEN:
                    self.follow("open", unit.unit_id)
            else:
                self.poke(unit)
        self._claim_next()
        self.claim_credit()

    def _advance_mine(self, unit: Unit) -> None:
        if unit.solver != self.address or unit.status in ENDED:
            if unit.status is UnitStatus.FINAL and unit.solver == self.address:
                self.metrics.unit_done()
                self.log.info("unit.final", unit=unit.unit_id, job=unit.job_id)
            elif unit.status is UnitStatus.VOIDED:
                self.log.warning("unit.voided", unit=unit.unit_id, job=unit.job_id,
                                 reason="a unit it was built on was overturned; collateral released")
            self.unfollow("mine", unit.unit_id)
            for key in [k for k in self._ready if k[1] == unit.unit_id]:  # held for a phase that never armed
                del self._ready[key]
        elif unit.status is UnitStatus.ASSIGNED:
            self._solve(unit)
        else:
            self._answer_reports(unit)
            self.poke(unit)

    # -- answering unavailability reports ------------------------------------------------------

    def _answer_reports(self, unit: Unit) -> None:
        """Answer every pending "unavailable" report of our unit, and the requester's claim."""
        if unit.status not in (UnitStatus.COMMITTED, UnitStatus.DISPUTED, UnitStatus.VERIFIED):
            return
        a = self.pool.availability(unit.unit_id)
        slots: list[int] = []
        if a.claim_pending and unit.status is UnitStatus.VERIFIED:
            slots.append(REQUESTER_SLOT)
        if a.pending and unit.status is not UnitStatus.VERIFIED:
            slots += [i for i in range(len(unit.validators))
                      if self.pool.verdict_state(unit.unit_id, i) == VERDICT_UNAVAILABLE]
        for slot in slots:
            self._answer(unit, slot)

    def _answer(self, unit: Unit, slot: int) -> None:
        commitment = self.view.commitment(unit.unit_id)
        if commitment is None:
            return
        n = self.pool.num_segments(unit.unit_id)
        segment = n - 1 if slot == REQUESTER_SLOT else segment_for(unit.seed, slot, n, len(unit.validators))
        try:
            seg, last, cids = republish(self.store, commitment.manifest_cid, segment, self.content.timeout)
        except (ContentNotFound, VerificationError) as e:  # our own copy is gone: nothing honest to answer
            self.log.error("unit.cannot_answer", unit=unit.unit_id, slot=slot, error=str(e))
            return
        key = ("answer", unit.unit_id, slot, unit.commit_deadline)
        try:
            self.once(key, lambda: self.pool.answer_unavailable(unit.unit_id, slot, seg, last, cids))
        except ContractRevert as e:
            if e.name not in ("NotReported", "DeadlinePassed", "NotSolver", "UnknownUnit"):
                raise
            self.state.mark_done(key, detail=f"refused: {e.name}")
            self.log.warning("unit.answer_refused", unit=unit.unit_id, slot=slot, reason=e.name)
            return
        self.log.info("unit.answered_unavailable", unit=unit.unit_id, slot=slot, segment=segment, cids=cids)

    # -- claiming ----------------------------------------------------------------------------

    def _claim_next(self) -> None:
        for unit_id, _ in sorted(self.followed("open")):
            if self.stopping:
                return
            unit = self.view.unit(unit_id)
            if unit.status is not UnitStatus.OPEN:
                self.unfollow("open", unit_id)
                continue
            if self.quarantine.blocked(unit.job_id):
                continue  # its own backoff; later units go on
            fit = self.isolated(unit.job_id, unit_id, partial(self.preflight, unit))
            if fit is None:
                continue  # quarantined now
            if not fit:
                self.unfollow("open", unit_id)  # another device class: not for us
                continue
            if not self._class_can_verify(unit):
                continue  # exact unit, and no other validator of this node's class (yet): the claim would revert
            if not self.pool.claim_score(self.address, unit_id, block="pending").eligible:
                continue  # the required score falls over the claim window; try again next cycle. Asked of the
                # pending block: the one a claim sent now lands in, so we claim the moment our score allows
            if self._claim(unit):
                return

    # -- preflight: claim only what this node can finish (see node/preflight.py) ---------------

    def preflight(self, unit: Unit) -> bool:
        """False if the unit is for another device class; raises `UnfitJob` (or the content's error) if unfit.

        The job-level checks (content fetched and verified, labels, memory, time) run once
        per job and are cached; the unit's round and shard are checked each time.
        """
        spec = self.content.spec(unit.job_id)
        if DEVICE_CLASSES[spec.hardware.device_class] != DEVICE_CLASSES[self.config.hardware.device_class]:
            return False
        if spec.mode == "exact" and self.config.replay_class is None:
            return False  # exact units go to a solver's replay class; this node declares none
        self._exact[unit.job_id] = spec.mode == "exact"
        if unit.job_id not in self._fit:
            params = self.job_params(unit.job_id)
            segments = None if unit.shard == AGGREGATION_SHARD else self.pool.num_segments(unit.unit_id)
            dataset = self.content.dataset(unit.job_id)
            steps_root, _ = self.pool.step_table(unit.job_id)
            table = None if spec.step_table is None else self.content.published_table(unit.job_id, steps_root)
            est = preflight(spec, dataset, self.config.hardware, unit, segments, params, steps_root, table)
            if spec.init is not None:  # a fine-tune: its parent's final model must be there and verified
                self.content.parent_model(spec)
            self._fit[unit.job_id] = (params, segments)
            self.log.info("unit.preflight", job=unit.job_id, unit=unit.unit_id, params=est.params,
                          memory_mb=round(est.memory_mb, 1), est_s=round(est.seconds, 2),
                          window_s=None if params is None else params.commit_window)
        params, segments = self._fit[unit.job_id]
        check_shape(spec, unit, None if unit.shard == AGGREGATION_SHARD else segments, params)
        if unit.unit_id not in self._unit_fit:  # what differs between a job's units: its own data and entries
            table = None if spec.step_table is None else \
                self.content.published_table(unit.job_id, self.pool.step_table(unit.job_id)[0])  # cached per job
            check_unit(spec, self.content.dataset(unit.job_id), unit, table)
            self._unit_fit.add(unit.unit_id)
        return True

    def _class_can_verify(self, unit: Unit) -> bool:
        """An exact unit is claimable only with another validator of this node's replay class on chain."""
        if not self._exact.get(unit.job_id, False):  # set by `preflight`, which ran first
            return True
        cls, others = self.registry.class_peers(self.address)
        return cls != NO_CLASS and others > 0

    def job_params(self, job_id: int) -> JobParams | None:
        """The job's `submitJob` parameters, decoded from its transaction (None if sent another way)."""
        contract = self.protocol["TaskPool"]
        logs = contract.events["JobSubmitted"]().get_logs(argument_filters={"jobId": job_id},
                                                           from_block=self.view.from_block)
        if not logs:
            return None
        tx = self.protocol.w3.eth.get_transaction(logs[0]["transactionHash"])
        try:
            fn, args = contract.decode_function_input(tx["input"])
            if fn.fn_name != "submitJob" or tx["to"] != contract.address:
                return None
            raw = next(iter(args.values()))
            values = tuple(raw.values()) if isinstance(raw, Mapping) else tuple(raw)
            return JobParams.from_abi(values)
        except (ValueError, TypeError, KeyError, StopIteration):
            return None  # a contract or multisig submitted it: the shape is checked from the unit alone

    def _claim(self, unit: Unit) -> bool:
        key = ("claim", unit.unit_id, unit.opened_at)

        def claimed_by_me() -> bool:
            u = self.view.unit(unit.unit_id)
            return u.solver == self.address and u.opened_at == unit.opened_at and u.status is not UnitStatus.OPEN

        try:
            sent = self.once(key, lambda: self.pool.claim(unit.unit_id), already_done=claimed_by_me)
        except ContractRevert as e:
            if e.name not in CLAIM_MISSES:
                raise
            self.log.info("unit.claim_missed", unit=unit.unit_id, reason=e.name)
            self.state.mark_done(key, detail=f"missed: {e.name}")
            return False
        # Not sent now: this epoch's claim was settled earlier. It is ours only if the chain says so
        # (an earlier attempt that missed, or lost the race to another solver, is recorded done too).
        if not sent and not claimed_by_me():
            self.unfollow("open", unit.unit_id)
            self.log.debug("unit.claim_skip", unit=unit.unit_id, reason="settled earlier, not ours")
            return False
        self.unfollow("open", unit.unit_id)
        self.follow("mine", unit.unit_id)
        self.log.info("unit.claimed", unit=unit.unit_id, job=unit.job_id, round=unit.round, shard=unit.shard)
        return True

    # -- training and committing -------------------------------------------------------------

    def _solve(self, unit: Unit) -> None:
        # The claim's deadline, or later: a phase armed after the claim gives its whole commit window from then.
        now = self.view.next_time()
        if now > unit.deadline and now > self.pool.commit_by(unit.unit_id):
            self.log.warning("unit.deadline_missed", unit=unit.unit_id)
            return  # anyone may now time it out; keep following until it leaves our hands
        epoch = unit.deadline
        key = ("commit", unit.unit_id, epoch)
        if self.state.is_done(key):
            return
        held = key in self._ready
        ready = self._ready.pop(key) if held else self._worked(unit, key, epoch)
        if ready is None:
            return  # voided while training
        commitment, train_s, bar = ready
        if self.pool.commit_by(unit.unit_id) == NOT_ARMED:
            # Built on results not Verified yet: the commit waits (the contract refuses it, `PhaseNotArmed`) while
            # the cycle goes on; the unit cannot time out meanwhile.
            if not held:
                self.log.info("unit.waiting_for_inputs", unit=unit.unit_id, job=unit.job_id,
                              train_s=round(train_s, 4))
                bar.waiting("inputs not verified yet")
            self._ready[key] = ready
            return
        bar.committing()

        def committed() -> bool:
            u = self.view.unit(unit.unit_id)
            return u.status is not UnitStatus.ASSIGNED or u.deadline != epoch

        try:
            self.once(key, lambda: self.pool.commit(
                unit.unit_id, commitment.checkpoint_root, commitment.final_state_hash, commitment.manifest_cid),
                already_done=committed)
        except ContractRevert as e:
            if e.name not in ("DeadlinePassed", "BadUnitStatus", "NotSolver"):
                raise
            self.log.warning("unit.commit_refused", unit=unit.unit_id, reason=e.name)
            self.state.mark_done(key, detail=f"refused: {e.name}")
            bar.failed(f"commit refused: {e.name}")
            return
        except BaseException as e:
            bar.failed(f"commit failed: {type(e).__name__}")
            raise
        bar.committed()
        self.log.info("unit.committed", unit=unit.unit_id, root="0x" + commitment.checkpoint_root.hex(),
                      manifest=commitment.manifest_cid, train_s=round(train_s, 4))

    def _worked(self, unit: Unit, key: tuple[str, int, int], epoch: int
                ) -> tuple[UnitCommitment, float, UnitBar] | None:
        """Train (or aggregate) the unit under a progress bar: its commitment, seconds and bar; None if voided."""
        bar = self._unit_bar = self._bar(unit)
        started = time.perf_counter()
        try:
            commitment = self._work(unit, epoch)
        except Voided as e:
            bar.failed("voided")
            self.state.mark_done(key, detail="voided")
            self.log.warning("unit.voided", unit=unit.unit_id, job=unit.job_id, reason=str(e))
            return None
        except BaseException as e:
            bar.failed(f"stopped: {type(e).__name__}")
            raise
        finally:
            self._unit_bar = None
        return commitment, time.perf_counter() - started, bar

    def _bar(self, unit: Unit) -> UnitBar:
        """The unit's progress bar (drawn on a terminal only): steps, checkpoints stored, commit."""
        bars = self.progress or board()
        if unit.is_aggregation:
            return bars.unit(unit.unit_id, 1, 1, label="aggregate")
        spec = self.content.spec(unit.job_id)
        return bars.unit(unit.unit_id, spec.steps_per_unit, spec.num_segments + 1)

    def _work(self, unit: Unit, epoch: int) -> UnitCommitment:
        """Train (or aggregate) the unit; resumes from the saved record after a crash."""
        spec = self.content.spec(unit.job_id)
        if unit.is_aggregation:
            from gensyn_py.proof.aggregation_unit import commit_aggregation

            results = self.content.round_results(unit.job_id, unit.round)
            previous = self.content.previous_aggregate(unit.job_id, unit.round)
            return commit_aggregation(spec, self.store, unit.job_id, unit.round, results, self.content.timeout,
                                      previous, self.content.outer_init(unit.job_id, unit.round))
        dataset = self.content.dataset(unit.job_id)
        weights = self.content.start_weights(unit.job_id, unit.round, unit.shard)
        return self.train_unit(unit, epoch, spec, dataset, weights)

    def train_unit(self, unit: Unit, epoch: int, spec: JobSpec, dataset: Dataset,
                   weights: Mapping[str, torch.Tensor] | None) -> UnitCommitment:
        """Train a training unit from the round's start weights, store its checkpoints, build the commitment."""
        from gensyn_py.proof.unit import UnitRecord, commit_segments, resume_from_partial, resume_trainer
        from gensyn_py.train.trainer import Trainer

        path = self.records_dir / f"unit-{unit.unit_id}-{epoch}.json"
        resume_path = path.with_suffix(".resume.json")  # the partial this epoch resumed from, if any
        resume = self._resume_source(unit, spec, resume_path)
        if path.exists():
            record = UnitRecord.load(path)
            trainer = resume_trainer(spec, dataset, unit.round, unit.shard, self.store, record, self.device, weights)
            self.log.info("unit.resumed", unit=unit.unit_id, step=trainer.step)
        elif resume is not None:
            trainer, record = resume_from_partial(spec, dataset, unit.round, unit.shard, self.store, resume,
                                                  self.device, weights, self.content.timeout)
            self.log.info("unit.resumed_partial", unit=unit.unit_id, step=trainer.step, segments=resume.segments,
                          author=resume.solver)
        else:
            record = UnitRecord()
            trainer = Trainer(spec, dataset, unit.round, unit.shard, self.device, weights)
        total = spec.steps_per_unit
        log_every = max(1, total // 10)
        bar = self._unit_bar

        def progress(step: int, _total: int, loss: float) -> None:
            if self.stopping:
                raise Interrupted(f"stopped at step {step} of unit {unit.unit_id}")
            if bar is not None:
                bar.step(step, len(record.cids))  # the checkpoint writer appends each CID once stored
            if step % log_every == 0 or step == total:
                self.log.info("unit.progress", unit=unit.unit_id, step=step, steps=total, loss=round(loss, 5))
                # Pipelined rounds: the unit we train from may be overturned meanwhile, voiding ours.
                if step < total and self.view.unit(unit.unit_id).status is UnitStatus.VOIDED:
                    raise Voided(f"unit {unit.unit_id} was voided at step {step}: an earlier phase was overturned")

        self.log.info("unit.training", unit=unit.unit_id, job=unit.job_id, round=unit.round, shard=unit.shard,
                      steps=total, from_step=trainer.step, device=str(trainer.device))
        partial_every = self.partial_every if self.partial_every is not None else max(1, spec.num_segments // 4)

        def run() -> UnitCommitment:
            return commit_segments(trainer, self.store, unit.job_id, on_step=progress, record=record,
                                   record_path=path, solver=self.address, resume=resume,
                                   on_partial=partial(self._commit_partial, unit), partial_every=partial_every)

        if self.data_parallel == 1 or spec.mode != "repro":
            return run()  # an exact unit trains in one process: its kernels' sums depend on the split
        from gensyn_py.train.repro_step import one_process_reason

        if (reason := one_process_reason(spec)) is not None:
            self.log.info("unit.one_process", unit=unit.unit_id, reason=reason)
            return run()
        if spec.batch_size % self.data_parallel:
            self.log.info("unit.one_process", unit=unit.unit_id, batch_size=spec.batch_size,
                          reason=f"the batch does not split evenly over {self.data_parallel} processes")
            return run()
        from gensyn_py.train.process_group import TrainingGroup

        self.log.info("unit.data_parallel", unit=unit.unit_id, processes=self.data_parallel)
        with TrainingGroup(trainer, self.data_parallel, get=partial(self.store.get, timeout=self.content.timeout)):
            return run()

    # -- partial commitments (resume, not restart) ---------------------------------------------

    def _commit_partial(self, unit: Unit, m: Manifest) -> None:
        """Publish the first segments; best effort: a failure is logged and training goes on."""
        key = ("partial", unit.unit_id, unit.deadline, m.num_segments)

        def sent() -> bool:  # an attempt cut off by a crash may have landed
            latest = self.pool.partial_of(unit.unit_id)
            return latest.solver == self.address and latest.segments >= m.num_segments

        try:
            cid = self.store.put(m.to_bytes())
            self.once(key, lambda: self.pool.commit_partial(unit.unit_id, m.root(), m.num_segments, cid),
                      already_done=sent)
        except GensynError as e:
            self.log.warning("unit.partial_failed", unit=unit.unit_id, segments=m.num_segments, error=repr(e))
            return
        self.log.info("unit.partial", unit=unit.unit_id, segments=m.num_segments, manifest=cid)

    def _resume_source(self, unit: Unit, spec: JobSpec, resume_path: Path) -> Resume | None:
        """The checked partial to resume this epoch from, or None: none on-chain, or unusable (logged; the
        unit is trained from the start).

        Decided once per epoch and kept beside the record, so a restarted solver goes on the way it began
        (even after its own partials have replaced that one on-chain); if a kept partial cannot be fetched
        now, this raises to retry later rather than mix two trainings.
        """
        from gensyn_py.proof.resume import load_partial

        if resume_path.exists():
            kept = json.loads(resume_path.read_text())
            if kept is None:
                return None
            chosen = PartialRef(kept["solver"], bytes.fromhex(kept["root"]), int(kept["segments"]),
                                kept["manifestCid"])
            return load_partial(spec, self.store, unit.job_id, unit.round, unit.shard, chosen,
                                self.view.partials(unit.unit_id), self.content.timeout)
        resume: Resume | None = None
        kept_ref: PartialRef | None = None
        latest = self.pool.partial_of(unit.unit_id)
        if latest.segments:
            partials = self.view.partials(unit.unit_id)
            kept_ref = next((p for p in reversed(partials)
                             if (p.solver, p.root, p.segments) == (latest.solver, latest.root, latest.segments)), None)
            try:
                if kept_ref is None:
                    raise TrainingError(f"no UnitPartialCommitted event matches partialOf({unit.unit_id})")
                resume = load_partial(spec, self.store, unit.job_id, unit.round, unit.shard, kept_ref, partials,
                                      self.content.timeout)
            except GensynError as e:
                self.log.warning("unit.resume_refused", unit=unit.unit_id, segments=latest.segments,
                                 author=latest.solver, error=repr(e))
        resume_path.write_text(json.dumps(None if resume is None or kept_ref is None else {
            "solver": kept_ref.solver, "root": kept_ref.root.hex(), "segments": kept_ref.segments,
            "manifestCid": kept_ref.manifest_cid}))
        return resume

    def triage(self, exc: BaseException) -> Triage:
        if isinstance(exc, Interrupted):
            return Triage.RETRY  # the loop ends anyway: we are stopping
        return super().triage(exc)

