"""Typed readers of environment variables for the settings, and the secret key kept on disk."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

_TRUE_WORDS = {"1", "true", "yes", "on"}
_FALSE_WORDS = {"0", "false", "no", "off", ""}


def envstr(name: str, default: str = "") -> str:
    """Return the environment variable ``name`` as a string, or ``default``."""
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    """Return the environment variable ``name`` as a boolean.

    Accepts 1/0, true/false, yes/no, on/off (any case); anything else is a
    configuration error rather than a silent ``False``.
    """
    raw = os.environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}.")


def envint(name: str, default: int) -> int:
    """Return the environment variable ``name`` as an integer, or ``default``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {raw!r}.") from None


def envlist(name: str, default: str = "") -> list[str]:
    """Return the environment variable ``name`` split on commas, blanks dropped."""
    return [item.strip() for item in envstr(name, default).split(",") if item.strip()]


def cache_from_url(url: str) -> dict:
    """Build a Django ``CACHES["default"]`` entry from a cache URL.

    ``redis://`` / ``rediss://`` give Django's Redis cache as wrapped by
    :class:`core.cache.RedisCache`, which answers "not cached" while Redis is
    unreachable (short socket timeouts) instead of failing the page;
    ``locmem://`` gives the per-process memory cache and ``dummy://`` no cache at all.
    """
    scheme = url.split("://", 1)[0].lower()
    if scheme in ("redis", "rediss"):
        return {"BACKEND": "core.cache.RedisCache", "LOCATION": url,
                "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}
    if scheme == "locmem":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    if scheme == "dummy":
        return {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}
    raise ImproperlyConfigured(
        f"CACHE_URL must start with redis://, rediss://, locmem:// or dummy://, not {url!r}."
    )


def kept_secret_key(path: Path) -> str:
    """Return the secret key kept in ``path``, generating it there (mode 600) the first time.

    The key is Django's ``get_random_secret_key()`` (50 random characters). It is
    written to a temporary file and hard-linked into place, so two processes
    starting at once never read a half-written key: the second link fails and
    that process reads the first one's key. Several hosts must share one key:
    set ``SECRET_KEY`` there instead.
    """
    try:
        kept = path.read_text().strip()
    except FileNotFoundError:
        kept = ""
    if kept:
        return kept
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".secret_key-")
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(get_random_secret_key() + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process kept its key first: use that one
    finally:
        os.unlink(temporary)
    return path.read_text().strip()
