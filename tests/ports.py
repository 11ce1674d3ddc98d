"""Loopback ports for the tests that start (or must not find) a Redis server of their own."""

from __future__ import annotations

import socket

from tests import needs

#: Kept apart from the shared Redis on 6379, so a test that stops its server disturbs nobody.
PORTS = range(6390, 6400)


def free_port() -> int:
    """A port of 6390-6399 that nothing listens on (connections to it are refused until a test binds it).

    Skips the test when all ten are taken (fails it under CI: :mod:`tests.needs`).
    """
    for port in PORTS:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    needs.missing("no free port in 6390-6399")
