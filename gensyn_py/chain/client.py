"""Connect to an RPC node, and retry calls that fail for transient reasons.

`connect()` checks the node answers and is on the expected chain, so a wrong
URL or a wrong network is one clear `ChainError` at start-up instead of a
confusing failure later. Retries are ours (bounded, with backoff), not the
provider's, so a dead node fails fast.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

import requests
from web3 import Web3
from web3.exceptions import Web3RPCError
from web3.providers import BaseProvider, HTTPProvider, IPCProvider
from web3.types import RPCEndpoint

from gensyn_py.errors import ChainError

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_TIMEOUT = 10.0
# JSON-RPC error codes that mean "try again later": limit exceeded, resource unavailable.
_TRANSIENT_RPC_CODES = {-32005, -32002, 429}


def is_transient(exc: BaseException) -> bool:
    """Whether an RPC failure is worth retrying (connection trouble, timeouts, rate limits)."""
    if isinstance(exc, (requests.ConnectionError, requests.Timeout, ConnectionError, TimeoutError)):
        return True
    if isinstance(exc, requests.HTTPError):
        status = exc.response.status_code if exc.response is not None else None
        return status in (429, 502, 503, 504)
    if isinstance(exc, Web3RPCError):
        error = (exc.rpc_response or {}).get("error")
        code = error.get("code") if isinstance(error, dict) else None
        return code in _TRANSIENT_RPC_CODES
    return False


def with_retry(
    fn: Callable[[], T],
    *,
    attempts: int = 4,
    base_delay: float = 0.25,
    max_delay: float = 4.0,
    retry_if: Callable[[BaseException], bool] = is_transient,
    what: str = "RPC call",
) -> T:
    """Call `fn`, retrying transient failures with exponential backoff and jitter.

    The last failure is re-raised unchanged, so callers see the real error.
    """
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:
            if attempt == attempts or not retry_if(exc):
                raise
            delay = min(max_delay, base_delay * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
            log.debug("%s failed (%s); retry %d/%d in %.2fs", what, exc, attempt, attempts - 1, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")  # the loop either returns or raises


# web3's validation middleware asks the node for its chain id before every eth_call and eth_estimateGas, which
# doubled the RPCs of a daemon's cycle (about a third of an idle daemon's CPU). The id of a chain never changes
# under a URL we checked once (`connect`), so the provider keeps the first answer.
CACHED_REQUESTS = {RPCEndpoint("eth_chainId")}


def make_provider(rpc_url: str, timeout: float = DEFAULT_TIMEOUT) -> BaseProvider:
    """An HTTP(S) provider for URLs, an IPC provider for socket paths; no provider-level retries."""
    cache = {"cache_allowed_requests": True, "cacheable_requests": CACHED_REQUESTS}
    if rpc_url.startswith(("http://", "https://")):
        return HTTPProvider(rpc_url, request_kwargs={"timeout": timeout}, exception_retry_configuration=None,
                            **cache)
    if rpc_url.endswith(".ipc") or rpc_url.startswith("/"):
        return IPCProvider(rpc_url, timeout=max(1, round(timeout)), **cache)
    raise ChainError(f"unsupported RPC URL {rpc_url!r}: use http(s):// or a path to an .ipc socket")


def connect(
    rpc_url: str,
    expected_chain_id: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    attempts: int = 3,
) -> Web3:
    """A connected `Web3` for `rpc_url`; `ChainError` naming the URL if it is dead or on another chain."""
    w3 = Web3(make_provider(rpc_url, timeout))
    try:
        chain_id = with_retry(
            lambda: int(w3.eth.chain_id), attempts=attempts, what=f"eth_chainId on {rpc_url}"
        )
    except Exception as exc:
        raise ChainError(f"cannot reach an RPC node at {rpc_url}: {_short(exc)}") from exc
    if expected_chain_id is not None and chain_id != expected_chain_id:
        raise ChainError(f"RPC node at {rpc_url} is on chain {chain_id}, expected chain {expected_chain_id}")
    log.debug("connected to %s (chain %d)", rpc_url, chain_id)
    return w3


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
