"""A signed local copy of the model files this machine wrote or has checked, so that a
prediction from a skops file costs an unpickle, not skops' audit, after the first time.

Loading a skops file builds every object through skops' audit (seconds for an ensemble of
boosted trees) after importing ``skops.io``, which lists every scikit-learn estimator: a
prediction then costs far more than importing scikit-learn, LightGBM and pandas (timings in
``reports/predict-time/``). So the payload of a skops file that was checked (loaded through skops,
or written by :meth:`~metabo.ensembles.model.EnsembleModel.save` from a payload this process
built) is kept as a pickle (protocol 5, read by the C unpickler: joblib's reader is the
Python one, 2.0 s against 0.14 s for a 3.3 MB booster of 3,375 trees) in
``<home>/cache/models/<sha256 of the file>.pickle``,
with ``<same>.tag``, the HMAC-SHA256 (RFC 2104) of the file's digest and the pickle's bytes
under a key of 32 random bytes kept beside them (``key``, mode 0600, made on first use).

A later load of a file with the same SHA-256 unpickles the copy only when its tag verifies
under the key, so a copy written by anyone who cannot read the key, or changed since, is
ignored (and the file checked through skops again). The trust is the key's: a process that
can read ``<home>/cache/models/key`` runs as the user already. At most :data:`MAX_ENTRIES`
copies are kept, the least recently used removed first. Any failure here (an unwritable
home, a full disk) only costs the speed: the caller loads through skops.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import pickle
import secrets
import tempfile
from pathlib import Path
from typing import Any

from metabo.paths import cache_dir

logger = logging.getLogger(__name__)

#: how many checked model payloads the cache keeps
MAX_ENTRIES = 20
_KEY_BYTES = 32


def file_digest(path: str | os.PathLike[str]) -> str:
    """The SHA-256 hex digest of the file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


#: the signing key's file, in the cache's folder beside the entries
_KEY_FILE = "key"


def _folder() -> Path:
    return cache_dir("models")


def _key(create: bool) -> bytes | None:
    path = _folder() / _KEY_FILE
    try:
        key = path.read_bytes()
        return key if len(key) == _KEY_BYTES else None
    except FileNotFoundError:
        if not create:
            return None
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(_KEY_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key


def _tag(key: bytes, digest: str, data: bytes) -> bytes:
    return hmac.new(key, digest.encode() + b"\0" + data, hashlib.sha256).digest()


def cached_payload(digest: str) -> Any | None:
    """The kept payload of the file of SHA-256 ``digest``, or None when there is none or
    its tag does not verify."""
    try:
        key = _key(create=False)
        if key is None:
            return None
        base = _folder() / digest
        data, tag = base.with_suffix(".pickle").read_bytes(), base.with_suffix(".tag").read_bytes()
    except OSError:
        return None
    if not hmac.compare_digest(tag, _tag(key, digest, data)):
        logger.warning("the cached copy of model %s does not verify; ignored", digest[:12])
        return None
    os.utime(base.with_suffix(".tag"))  # recently used
    return pickle.loads(data)  # noqa: S301 (verified bytes this user's key signed)


def keep_payload(digest: str, payload: Any) -> None:
    """Keep ``payload``, the checked content of the file of SHA-256 ``digest``, signed."""
    try:
        key = _key(create=True)
        if key is None:
            return
        data = pickle.dumps(payload, protocol=5)
        folder = _folder()
        for suffix, content in ((".pickle", data), (".tag", _tag(key, digest, data))):
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{digest[:12]}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            os.replace(tmp, folder / f"{digest}{suffix}")
        _prune(folder)
    except OSError as e:
        logger.info("model cache not written (%s); loads stay checked through skops", e)


def _prune(folder: Path) -> None:
    """Keep the :data:`MAX_ENTRIES` most recently used entries: every other file of ``folder``
    goes (older entries, a pickle left without its tag, an earlier version's copies), but the
    signing key and the hidden temporary files a write in progress holds."""
    tags = sorted(folder.glob("*.tag"), key=lambda p: p.stat().st_mtime, reverse=True)
    kept = {tag.stem for tag in tags[:MAX_ENTRIES]}
    for path in folder.iterdir():
        if not path.name.startswith(".") and path.name != _KEY_FILE and path.stem not in kept:
            path.unlink(missing_ok=True)


__all__ = ["MAX_ENTRIES", "cached_payload", "file_digest", "keep_payload"]
