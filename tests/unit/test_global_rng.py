"""A job's seeded init is the same whatever other threads of the process do meanwhile (train/global_rng.py): the
explorer recomputing checkpoint losses (it builds Trainers, and their models draw from torch's default generator)
while a requester builds a step table in another thread once gave the requester other round-0 weights."""

from __future__ import annotations

import sys
import threading

import torch

from gensyn_py.sim.market import digits_job_spec
from gensyn_py.train.data import dataset_entry, digits
from gensyn_py.train.spec import parse_spec
from gensyn_py.train.trainer import Trainer, init_weights


def _spec(seed: int) -> object:
    train, _ = digits(image=False)
    return parse_spec(digits_job_spec(dict(dataset_entry(train, train.to_bytes())), 1, 1, 20, seed))


def test_the_seeded_init_does_not_see_other_threads_draws() -> None:
    spec, other = _spec(21), _spec(5)
    train, _ = digits(image=False)
    want = init_weights(spec)
    stop = threading.Event()

    def busy() -> None:  # what an explorer thread does for its loss charts: the seeded init of another job
        while not stop.is_set():
            init_weights(other)

    threads = [threading.Thread(target=busy) for _ in range(2)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns between nearly every bytecode: the draws would interleave
    for t in threads:
        t.start()
    try:
        seen = [init_weights(spec) for _ in range(40)]
        trained = Trainer(spec, train, 0, 0, "cpu").state_dict()  # the start state a step table commits to
        seen.append({k[len("model/"):]: v for k, v in trained.items() if k.startswith("model/")})
    finally:
        stop.set()
        for t in threads:
            t.join()
        sys.setswitchinterval(interval)
    for got in seen:
        assert got.keys() == want.keys()
        assert all(torch.equal(got[k], want[k]) for k in want)
