"""The API keys users give, encrypted at rest with Fernet (the ``cryptography`` package).

The encryption key comes from ``settings.LLM_KEY_ENCRYPTION_KEY`` (environment variable of the same name):
one secret, or several separated by commas to rotate (the first encrypts, every one decrypts, as Fernet's
``MultiFernet``). Unset, the embedded default keeps a random one in ``var/llm_key_secret``
(config/settings.py). Each secret is any string; the 32-byte Fernet key is derived from it with HKDF-SHA256,
so a pass phrase works as well as ``Fernet.generate_key()``'s output.

A key is never shown back, never logged and never exported; :func:`mask` hides it inside a server's message.
"""

from __future__ import annotations

import base64
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

_INFO = b"llm-serving-prep llm_grading api keys"


class KeyUnreadable(Exception):
    """A stored key the current encryption keys cannot decrypt (``LLM_KEY_ENCRYPTION_KEY`` was changed)."""


def _fernet_key(secret: str) -> bytes:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(secret.encode())
    return base64.urlsafe_b64encode(derived)


@lru_cache(maxsize=4)
def _cipher(setting: str) -> MultiFernet:
    secrets = [part.strip() for part in setting.split(",") if part.strip()]
    if not secrets:
        raise KeyUnreadable("LLM_KEY_ENCRYPTION_KEY is empty.")
    return MultiFernet([Fernet(_fernet_key(secret)) for secret in secrets])


def cipher() -> MultiFernet:
    """The Fernet cipher of ``settings.LLM_KEY_ENCRYPTION_KEY``."""
    return _cipher(settings.LLM_KEY_ENCRYPTION_KEY)


def encrypt(api_key: str) -> str:
    """The Fernet token (text) of ``api_key``; an empty key stays empty."""
    return cipher().encrypt(api_key.encode()).decode() if api_key else ""


def decrypt(token: str) -> str:
    """The API key of a stored token; raises :class:`KeyUnreadable` when no current key decrypts it."""
    if not token:
        return ""
    try:
        return cipher().decrypt(token.encode()).decode()
    except InvalidToken:
        raise KeyUnreadable("The stored API key cannot be decrypted with the current LLM_KEY_ENCRYPTION_KEY; "
                            "enter the key again in the grading settings.") from None


def mask(text: str, api_key: str) -> str:
    """``text`` with every occurrence of ``api_key`` (and of its last eight characters) replaced by ``***``."""
    for secret in (api_key, api_key[-8:] if len(api_key) >= 12 else ""):
        if secret:
            text = text.replace(secret, "***")
    return text
