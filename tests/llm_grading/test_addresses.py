"""The SSRF rules: what base URLs the site calls, at saving and at every call (a redirect, private addresses)."""

from __future__ import annotations

import pytest

from llm_grading import client, services
from llm_grading.addresses import EndpointRefused, pinned_address
from llm_grading.models import Endpoint, Grading
from tests.llm_grading.chat_server import ChatServer, Reply
from tests.llm_grading.conftest import PLACE

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("url", "sentence"), [
    ("ftp://models.example.com/v1", "Read 'ftp://models.example.com/v1': expected a URL starting with https://"),
    ("https://user:pw@api.example.com/v1", "The base URL carries a user name or password"),
    ("https://api.example.com/v1?key=1", "The base URL has a query or fragment"),
    ("http://169.254.169.254/latest", "169.254.169.254 resolves to 169.254.169.254, a link-local"),
    ("http://[::ffff:169.254.169.254]/v1", "::ffff:169.254.169.254 resolves to 169.254.169.254, a link-local"),
    ("http://0.0.0.0:8000/v1", "0.0.0.0 resolves to 0.0.0.0, a link-local, multicast or unspecified address"),
    ("http://8.8.8.8/v1", "8.8.8.8 is a public address: use https://"),
])
def test_refused_whatever_the_setting(url, sentence):
    for allowed in (True, False):
        with pytest.raises(EndpointRefused) as refused:
            pinned_address(url, private_allowed=allowed)
        if allowed or "public" not in sentence:
            assert str(refused.value).startswith(sentence)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "http://localhost:11434/v1", "http://10.0.0.5:30000/v1",
                                 "https://192.168.1.20/v1", "http://[::1]:8000/v1", "http://100.64.0.7:8000/v1"])
def test_private_and_loopback_only_where_allowed(url):
    assert pinned_address(url, private_allowed=True)
    with pytest.raises(EndpointRefused) as refused:
        pinned_address(url, private_allowed=False)
    assert "a private or loopback address, and this site calls only public addresses" in str(refused.value)


def test_a_public_https_address_is_allowed_in_production():
    assert pinned_address("https://8.8.8.8/v1", private_allowed=False) == "8.8.8.8"


def test_production_mode_refuses_a_private_address_at_the_call(candidate, design_item, chat_server,
                                                                recorded_grade, settings):
    """An endpoint stored while allowed (or a name that now resolves privately) is refused at the call."""
    settings.LLM_ENDPOINT_ALLOW_PRIVATE = False
    Endpoint.objects.create(owner=candidate, base_url=chat_server.base_url.replace("127.0.0.1", "localhost"),
                            model="grader")
    grading = services.run_here(services.request(candidate, design_item, recorded_grade["answer"],
                                                 Grading.DESIGN, design_item.pk, **PLACE))
    assert (grading.status, grading.failure) == (Grading.FAILED, client.BLOCKED)
    assert grading.error == ("localhost resolves to 127.0.0.1, a private or loopback address, and this site calls "
                             "only public addresses; give your server's public https address.")
    assert chat_server.requests == []


def test_production_mode_refuses_a_private_address_in_the_form(candidate_client, chat_server, settings):
    settings.LLM_ENDPOINT_ALLOW_PRIVATE = False
    response = candidate_client.post("/grading/settings/", {"base_url": chat_server.base_url, "model": "grader"})
    assert response.status_code == 200
    assert "127.0.0.1 resolves to 127.0.0.1, a private or loopback address" in response.content.decode()
    assert chat_server.base_url in response.content.decode()  # what was typed is kept
    assert not Endpoint.objects.exists()


def test_a_redirect_is_not_followed(candidate, design_item, endpoint, chat_server, recorded_grade):
    with ChatServer() as elsewhere:
        elsewhere.replies["grader"] = Reply(200, {"choices": []})
        chat_server.replies["grader"] = Reply(307, {}, headers={"Location": f"{elsewhere.base_url}/chat/completions"})
        grading = services.run_here(services.request(candidate, design_item, recorded_grade["answer"],
                                                     Grading.DESIGN, design_item.pk, **PLACE))
        assert grading.failure == client.REDIRECT
        assert grading.error == ("Your endpoint answered with a redirect (HTTP 307), which is not followed: give "
                                 "the address it redirects to as the base URL, if you trust it.")
        assert elsewhere.requests == [] and len(chat_server.requests) == 1


def test_a_redirect_to_the_metadata_address_is_not_followed(candidate, design_item, endpoint, chat_server,
                                                            recorded_grade):
    chat_server.replies["grader"] = Reply(302, {}, headers={"Location": "http://169.254.169.254/latest/meta-data/"})
    grading = services.run_here(services.request(candidate, design_item, recorded_grade["answer"],
                                                 Grading.DESIGN, design_item.pk, **PLACE))
    assert grading.failure == client.REDIRECT
