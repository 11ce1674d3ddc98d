"""Django's Redis cache, made to treat an unreachable Redis as an empty cache.

The cache only spares work (the runbook's rendered Markdown); sessions, login
rate limiting (django-axes) and the outbox live in the database. So while Redis
is down a page must still render, uncached: every read here answers "not
cached", every write is dropped, one warning is logged, and for
:data:`PAUSE_AFTER_ERROR` seconds this process does not even try Redis, so a
silent server (socket timeouts) slows at most one request per pause.
``incr``/``decr`` still raise: there is no right answer to give for them.
"""

from __future__ import annotations

import functools
import logging
import time

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

#: Seconds during which, after a Redis error, the cache is skipped (per process and server list).
PAUSE_AFTER_ERROR = 10.0

_paused_until: dict[str, float] = {}


def _forgiving(fallback):
    """Run the cache method; on a Redis error (or during the pause after one) return ``fallback(args, kwargs)``."""

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            if time.monotonic() < _paused_until.get(self._location, 0.0):
                return fallback(args, kwargs)
            try:
                return method(self, *args, **kwargs)
            except RedisError as error:
                _paused_until[self._location] = time.monotonic() + PAUSE_AFTER_ERROR
                logger.warning("The Redis cache is unavailable (%s: %s); going without it for %.0f s.",
                               type(error).__name__, error, PAUSE_AFTER_ERROR)
                return fallback(args, kwargs)

        return wrapper

    return decorate


def _default(args, kwargs):
    return kwargs.get("default", args[1] if len(args) > 1 else None)


class RedisCache(DjangoRedisCache):
    """:class:`django.core.cache.backends.redis.RedisCache` that degrades to no cache while Redis is down."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._location = ",".join(self._servers)

    get = _forgiving(_default)(DjangoRedisCache.get)
    add = _forgiving(lambda args, kwargs: False)(DjangoRedisCache.add)
    set = _forgiving(lambda args, kwargs: None)(DjangoRedisCache.set)
    touch = _forgiving(lambda args, kwargs: False)(DjangoRedisCache.touch)
    delete = _forgiving(lambda args, kwargs: False)(DjangoRedisCache.delete)
    get_many = _forgiving(lambda args, kwargs: {})(DjangoRedisCache.get_many)
    has_key = _forgiving(lambda args, kwargs: False)(DjangoRedisCache.has_key)
    set_many = _forgiving(lambda args, kwargs: list(args[0] if args else kwargs["data"]))(DjangoRedisCache.set_many)
    delete_many = _forgiving(lambda args, kwargs: None)(DjangoRedisCache.delete_many)
    clear = _forgiving(lambda args, kwargs: False)(DjangoRedisCache.clear)
