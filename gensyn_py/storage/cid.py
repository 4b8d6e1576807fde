"""IPFS content ids computed locally, byte-for-byte what a Kubo-compatible node returns.

`cid_for_bytes(data)` reproduces ``POST /api/v0/add`` with::

    cid-version=1  raw-leaves=true  chunker=size-262144  trickle=false  hash=sha2-256

That is the go/js UnixFS importer with the balanced layout:

* the input is cut into 262144-byte chunks (empty input is one empty chunk);
* each chunk is a ``raw`` block (multicodec 0x55);
* a file of a single chunk *is* that raw block: ``bafkrei...``;
* otherwise chunks are grouped 174 at a time under dag-pb nodes (multicodec 0x70)
  whose Data is a UnixFS ``File`` message (filesize + one blocksize per child),
  and those nodes are grouped 174 at a time again, until one root remains:
  ``bafybei...``.

The protobufs are written by hand in the canonical dag-pb form: a PBNode is its
Links (field 2) followed by its Data (field 1); a PBLink is Hash (1), Name (2,
always present, empty) and Tsize (3) — the cumulative size of the linked DAG.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

CHUNK_SIZE = 262144
MAX_LINKS = 174

CODEC_RAW = 0x55
CODEC_DAG_PB = 0x70
MH_SHA2_256 = 0x12
SHA256_LEN = 32

_UNIXFS_FILE = 2
_B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


# --------------------------------------------------------------------------- encoding helpers


def _varint(n: int) -> bytes:
    if n < 0:
        raise ValueError("varint must be non-negative")
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _field_bytes(field: int, payload: bytes) -> bytes:
    return _varint((field << 3) | 2) + _varint(len(payload)) + payload


def _field_varint(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _cid_bytes(codec: int, digest: bytes) -> bytes:
    return b"\x01" + _varint(codec) + bytes([MH_SHA2_256, len(digest)]) + digest


def _base32(raw: bytes) -> str:
    return "b" + base64.b32encode(raw).decode("ascii").lower().rstrip("=")


def _base58btc_decode(text: str) -> bytes:
    n = 0
    for ch in text:
        idx = _B58_ALPHABET.find(ch)
        if idx < 0:
            raise ValueError(f"invalid base58 character {ch!r}")
        n = n * 58 + idx
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    pad = len(text) - len(text.lstrip("1"))
    return b"\x00" * pad + body


# --------------------------------------------------------------------------- the DAG builder


@dataclass(frozen=True)
class _Node:
    cid: bytes  # binary CID
    file_size: int  # bytes of file content beneath this node
    tsize: int  # cumulative serialized size of the DAG below (incl. this block)


def _raw_leaf(chunk: bytes) -> _Node:
    return _Node(_cid_bytes(CODEC_RAW, hashlib.sha256(chunk).digest()), len(chunk), len(chunk))


def _unixfs_file(blocksizes: list[int]) -> bytes:
    data = _field_varint(1, _UNIXFS_FILE) + _field_varint(3, sum(blocksizes))
    for size in blocksizes:
        data += _field_varint(4, size)
    return data


def _parent(children: list[_Node]) -> _Node:
    links = b""
    for child in children:
        link = _field_bytes(1, child.cid) + _field_bytes(2, b"") + _field_varint(3, child.tsize)
        links += _field_bytes(2, link)
    block = links + _field_bytes(1, _unixfs_file([c.file_size for c in children]))
    cid = _cid_bytes(CODEC_DAG_PB, hashlib.sha256(block).digest())
    return _Node(cid, sum(c.file_size for c in children), len(block) + sum(c.tsize for c in children))


def cid_bytes_for(data: bytes) -> bytes:
    """The binary CID of `data` (see module docstring for the layout)."""
    if len(data) <= CHUNK_SIZE:
        return _raw_leaf(data).cid
    view = memoryview(data)
    level = [_raw_leaf(bytes(view[i : i + CHUNK_SIZE])) for i in range(0, len(data), CHUNK_SIZE)]
    while len(level) > 1:
        level = [_parent(level[i : i + MAX_LINKS]) for i in range(0, len(level), MAX_LINKS)]
    return level[0].cid


def cid_for_bytes(data: bytes) -> str:
    """The CIDv1 (base32) a Kubo-compatible node assigns to `data` with the project's add settings."""
    return _base32(cid_bytes_for(bytes(data)))


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class ParsedCid:
    version: int
    codec: int
    hash_code: int
    digest: bytes

    @property
    def is_raw(self) -> bool:
        return self.codec == CODEC_RAW

    def to_bytes(self) -> bytes:
        if self.version == 0:
            return bytes([self.hash_code, len(self.digest)]) + self.digest
        multihash = _varint(self.hash_code) + _varint(len(self.digest)) + self.digest
        return b"\x01" + _varint(self.codec) + multihash

    def __str__(self) -> str:
        return _base32(self.to_bytes()) if self.version == 1 else _base58_cidv0(self.to_bytes())


