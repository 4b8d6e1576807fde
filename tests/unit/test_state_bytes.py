"""A state's bytes gathered with the GIL released (proof/state_bytes.py) are exactly safetensors' bytes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.torch import save

from gensyn_py.proof import state_bytes
from gensyn_py.proof.state_bytes import native_module, safetensors_bytes

pytestmark = pytest.mark.skipif(native_module() is None, reason="the C module was not built (no C compiler)")

# Names a state has (model/<param>, optim/<param>/<key>, cursor, rng) and ones that fall back to safetensors.
NAMES = st.one_of(st.from_regex(r"[a-z]{1,3}(/[a-z0-9_.]{1,6}){0,2}", fullmatch=True),
                  st.sampled_from(["ä", "tab\there", 'quote"', "back\\slash", "model/é"]))
DTYPES = st.sampled_from([torch.float32, torch.int64, torch.uint8, torch.float64, torch.int32])
SHAPES = st.lists(st.integers(0, 4), max_size=3)


@st.composite
def states(draw: st.DrawFn) -> dict[str, torch.Tensor]:
    names = draw(st.lists(NAMES, min_size=1, max_size=8, unique=True))
    out = {}
    for i, name in enumerate(names):
        shape, dtype = draw(SHAPES), draw(DTYPES)
        values = np.random.default_rng(i).integers(0, 200, size=shape)
        out[name] = torch.from_numpy(values).to(dtype)
    return out


@settings(max_examples=150, deadline=None)
@given(tensors=states())
def test_the_bytes_are_safetensors_bytes(tensors: dict[str, torch.Tensor]) -> None:
    assert safetensors_bytes(tensors) == save(tensors)


def test_a_large_state_is_gathered_natively_and_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    tensors = {"model/w": torch.randn(3000, 1000), "optim/w/exp_avg": torch.randn(3000, 1000),
               "cursor": torch.tensor([7, 9]), "rng": torch.arange(5000, dtype=torch.uint8)}
    calls: list[int] = []
    real = native_module()

    class Counting:
        @staticmethod
        def gather(size: int, head: bytes, parts: list[tuple[int, int]]) -> bytes:
            calls.append(len(parts))
            return bytes(real.gather(size, head, parts))

    monkeypatch.setattr(state_bytes, "_c", Counting)
    assert safetensors_bytes(tensors) == save(tensors) and calls == [4]


def test_gather_refuses_parts_that_do_not_fill_the_result() -> None:
    c = native_module()
    data = torch.arange(8, dtype=torch.uint8)
    assert c.gather(12, b"head", [(data.data_ptr(), 8)]) == b"head" + bytes(range(8))
    for size, parts in ((13, [(data.data_ptr(), 8)]), (11, [(data.data_ptr(), 8)]), (12, [(data.data_ptr(), -1)])):
        with pytest.raises(ValueError, match="do not fill exactly"):
            c.gather(size, b"head", parts)
    with pytest.raises(ValueError, match="longer than the result"):
        c.gather(2, b"head", [])
