"""Withheld data is noticed by the availability probe, and only the solver's own copy can answer for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gensyn_py.errors import ContentNotFound
from gensyn_py.proof.availability import missing_data, republish
from gensyn_py.sim.cheats import WITHHOLDING, solve
from tests.unit.trainkit import digits_flat, store_at, tiny_spec

JOB = 9


@pytest.mark.parametrize("name", sorted(WITHHOLDING))
def test_the_probe_finds_withheld_data_and_the_cheater_cannot_answer(tmp_path: Path, name: str) -> None:
    spec, ds, store = tiny_spec(), digits_flat(), store_at(tmp_path)
    c = WITHHOLDING[name](spec, ds, store, JOB, 0, 1)
    problem = missing_data(store, c.manifest_cid, 0, timeout=0.1, attempts=1)
    assert problem is not None
    assert ("manifest" if name == "withheld_manifest" else "final checkpoint") in problem
    with pytest.raises(ContentNotFound):
        republish(store, c.manifest_cid, 0)


def test_honest_data_is_found_and_answered_with_leaves_in_the_root(tmp_path: Path) -> None:
    from gensyn_py.proof.commitment import segment_leaf

    spec, ds, store = tiny_spec(), digits_flat(), store_at(tmp_path)
    c = solve(spec, ds, store, JOB, 0, 1)
    assert missing_data(store, c.manifest_cid, 1, timeout=0.1, attempts=1) is None
    seg, last, cids = republish(store, c.manifest_cid, 1)
    assert (seg.index, last.index) == (1, c.manifest.num_segments - 1)
    assert last.end_hash == c.final_state_hash
    assert segment_leaf(seg.index, seg.start_hash, seg.end_hash, seg.transcript_commit) in c.manifest.leaves()
    assert c.manifest.checkpoint_cids[-1] in cids and c.manifest_cid in cids


def test_an_answer_round_trips_its_abi_encoding() -> None:
    from gensyn_py.chain.pool import decode_answer, encode_answer
    from gensyn_py.types import SegmentLeaf

    seg = SegmentLeaf(2, b"\x01" * 32, b"\x02" * 32, b"\x03" * 32, (b"\x04" * 32, b"\x05" * 32))
    last = SegmentLeaf(3, b"\x02" * 32, b"\x06" * 32, b"\x07" * 32, ())
    assert decode_answer(encode_answer(seg, last, '{"final": "bafy"}')) == (seg, last, '{"final": "bafy"}')
