"""One chat-completions call to the user's OpenAI-compatible endpoint, with httpx, bounded every way.

:func:`complete` POSTs ``{base_url}/chat/completions`` with the messages and a JSON-schema
``response_format`` (structured output), and returns the reply message's text. The call:

* connects to the one address :func:`llm_grading.addresses.pinned_address` checked (the TLS name and the Host
  header stay the URL's host), so a name re-resolved to a private address between the check and the call is
  never reached;
* follows no redirect (a 3xx is an error: its target was never checked), reads no proxy from the environment;
* gives up after ``timeout_s`` seconds in all (connect, wait, read: the body is read in chunks against one
  deadline) and after ``max_bytes`` of reply.

Every failure raises :class:`CallFailed` with a ``kind`` (one of :data:`KINDS`) and one sentence for the user
that never contains the API key.
"""

from __future__ import annotations

import json
import time

import httpx

from . import addresses
from .keys import mask

#: Sent as the bearer token when the user gives no key (the value vLLM's and SGLang's examples use).
NO_KEY = "EMPTY"

TIMEOUT, REFUSED, MALFORMED, RATE_LIMITED, WRONG_KEY, REDIRECT, BLOCKED, UNREACHABLE, TOO_LARGE, HTTP_ERROR = (
    "timeout", "refused", "malformed", "rate_limited", "wrong_key", "redirect", "blocked", "unreachable",
    "too_large", "http_error")
KINDS = (TIMEOUT, REFUSED, MALFORMED, RATE_LIMITED, WRONG_KEY, REDIRECT, BLOCKED, UNREACHABLE, TOO_LARGE,
         HTTP_ERROR)


class CallFailed(Exception):
    """A call that gave no usable reply: ``kind`` (one of :data:`KINDS`) and ``str(self)``, one sentence."""

    def __init__(self, kind: str, sentence: str):
        super().__init__(sentence)
        self.kind = kind


def completions_url(base_url: str) -> str:
    """``{base_url}/chat/completions`` (one slash between them)."""
    return base_url.strip().rstrip("/") + "/chat/completions"


def _server_message(body: bytes, api_key: str) -> str:
    """The error message a server put in its JSON body (OpenAI's ``{"error": {"message"}}`` shape), cut short."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    if message is None and isinstance(data, dict):
        message = data.get("message") or data.get("detail")
    return mask(str(message), api_key)[:200] if message else ""


def _read(response: httpx.Response, deadline: float, max_bytes: int, timeout_s: float) -> bytes:
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise CallFailed(TOO_LARGE, f"Your endpoint's reply was larger than {max_bytes // 1024} KiB, so it was "
                                        "not read.")
        if time.monotonic() > deadline:
            raise CallFailed(TIMEOUT, f"Your model did not finish its reply within {timeout_s:g} seconds.")
        chunks.append(chunk)
    return b"".join(chunks)


def _status_error(status: int, body: bytes, api_key: str, model: str) -> CallFailed:
    said = _server_message(body, api_key)
    tail = f" (it said: {said.rstrip('.')})." if said else "."
    if status in (401, 403):
        return CallFailed(WRONG_KEY, f"Your endpoint refused the API key (HTTP {status}): check the key in your "
                                     f"grading settings{tail}")
    if status == 429:
        return CallFailed(RATE_LIMITED, f"Your endpoint is rate-limiting requests (HTTP 429): try again in a "
                                        f"minute{tail}")
    if status == 404:
        return CallFailed(HTTP_ERROR, f"Your endpoint answered HTTP 404: check the base URL (it usually ends in "
                                      f"/v1) and the model name {model!r}{tail}")
    return CallFailed(HTTP_ERROR, f"Your endpoint answered HTTP {status}{tail}")


def complete(base_url: str, model: str, api_key: str, messages: list[dict], response_format: dict, *,
             timeout_s: float, max_bytes: int, private_allowed: bool | None = None) -> str:
    """The text of the model's reply to ``messages`` under ``response_format``; raises :class:`CallFailed`.

    ``timeout_s`` bounds the whole call in seconds, ``max_bytes`` the reply's size; ``private_allowed``
    defaults to ``settings.LLM_ENDPOINT_ALLOW_PRIVATE``. A reply whose message carries a ``refusal`` (or that
    ended for ``content_filter``) raises kind :data:`REFUSED`; one that is not a chat completion,
    :data:`MALFORMED`.
    """
    try:
        address = addresses.pinned_address(base_url, private_allowed=private_allowed)
    except addresses.EndpointRefused as refused:
        raise CallFailed(BLOCKED, str(refused)) from None
    url = httpx.URL(completions_url(base_url))
    pinned = url.copy_with(host=address)
    headers = {"Host": url.netloc.decode("ascii"), "Authorization": f"Bearer {api_key or NO_KEY}",
               "Accept": "application/json"}
    body = {"model": model, "messages": messages, "response_format": response_format, "temperature": 0,
            "stream": False}
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    deadline = time.monotonic() + timeout_s
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=False, trust_env=False) as http:
            request = http.build_request("POST", pinned, json=body, headers=headers, extensions=extensions)
            response = http.send(request, stream=True)
            try:
                if response.is_redirect or 300 <= response.status_code < 400:
                    raise CallFailed(REDIRECT, f"Your endpoint answered with a redirect (HTTP {response.status_code}"
                                               "), which is not followed: give the address it redirects to as the "
                                               "base URL, if you trust it.")
                raw = _read(response, deadline, max_bytes, timeout_s)
            finally:
                response.close()
    except httpx.TimeoutException:
        raise CallFailed(TIMEOUT, f"Your model did not answer within {timeout_s:g} seconds.") from None
    except httpx.HTTPError as error:
        reason = mask(str(error) or type(error).__name__, api_key)[:160]
        raise CallFailed(UNREACHABLE, f"Could not reach your endpoint at {url.host} ({reason}).") from None
    if response.status_code != 200:
        raise _status_error(response.status_code, raw, api_key, model)
    return _message_text(raw)


def _message_text(raw: bytes) -> str:
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise CallFailed(MALFORMED, "Your endpoint's reply was not a chat completion (no choices[0].message), so "
                                    "it was not used.") from None
    refusal = message.get("refusal") if isinstance(message, dict) else None
    if refusal or choice.get("finish_reason") == "content_filter":
        said = f" (it said: {str(refusal).strip()[:160].rstrip('.')})" if refusal else ""
        raise CallFailed(REFUSED, f"Your model refused to grade this answer{said}.")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str) or not content.strip():
        raise CallFailed(MALFORMED, "Your model's reply had no text, so it was not used.")
    return content
