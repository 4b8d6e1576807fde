"""Open a content store from one string: ``local:/path``, a plain path, or ``http(s)://host:port``."""

from __future__ import annotations

from pathlib import Path

from gensyn_py.errors import ConfigError
from gensyn_py.storage.base import ContentStore
from gensyn_py.storage.kubo import KuboStore
from gensyn_py.storage.local import LocalStore


def open_store(spec: str | Path) -> ContentStore:
    """``local:/var/cas`` or ``/var/cas`` -> LocalStore; ``http://127.0.0.1:5001`` -> KuboStore."""
    if isinstance(spec, Path):
        return LocalStore(spec)
    text = spec.strip()
    if not text:
        raise ConfigError("empty content store spec")
    if text.startswith(("http://", "https://")):
        return KuboStore(text)
    if text.startswith("local:"):
        path = text[len("local:") :]
        if not path:
            raise ConfigError(f"content store spec {spec!r} names no directory")
        return LocalStore(Path(path).expanduser())
    if "://" in text:
        raise ConfigError(f"unsupported content store spec {spec!r} (use local:/path or http://host:port)")
    return LocalStore(Path(text).expanduser())
