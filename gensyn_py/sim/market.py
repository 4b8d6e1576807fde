"""The local market's cast and its requester: one harness for the demo, the benches and the tests.

`LocalNetwork` (``sim/localnet.py``) owns the chain and the daemon processes; a `Market` over it starts
a cast of role daemons and waits until each has registered and staked, funds a requester, stores
datasets, submits job specs and waits for jobs to complete. The demo, `bench/e2e.py` and the market
tests all play on it, so they start nodes and submit jobs the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gensyn_py.chain.contracts import ProtocolContracts
from gensyn_py.chain.view import ChainView
from gensyn_py.sim.localnet import E18, LocalNetwork, wait_until
from gensyn_py.types import JobStatus

if TYPE_CHECKING:
    from gensyn_py.requester.session import Requester
    from gensyn_py.requester.submit import SubmitResult
    from gensyn_py.train.data import Dataset

REQUESTER_KEY = 1  # dev key index of the market's requester
MAX_PRICE, COLLATERAL = 10 * E18, 100 * E18  # per unit: the requester's offer


@dataclass(frozen=True)
class NodeSpec:
    """A daemon of the market: name, role, dev key index, extra `gensyn <role> run` args, stake in tokens."""

    name: str
    role: str
    key: int
    args: tuple[str, ...] = ()
    stake: int = 1_000


STANDARD_NODES: tuple[NodeSpec, ...] = (
    NodeSpec("solver-1", "solver", 2, ("--price", "5")),
    NodeSpec("solver-2", "solver", 3, ("--price", "5")),
    NodeSpec("validator-1", "validator", 4),
    NodeSpec("validator-2", "validator", 5),
    # A dispute's committee never seats the unit's own validators: a third one is the demo's committee.
    NodeSpec("validator-3", "validator", 7),
    NodeSpec("challenger", "challenger", 6, ("--audit-fraction", "0.3")),
)


def digits_job_spec(dataset: dict[str, Any], rounds: int, shards: int, steps: int, seed: int) -> dict[str, Any]:
    """The market's digits MLP; per unit `steps` SGD steps, a checkpoint every 20."""
    return {
        "version": 1,
        "model": {"family": "mlp", "sizes": {"hidden": 64}},
        "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.0001},
        "schedule": {"kind": "cosine", "warmup_steps": 10},
        "batch_size": 32,
        "steps_per_unit": steps,
        "checkpoint_interval": 20,
        "seed": seed,
        "rounds": rounds,
        "shards": shards,
        "threads": 1,
        "hardware": {"device_class": "cpu", "min_memory_mb": 64},
        "dataset": dataset,
    }


class Market:
    """Role daemons on a `LocalNetwork` and a funded requester (dev key 1)."""

    def __init__(self, net: LocalNetwork, requester_tokens: int = 100_000, standing_allowance: bool = False) -> None:
        self.net = net
        self.requester_tokens = requester_tokens
        self.standing_allowance = standing_allowance  # approve once, so a submission sends one transaction
        self.actors: dict[str, str] = {}  # node name -> address

    @property
    def protocol(self) -> ProtocolContracts:
        assert self.net.protocol is not None, "start the network first"
        return self.net.protocol

    @cached_property
    def view(self) -> ChainView:
        return ChainView(self.protocol)

    def check_alive(self) -> None:
        self.net.check_alive()

    # -- nodes -------------------------------------------------------------------------------

    def start_nodes(self, nodes: Sequence[NodeSpec] = STANDARD_NODES, timeout: float = 120) -> None:
        """Fund and start each daemon; wait until every one has registered and bonded its stake."""
        for n in nodes:
            node = self.net.add_node(n.name, n.role, n.key, *n.args, tokens=n.stake + 1_000, stake=n.stake)
            self.actors[n.name] = str(node.account.address)
        registry = self.protocol.registry()
        names = [n.name for n in nodes]

        def registered() -> bool:
            return all(registry.bonded_of(self.actors[name]) > 0 for name in names)

        wait_until(registered, timeout, "the daemons to register and stake", every=0.5, on_wait=self.check_alive)

    # -- the requester -----------------------------------------------------------------------

    @cached_property
    def requester(self) -> Requester:
        from gensyn_py.requester.session import Requester
        from gensyn_py.storage.factory import open_store

        account = self.net.account(REQUESTER_KEY)
        if self.requester_tokens:
            self.net.fund(account.address, self.requester_tokens)
        requester = Requester(self.protocol, open_store(self.net.store_spec), account)
        if self.standing_allowance:
            requester.token.approve(requester.pool.address, 2**256 - 1)
        return requester

    def put_dataset(self, ds: Dataset) -> dict[str, Any]:
        """Store the dataset's bytes; its entry for a job spec."""
        from gensyn_py.train.data import dataset_entry

        data = ds.to_bytes()
        self.requester.store.put(data)
        return dict(dataset_entry(ds, data))

    def collateral_for(self, num_segments: int) -> int:
        """The market's collateral per unit: `COLLATERAL`, or the pool's least for this many segments if more."""
        from gensyn_py.proof.sampler import min_collateral

        validators = self.requester.pool_params().validators_per_unit
        return max(COLLATERAL, min_collateral(MAX_PRICE, num_segments, validators))

    def submit(self, spec: dict[str, Any], commit_window: int = 120) -> SubmitResult:
        """Check, approve (unless standing) and submit a job spec at the market's offer."""
        from gensyn_py.requester.pricing import Offer
        from gensyn_py.requester.submit import submit_job
        from gensyn_py.train.spec import parse_spec

        parsed = parse_spec(spec)
        offer = Offer(MAX_PRICE, self.collateral_for(parsed.num_segments), commit_window)
        return submit_job(self.requester, parsed, offer)

    def completed(self, job_ids: Iterable[int]) -> bool:
        return all(self.view.job_state(j).status is JobStatus.COMPLETED for j in job_ids)

    def wait_jobs(self, job_ids: Iterable[int], timeout: float, on_wait: Callable[[], None] | None = None) -> None:
        """Wait until every job is Completed (checking the daemons are alive, or calling `on_wait`)."""
        pending = set(job_ids)

        def done() -> bool:
            pending.difference_update([j for j in pending if self.completed([j])])
            return not pending

        wait_until(done, timeout, f"job(s) {sorted(pending)} to complete", every=0.5,
                   on_wait=on_wait or self.check_alive)
