"""The requester's side: price a job, submit it, follow it, download its verified model, or cancel it.

- `spec_file.load_spec`: read a spec file, uploading a local dataset it names;
- `submit.submit_job`: every check before any transaction, then approve and submit;
- `follow.JobWatcher` / `follow.follow`: poll a job and draw it live;
- `download.download_model`: the final model, verified against the chain, with a sidecar;
- `cancel.cancel_job` / `cancel.claim_credit`: cancel and withdraw refunds;
- `estimate.estimate`: FLOPs, time per hardware class, tokens, cloud-equivalent cost.

Heavy imports (torch) happen inside the functions that need them.
"""

from gensyn_py.requester.pricing import Offer, PoolParams, escrow_for, unit_count
from gensyn_py.requester.session import Requester, open_requester

__all__ = ["Offer", "PoolParams", "Requester", "escrow_for", "open_requester", "unit_count"]
