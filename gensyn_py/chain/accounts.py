"""Load and create signing accounts: a hex private key, or an encrypted keystore file.

Keys never reach a log line or an error message; errors name the file, not
its contents, and are raised `from None` so no traceback carries the key.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from eth_account import Account
from eth_account.signers.local import LocalAccount

from gensyn_py.errors import ConfigError

log = logging.getLogger(__name__)


def from_private_key(private_key: str | bytes) -> LocalAccount:
    """A `LocalAccount` from a 32-byte key, as bytes or hex (with or without 0x)."""
    try:
        return Account.from_key(private_key)
    except Exception:
        raise ConfigError("not a valid private key (expected 32 bytes of hex)") from None


def from_keystore(path: str | Path, password: str) -> LocalAccount:
    """Decrypt an Ethereum keystore (v3 JSON) file."""
    path = Path(path)
    try:
        keyfile = json.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read keystore {path}: {exc.strerror}") from None
    except ValueError:
        raise ConfigError(f"keystore {path} is not JSON") from None
    try:
        key = Account.decrypt(keyfile, password)
    except ValueError:
        raise ConfigError(f"cannot decrypt keystore {path}: wrong password or corrupt file") from None
    except Exception as exc:
        raise ConfigError(f"keystore {path} is not a valid keystore ({type(exc).__name__})") from None
    account = from_private_key(key)
    log.debug("loaded account %s from keystore %s", account.address, path)
    return account


def load_account(key_or_keystore: str, password: str | None = None) -> LocalAccount:
    """A hex private key, or the path of a keystore file to decrypt with `password`."""
    candidate = Path(key_or_keystore)
    if candidate.suffix == ".json" or candidate.is_file():
        if password is None:
            raise ConfigError(f"keystore {candidate} needs a password")
        return from_keystore(candidate, password)
    return from_private_key(key_or_keystore)


def create_keystore(
    path: str | Path,
    password: str,
    private_key: str | bytes | None = None,
    kdf: Literal["scrypt", "pbkdf2"] = "scrypt",
    iterations: int | None = None,
    overwrite: bool = False,
) -> LocalAccount:
    """Encrypt `private_key` (a fresh random one if None) into a keystore at `path`, mode 0600.

    `kdf="pbkdf2"` with a small `iterations` makes fast keystores for tests.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise ConfigError(f"keystore {path} already exists")
    account = Account.create() if private_key is None else from_private_key(private_key)
    keyfile: dict[str, Any] = Account.encrypt(account.key, password, kdf=kdf, iterations=iterations)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(keyfile, fh)
    os.chmod(path, 0o600)
    log.debug("wrote keystore for %s to %s", account.address, path)
    return account
