"""torch's default random generator is one per process: who draws from it holds `GLOBAL_RNG`.

A job's round-0 weights are the registry's init under the default generator seeded by the job seed
(`trainer.init_weights`): PyTorch's modules initialise their parameters from that generator, which no argument
replaces. Another thread drawing from it meanwhile (building a model, which draws even when its values are about
to be overwritten, or seeding it for a check of its own) shifts the draws, and the weights come out different: a
requester's step table then names another start state than the solvers compute, or a solver trains from weights no
validator reproduces. Seen in one process that built a job's table while its explorer thread recomputed checkpoint
losses. Every draw site of this package holds the lock (a re-entrant one: a seeded build inside a held lock is fine).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

GLOBAL_RNG = threading.RLock()


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """torch's default generator seeded with `seed` for the block, no other thread of this package drawing meanwhile;
    its previous state restored after."""
    import torch

    with GLOBAL_RNG, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
