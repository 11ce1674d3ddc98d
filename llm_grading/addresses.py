"""Which base URLs the site calls: https anywhere public; private and loopback hosts only where the operator allows.

The rules (issue 34), checked when an endpoint is saved and again, on the resolved addresses, at
every call (a name that resolved to a public address at saving may resolve to a private one later):

* the scheme is ``https``, or ``http`` for a host whose every address is private or loopback (a local vLLM,
  SGLang or Ollama server) where ``settings.LLM_ENDPOINT_ALLOW_PRIVATE`` is on;
* with that setting off (production: it defaults to off when ``SITE_URL`` is https) every address the host
  resolves to must be a global one: no loopback, private, shared (100.64/10), link-local, multicast, reserved
  or unspecified address, IPv4-mapped IPv6 included;
* link-local (169.254.0.0/16, fe80::/10: cloud metadata services), multicast and unspecified addresses are
  refused whatever the setting;
* no user name or password in the URL, no query or fragment.

:func:`pinned_address` returns the one checked address the call then connects to, so the name is not resolved
a second time between the check and the connection (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

#: The longest base URL kept.
MAX_URL = 500


class EndpointRefused(Exception):
    """A base URL this site will not call; the message is one sentence for the user."""


def allow_private() -> bool:
    """Whether private and loopback addresses may be called (``settings.LLM_ENDPOINT_ALLOW_PRIVATE``)."""
    return bool(getattr(settings, "LLM_ENDPOINT_ALLOW_PRIVATE", False))


def _always_refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return address.is_link_local or address.is_multicast or address.is_unspecified


def _unwrap(address):
    """An IPv4-mapped IPv6 address (``::ffff:10.0.0.1``) as the IPv4 address it carries."""
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def split(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a base URL, after the checks that need no name resolution.

    Raises :class:`EndpointRefused` for anything but an ``http(s)://host[:port]/path`` URL of at most
    :data:`MAX_URL` characters with no credentials, query or fragment.
    """
    text = (url or "").strip()
    if len(text) > MAX_URL:
        raise EndpointRefused(f"The base URL is {len(text)} characters long; at most {MAX_URL} are accepted.")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise EndpointRefused(f"Could not read {text!r} as a URL: expected e.g. https://api.example.com/v1.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise EndpointRefused(f"Read {text!r}: expected a URL starting with https:// (or http:// for a server on "
                              "your own machine or network), e.g. https://api.example.com/v1.")
    if parts.username or parts.password:
        raise EndpointRefused("The base URL carries a user name or password; put the key in the API key field "
                              "instead.")
    if parts.query or parts.fragment:
        raise EndpointRefused("The base URL has a query or fragment (after ? or #); give only the address, "
                              "e.g. http://127.0.0.1:8000/v1.")
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80)


def resolve(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Every address ``host`` resolves to (a literal address is itself); raises :class:`EndpointRefused`."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as error:
        raise EndpointRefused(f"The host {host!r} could not be resolved ({error}).") from None
    addresses = []
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise EndpointRefused(f"The host {host!r} has no address.")
    return addresses


def pinned_address(url: str, *, private_allowed: bool | None = None) -> str:
    """The address to connect to for ``url``, after every rule above; raises :class:`EndpointRefused`.

    ``private_allowed`` defaults to :func:`allow_private`. Returns the first resolved address as text (IPv6
    without brackets).
    """
    private_allowed = allow_private() if private_allowed is None else private_allowed
    scheme, host, port = split(url)
    addresses = [_unwrap(address) for address in resolve(host, port)]
    for address in addresses:
        if _always_refused(address):
            raise EndpointRefused(f"{host} resolves to {address}, a link-local, multicast or unspecified address, "
                                  "which this site never calls.")
        if not address.is_global and not private_allowed:
            raise EndpointRefused(f"{host} resolves to {address}, a private or loopback address, and this site "
                                  "calls only public addresses; give your server's public https address.")
    if scheme == "http" and any(address.is_global for address in addresses):
        raise EndpointRefused(f"{host} is a public address: use https:// (plain http:// is accepted only for a "
                              "server on a private or loopback address).")
    if scheme == "http" and not private_allowed:
        raise EndpointRefused("The base URL must start with https://.")
    return str(addresses[0])
