"""Mode `exact`: a training step with PyTorch's own kernels and optimizers (deterministic settings).

Bit-exact only between nodes of the same replay class (device, driver, torch build, BLAS, threads).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from gensyn_py.errors import TrainingError

if TYPE_CHECKING:
    import torch

    from gensyn_py.train.spec import JobSpec


class ExactStep:
    """SGD or AdamW from torch.optim (no foreach kernels) over the model's parameters."""

    def __init__(self, model: torch.nn.Module, spec: JobSpec, device: str) -> None:
        from gensyn_py.train.models import task_of

        self.model = model
        self.spec = spec
        self.device = device
        self.lm = task_of(spec) == "lm"
        self.optimizer = self._make_optimizer()

    def _make_optimizer(self) -> torch.optim.Optimizer:
        import torch

        o = self.spec.optimizer
        params = list(self.model.parameters())
        if o.name == "sgd":
            return torch.optim.SGD(params, lr=o.lr, momentum=o.momentum, weight_decay=o.weight_decay,
                                   foreach=False)
        return torch.optim.AdamW(params, lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps,
                                 weight_decay=o.weight_decay, foreach=False)

    def loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of the model's output; LM outputs (B, T, V) are taken as (B*T, V)."""
        from torch.nn import functional as F

        out = self.model(x)
        if self.lm:
            out = out.reshape(-1, out.shape[-1])
        return F.cross_entropy(out, y.reshape(-1))

    def step(self, x: torch.Tensor, y: torch.Tensor, lr: float) -> float:
        from gensyn_py.repro.distributed import world

        if world()[1] > 1:
            # Stock kernels' reductions depend on how the batch is split: a data-parallel exact unit would be
            # its own replay class per world size, so it is refused rather than left unverifiable.
            raise TrainingError("mode 'exact' trains on one process; a data-parallel unit needs mode 'repro'")
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss(x, y)
        loss.backward()
        self.optimizer.step()
        return float(np.float32(loss.detach().float().cpu().item()))

    def optim_state(self, into: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
        import torch

        from gensyn_py.train.snapshot import copied

        state: dict[str, torch.Tensor] = {}
        for name, p in self.model.named_parameters():
            for key, value in self.optimizer.state.get(p, {}).items():
                if isinstance(value, torch.Tensor):
                    # a copy: the optimizer updates its state in place, and a checkpoint is encoded later
                    entry = f"optim/{name}/{key}"
                    state[entry] = copied(value, entry, into)
        return state

    def load_optim_state(self, entries: Mapping[str, torch.Tensor]) -> None:
        self.optimizer = self._make_optimizer()
        params = dict(self.model.named_parameters())
        for key, value in entries.items():
            pname, _, field = key[len("optim/"):].rpartition("/")
            if pname not in params:
                raise TrainingError(f"optimizer state for unknown parameter {pname!r}")
            want = () if field == "step" else tuple(params[pname].shape)
            if (value.numel() != 1) if field == "step" else (tuple(value.shape) != want):
                raise TrainingError(f"optimizer state {key!r} has shape {tuple(value.shape)}, expected {want}")
            dev = "cpu" if field == "step" else self.device
            self.optimizer.state[params[pname]][field] = value.clone().to(dev)
