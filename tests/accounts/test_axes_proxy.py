"""django-axes behind a reverse proxy: X-Forwarded-For is believed only when configured to be.

By default the lockout key is (username, REMOTE_ADDR) and a forged X-Forwarded-For
changes nothing. With ``AXES_IPWARE_META_PRECEDENCE_ORDER=HTTP_X_FORWARDED_FOR,REMOTE_ADDR``
and ``AXES_IPWARE_PROXY_COUNT=0`` (one proxy that overwrites the header with the client's
address) each client behind the proxy is locked out on its own; a header of another
length than the configured chain is not believed.
"""

import runpy

import pytest
from django.test import Client

from tests.paths import REPO_ROOT

SETTINGS_FILE = REPO_ROOT / "config" / "settings.py"
PROXY = "10.0.0.2"  # every request below reaches Django from the proxy


def load_settings(monkeypatch, **env):
    for name in ("AXES_IPWARE_META_PRECEDENCE_ORDER", "AXES_IPWARE_PROXY_COUNT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(SETTINGS_FILE))


def test_the_header_is_ignored_unless_the_environment_says_otherwise(monkeypatch):
    default = load_settings(monkeypatch)
    assert default["AXES_IPWARE_META_PRECEDENCE_ORDER"] == ("REMOTE_ADDR",)
    assert default["AXES_IPWARE_PROXY_COUNT"] is None

    proxied = load_settings(monkeypatch, AXES_IPWARE_META_PRECEDENCE_ORDER="HTTP_X_FORWARDED_FOR, REMOTE_ADDR",
                            AXES_IPWARE_PROXY_COUNT="0")
    assert proxied["AXES_IPWARE_META_PRECEDENCE_ORDER"] == ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")
    assert proxied["AXES_IPWARE_PROXY_COUNT"] == 0


def _fail(forwarded_for: str, times: int) -> list[int]:
    client = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded_for)
    return [client.post("/accounts/login/", {"username": "alice", "password": "wrong"}).status_code
            for _ in range(times)]


def _log_in(forwarded_for: str, password: str) -> int:
    client = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=forwarded_for)
    return client.post("/accounts/login/", {"username": "alice", "password": password}).status_code


@pytest.mark.django_db
def test_by_default_a_forged_header_does_not_escape_the_lockout(settings, candidate, password):
    settings.AXES_FAILURE_LIMIT = 3
    # Each attempt claims another address: still one (alice, proxy address) pair, locked at the third.
    statuses = [_fail(f"198.51.100.{n}", 1)[0] for n in range(4)]

    assert statuses == [200, 200, 429, 429]
    assert _log_in("203.0.113.99", password) == 429


@pytest.mark.django_db
def test_behind_a_configured_proxy_each_client_is_locked_out_on_its_own(settings, candidate, password):
    settings.AXES_FAILURE_LIMIT = 3
    settings.AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")
    settings.AXES_IPWARE_PROXY_COUNT = 0

    assert _fail("203.0.113.7", 3) == [200, 200, 429]
    assert _log_in("203.0.113.7", password) == 429
    assert _log_in("198.51.100.20", password) == 302  # another client behind the same proxy


@pytest.mark.django_db
def test_behind_a_configured_proxy_a_longer_chain_than_configured_is_not_believed(settings, candidate, password):
    settings.AXES_FAILURE_LIMIT = 3
    settings.AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")
    settings.AXES_IPWARE_PROXY_COUNT = 0

    # A client prepending made-up addresses gets the proxy's address, shared by every such attempt.
    statuses = [_fail(f"192.0.2.{n}, 203.0.113.7", 1)[0] for n in range(3)]

    assert statuses == [200, 200, 429]
    assert _log_in("192.0.2.200, 203.0.113.7", password) == 429
    assert _log_in("203.0.113.7", password) == 302  # the client's own, well-formed header is not locked
