"""What every role daemon shares: its identity on-chain, the units it follows, and keeper duties.

Handlers only *note* units (in the SQLite key-value store); `tick()` looks
at each noted unit's current on-chain state and takes the next step that is
due. Acting on state rather than on events makes a restarted daemon, a missed
event or a race with another node harmless: the chain is the truth, and every
on-chain action goes through `once()` with a key that names the unit's epoch
(a reopened unit is a new epoch), so nothing is sent twice.

Keeper duties are the permissionless transitions (`drawValidators`,
`closeVerdicts`, `finalize`, `timeoutClaim`, `DisputeCommittee.resolve`): every
role pokes the units it has a stake in, and losing the race to another node
is expected and ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from eth_account.signers.local import LocalAccount

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.events import EventRecord
from gensyn_py.chain.view import ChainView
from gensyn_py.errors import ConfigError, ContractRevert
from gensyn_py.node.background import Background
from gensyn_py.node.block_feed import BlockFeed
from gensyn_py.node.daemon import Daemon, Handler
from gensyn_py.node.game_player import GamePlayer
from gensyn_py.node.hardware import HardwareProfile
from gensyn_py.node.metrics import DaemonMetrics
from gensyn_py.node.quarantine import CRASHES_BEFORE_QUARANTINE, Quarantine, is_network_error
from gensyn_py.node.replay_class import ReplayClass, short
from gensyn_py.node.standing_gauges import StandingGauges
from gensyn_py.node.state import DaemonState
from gensyn_py.proof.content import JobContent
from gensyn_py.storage.base import ContentStore
from gensyn_py.types import ROLE_VALIDATOR, Unit, UnitStatus

E18 = 10**18
T = TypeVar("T")

# Reverts that mean "someone else already did it" or "not yet": a keeper moves on.
# A Verified unit's challenge end while a requester's unavailability claim holds it (type(uint64).max).
CLAIM_SUSPENDED = 2**64 - 1
BENIGN_REVERTS = frozenset({
    "BadUnitStatus", "AlreadyDrawn", "DeadlineNotReached", "RandomnessNotReady", "RevealNotOpen",
    "VotingOpen", "DisputeClosed", "NoCredit", "NotDrawn",
    "EarlierPhaseUnsettled",  # a finalize waits for the earlier phases to be paid (pipelined rounds)
})


@dataclass(frozen=True)
class NodeConfig:
    """Everything a role daemon needs besides its own options."""

    protocol: ProtocolContracts
    account: LocalAccount
    store: ContentStore
    state: DaemonState
    hardware: HardwareProfile
    stake: int = 1_000 * E18
    poll_interval: float = 0.5
    confirmations: int = 0
    metrics: DaemonMetrics | None = None
    # What decides this machine's exact-mode bits (node/replay_class.py); None: declare no class (no exact units).
    replay_class: ReplayClass | None = None
    # The node's websocket endpoint: cycles start at each new block (node/block_feed.py); None: polling only.
    ws_url: str | None = None


class NodeDaemon(Daemon):
    """A role daemon with its own account, the chain view and keeper duties."""

    role_bits: int = 0
    role_name: str = "node"
    _feed: BlockFeed | None = None  # new blocks wake the cycle (with `NodeConfig.ws_url`)

    def __init__(self, config: NodeConfig) -> None:
        protocol = config.protocol
        contracts = {n: protocol[n] for n in ("TaskPool", "DisputeCommittee") if n in protocol}
        name = f"{self.role_name}-{config.account.address[2:8].lower()}"
        super().__init__(
            name, protocol.w3, contracts, config.state, confirmations=config.confirmations,
            poll_interval=config.poll_interval, max_backoff=5.0, metrics=config.metrics,
            start_block=int(protocol.deployment.get("block", 0)),
        )
        self.config = config
        self.protocol = protocol
        self.account = config.account
        self.address = str(config.account.address)
        self.sender = protocol.sender(config.account)
        self.view = ChainView(protocol)
        self.content = JobContent(self.view, config.store)
        self.store = config.store
        self.pool = protocol.pool(self.sender)
        self.registry = protocol.registry(self.sender)
        self.token = protocol.token(self.sender)
        self.committee = protocol.committee(self.sender)
        self.quarantine = Quarantine(config.state)
        self.gauges = StandingGauges(protocol, self.address, self.metrics)
        self._no_credit = False  # the last credit read found nothing, and no `Credited` event for us came since

    @cached_property
    def background(self) -> Background:
        """Long work (replays) off the cycle, one at a time (`node/background.py`)."""
        return Background(f"{self.name}-work", self.quarantine, self.wake)

    @cached_property
    def games(self) -> GamePlayer:
        """This node's side of the dispute games it is party to."""
        return GamePlayer(self)

    # -- joining the network -----------------------------------------------------------------

    def on_start(self) -> None:
        """Follow new blocks if a websocket URL is set; register with this role and the measured hardware,
        approve, and stake up to the target."""
        if self.config.ws_url and self._feed is None:
            self._feed = BlockFeed(self.config.ws_url, self.wake, self.log).start()
        self.quarantine_leftovers()
        hw = self.config.hardware
        if self.registry.roles_of(self.address) == 0:
            self.once(("register",), lambda: self.registry.register(self.role_bits, hw.declared()),
                      already_done=lambda: self.registry.roles_of(self.address) != 0)
            self.log.info("node.registered", roles=self.role_bits, hardware=hw.describe())
        self.sync_replay_class()
        for spender in (self.registry.address, self.pool.address):
            if self.token.allowance(self.address, spender) < 2**255:
                self.token.approve(spender, 2**256 - 1)
        bonded = self.registry.bonded_of(self.address)
        if self.config.stake > bonded:
            balance = self.token.balance_of(self.address)
            amount = min(self.config.stake - bonded, balance)
            if amount > 0:
                self.registry.stake(amount)
                self.log.info("node.staked", amount=amount / E18, bonded=(bonded + amount) / E18)
        self.check_standing()
        self.metrics.set_earnings(int(self.state.get("earned", 0)) / E18)
        warm_up()

    def after_cycle(self) -> None:
        """Mirror this node's stake, reputation, slashes and credit in the metrics (every few seconds at most)."""
        self.gauges.maybe_refresh()
        if "background" in vars(self):  # made on first use
            self.background.sweep()

    def on_stop(self) -> None:
        if self._feed is not None:
            self._feed.stop()
            self._feed = None
        if "background" in vars(self):
            self.background.close()

    def sync_replay_class(self) -> None:
        """Declare the measured replay class on chain when it differs from the registered one (new node, new
        driver, torch upgrade...): exact units are solved, validated and judged only within one class."""
        rc = self.config.replay_class
        if rc is None:
            return
        self.log.info("node.replay_class", replay_class=rc.summary(), description=rc.description)
        registered = self.registry.replay_class_of(self.address)
        if registered == rc.class_id:
            return
        self.once(("replay_class", rc.class_id.hex()), lambda: self.registry.set_replay_class(rc.description),
                  already_done=lambda: self.registry.replay_class_of(self.address) == rc.class_id)
        self.log.info("node.replay_class_set", replay_class=short(rc.class_id), was=short(registered))

    def check_standing(self) -> None:
        """Leave jail if the term is over; refuse to run a validator that could never be drawn.

        A jailed node serves again only after `unjail()` once `jailedUntil` has passed: it is sent here
        (at start) when due, and a node still serving its term runs on, logging when it ends. A validator
        enters the draws only with `minValidatorStake` bonded, so one whose stake is smaller (a `--stake`
        under the minimum, or a wallet too poor to reach it) stops with a ConfigError naming both amounts
        rather than idling unseen.
        """
        standing = self.registry.standing(self.address)
        if standing.jailed:
            if not standing.may_unjail(self.view.next_time()):
                self.log.warning("node.jailed", until=standing.jailed_until)
                return
            self.once(("unjail", standing.jailed_until), self.registry.unjail,
                      already_done=lambda: not self.registry.is_jailed(self.address))
            self.log.info("node.unjailed", jailed_until=standing.jailed_until)
            standing = self.registry.standing(self.address)
        if self.role_bits & ROLE_VALIDATOR and standing.bonded < standing.min_validator_stake:
            raise ConfigError(
                f"validator stake {standing.bonded / E18:g} tokens is below the registry's minimum of "
                f"{standing.min_validator_stake / E18:g} (minValidatorStake): a validator under it is never "
                f"drawn; run with --stake {standing.min_validator_stake / E18:g} or more and hold that many tokens"
            )
        if self.role_bits & ROLE_VALIDATOR and not standing.in_validator_set:
            # Running a validator means wanting the draws: re-take the role if the node once left the set.
            self.registry.join_validator_set()
            self.log.info("node.joined_validator_set", bonded=standing.bonded / E18)

    # -- units followed ----------------------------------------------------------------------

    def follow(self, group: str, unit_id: int, data: Any = True) -> None:
        self.state.put(f"{group}:{unit_id}", data)

    def unfollow(self, group: str, unit_id: int) -> None:
        self.state.delete(f"{group}:{unit_id}")

    def followed(self, group: str) -> list[tuple[int, Any]]:
        prefix = f"{group}:"
        return [(int(k[len(prefix):]), self.state.get(k)) for k in self.state.keys(prefix)]

    # -- per-job isolation (see node/quarantine.py) -------------------------------------------

    def quarantine_leftovers(self) -> None:
        """Handlers the previous process died in (their markers are still there): the first death is resumed
        at once (a `kill -9`, a reboot); a second death inside the same unit quarantines its job."""
        for job, unit, deaths in self.quarantine.leftovers():
            if deaths < CRASHES_BEFORE_QUARANTINE:
                self.log.warning("unit.crash_resumed", job=job, unit=unit, deaths=deaths)
                continue
            self.quarantine_job(job, unit, f"crashed: the daemon died {deaths} times inside this unit's handler")

    def quarantine_job(self, job: int, unit: int | None, reason: str) -> None:
        entry = self.quarantine.put(job, unit, reason)
        self.metrics.quarantined(reason.split(":", 1)[0])
        self.metrics.set_quarantine_size(len(self.quarantine.entries()))
        self.log.warning("unit.quarantined", job=job, unit=unit, reason=reason, attempts=entry.attempts,
                         retry_in_s=round(entry.retry_at - self.quarantine.clock(), 1))

    def isolated(self, job: int, unit: int, fn: Callable[[], T]) -> T | None:
        """Run one unit's handler in isolation: None if the job is quarantined or gets quarantined now.

        Network errors (chain, store unreachable) propagate to the cycle's triage;
        any other exception quarantines the job with its own backoff, and the caller
        goes on to the next unit. A job that handled cleanly leaves quarantine.
        """
        if self.quarantine.blocked(job):
            return None
        marker = self.quarantine.mark(job, unit)
        try:
            result = fn()
        except Exception as exc:
            if is_network_error(exc) or self.stopping:
                raise
            self.quarantine_job(job, unit, f"{type(exc).__name__}: {_first_line(exc)}")
            return None
        finally:  # the handler ended (returned or raised): not a death inside it
            self.state.delete(marker)
            self.quarantine.ended_cleanly(job, unit)
        if self.quarantine.get(job) is not None:
            self.quarantine.clear(job)
            self.metrics.set_quarantine_size(len(self.quarantine.entries()))
            self.log.info("unit.released", job=job, unit=unit)
        return result

    # -- keeper duties -----------------------------------------------------------------------

    def poke(self, unit: Unit) -> bool:
        """Take whatever permissionless transition is due for `unit`. True if one was sent."""
        now = self.view.next_time()  # the time our transaction is checked against
        try:
            # A phase armed after the claim moves its deadline (`commitBy`); an unarmed one has none yet.
            if unit.status is UnitStatus.ASSIGNED and now > unit.deadline and now > self.pool.commit_by(unit.unit_id):
                self.pool.timeout_claim(unit.unit_id)
                self.log.info("keeper.timeout", unit=unit.unit_id, solver=unit.solver)
                return True
            if unit.status is UnitStatus.COMMITTED and not unit.drawn:
                return self._draw(unit)
            if unit.status is UnitStatus.COMMITTED and now > unit.reveal_deadline:
                self.pool.close_verdicts(unit.unit_id)
                self.log.info("keeper.close_verdicts", unit=unit.unit_id)
                return True
            if unit.status is UnitStatus.VERIFIED and unit.deadline == CLAIM_SUSPENDED:
                # the requester claimed the model missing: an unanswered claim slashes the solver once due
                if now > self.pool.availability(unit.unit_id).answer_by:
                    self.pool.close_verdicts(unit.unit_id)
                    self.log.info("keeper.slash_unanswered_claim", unit=unit.unit_id, solver=unit.solver)
                    return True
                return False
            if unit.status is UnitStatus.VERIFIED and now > unit.deadline:
                self.pool.finalize(unit.unit_id)
                self.log.info("keeper.finalize", unit=unit.unit_id)
                return True
        except ContractRevert as e:
            if e.name not in BENIGN_REVERTS:
                raise
            self.log.debug("keeper.skip", unit=unit.unit_id, reason=e.name)
        return False

    def _draw(self, unit: Unit) -> bool:
        # The seed is the hash of the block after the seed block (the commitment's, or a re-targeted one): a draw
        # is accepted in any later block, so it is sent once that block exists and lands in the next one.
        if self.protocol.w3.eth.block_number <= unit.seed_block:
            return False
        self.pool.draw_validators(unit.unit_id)
        self.log.info("keeper.draw", unit=unit.unit_id)
        return True

    def resolve_dispute(self, dispute_id: int) -> bool:
        try:
            self.committee.resolve(dispute_id)
        except ContractRevert as e:
            if e.name not in BENIGN_REVERTS:
                raise
            return False
        self.log.info("keeper.resolve", dispute=dispute_id)
        return True

    # -- money -------------------------------------------------------------------------------

    def dispatch_table(self) -> dict[str, Handler]:
        """The role's handlers, the dispute games it plays, and its credit: added here, so no role can leave out
        either (a role that missed `Credited` would never claim credit again after once finding none)."""
        return {**self.handlers(), **self.games.handlers(), "Credited": self._note_credited}

    def _note_credited(self, record: EventRecord) -> None:
        if str(record.args["account"]).lower() == self.address.lower():
            self._no_credit = False

    def claim_credit(self) -> int:
        """Withdraw pending credit; returns the amount (0 if none). Once it found none, it asks again only after a
        `Credited` event for this node (`dispatch_table`): the pool emits one for every credit it adds."""
        if self._no_credit:
            return 0
        owed = self.pool.credit(self.address)
        self._no_credit = owed == 0
        if owed == 0:
            return 0
        try:
            self.pool.claim_credit()
        except ContractRevert as e:
            if e.name != "NoCredit":
                raise
            return 0
        self.state.put("earned", int(self.state.get("earned", 0)) + owed)  # the metric survives restarts
        self.metrics.add_earnings(owed / E18)
        self.log.info("credit.claimed", amount=owed / E18)
        return owed

    def units(self, ids: Iterable[int]) -> list[Unit]:
        return [self.view.unit(i) for i in ids]


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return text if len(text) <= 300 else text[:297] + "..."


def warm_up() -> None:
    """Import PyTorch and the trainer now, so the first unit or replay does not pay for it mid-deadline."""
    import torch

    from gensyn_py.train import trainer  # noqa: F401 - imported for its import cost
    from gensyn_py.train.determinism import configure_exact

    configure_exact(1)  # its first call pulls in more of torch (seconds on a busy machine)
    torch.ones(8, 8) @ torch.ones(8, 8)