def _base58_cidv0(raw: bytes) -> str:
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, rem = divmod(n, 58)
        out = _B58_ALPHABET[rem] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\x00"))) + out


def parse_cid(text: str) -> ParsedCid:
    """Parse a CIDv1 in base32 (``b...``) or a CIDv0 (``Qm...``); raise ValueError if malformed."""
    if not isinstance(text, str) or not text:
        raise ValueError("CID must be a non-empty string")
    if len(text) == 46 and text.startswith("Qm"):
        raw = _base58btc_decode(text)
        if len(raw) != 34 or raw[0] != MH_SHA2_256 or raw[1] != SHA256_LEN:
            raise ValueError(f"malformed CIDv0 {text!r}")
        return ParsedCid(0, CODEC_DAG_PB, MH_SHA2_256, raw[2:])
    if text[0] != "b":
        raise ValueError(f"unsupported multibase prefix in {text!r} (expected base32 'b')")
    body = text[1:]
    if body != body.lower() or not body:
        raise ValueError(f"malformed base32 CID {text!r}")
    try:
        raw = base64.b32decode(body.upper() + "=" * (-len(body) % 8))
    except (ValueError, binascii.Error) as exc:
        raise ValueError(f"malformed base32 CID {text!r}") from exc
    version, pos = _read_varint(raw, 0)
    if version != 1:
        raise ValueError(f"unsupported CID version {version} in {text!r}")
    codec, pos = _read_varint(raw, pos)
    hash_code, pos = _read_varint(raw, pos)
    length, pos = _read_varint(raw, pos)
    digest = raw[pos:]
    if len(digest) != length:
        raise ValueError(f"multihash length mismatch in {text!r}")
    if hash_code == MH_SHA2_256 and length != SHA256_LEN:
        raise ValueError(f"sha2-256 digest of wrong length in {text!r}")
    parsed = ParsedCid(1, codec, hash_code, digest)
    if str(parsed) != text:
        raise ValueError(f"non-canonical CID encoding {text!r}")
    return parsed


def is_valid_cid(text: str) -> bool:
    try:
        parse_cid(text)
    except ValueError:
        return False
    return True


def raw_sha256(text: str) -> bytes | None:
    """The sha2-256 digest of the content for a raw-codec CID (single-chunk data); None otherwise."""
    parsed = parse_cid(text)
    if parsed.is_raw and parsed.hash_code == MH_SHA2_256:
        return parsed.digest
    return None


def raw_cid_for_sha256(digest: bytes) -> str:
    """The raw-codec CIDv1 whose content hashes to `digest` (for data of at most one chunk)."""
    if len(digest) != SHA256_LEN:
        raise ValueError("sha2-256 digest must be 32 bytes")
    return _base32(_cid_bytes(CODEC_RAW, digest))
