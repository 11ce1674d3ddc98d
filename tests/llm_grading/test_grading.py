"""Open answers graded by a real local chat-completions server: the happy path and every failure mode.

The server (tests/llm_grading/chat_server.py) is a threaded http.server on 127.0.0.1 answering with recorded
replies: vLLM's completion shape carrying the recorded grade of the capacity-math design prompt, OpenAI's 429
and 401 bodies, a refusal, replies that are not JSON or not the schema, a slow one and a huge one.
"""

from __future__ import annotations

import json
import logging

import pytest

from llm_grading import client, services
from llm_grading.models import Grading
from tests.llm_grading.chat_server import Reply, completion, recorded
from tests.llm_grading.conftest import KEY, PLACE

pytestmark = pytest.mark.django_db


def grade(candidate, item, answer, origin=Grading.DESIGN):
    """Send ``answer`` and run the task in-process, as the page's first poll does in the embedded default."""
    grading = services.request(candidate, item, answer, origin, item.pk, **PLACE)
    assert grading is not None and grading.status == Grading.QUEUED
    return services.run_here(grading)


def test_it_grades_a_design_answer_point_by_point(candidate, design_item, endpoint, chat_server, recorded_grade):
    grading = grade(candidate, design_item, recorded_grade["answer"])

    assert grading.status == Grading.DONE, grading.error
    verdicts = [point["verdict"] for point in grading.result["points"]]
    assert verdicts == ["met", "not", "met", "partly", "partly", "not"]
    # met 2 + partly 2 × 1/2 = 3 of 6 points: 50 %, not under the 50 % of Again, under the 80 % of Hard.
    assert grading.suggested_rating == 2
    assert [point["quote_found"] for point in grading.result["points"]] == [True] * 6
    assert len(grading.result["follow_ups"]) == 2
    # What was sent: the key as the bearer token, the rubric numbered 1-6 with the answer, a strict JSON schema.
    (sent,) = chat_server.requests
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
    body = sent["body"]
    assert body["model"] == "grader" and body["temperature"] == 0
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["json_schema"]["strict"] is True
    assert schema["properties"]["points"]["minItems"] == schema["properties"]["points"]["maxItems"] == 6
    user_message = body["messages"][1]["content"]
    assert "6. Costs prefill separately from decode" in user_message
    assert recorded_grade["answer"] in user_message
    assert body["messages"] == grading.messages  # what the page shows is what was sent


def test_the_key_is_stored_encrypted_and_never_logged(candidate, design_item, endpoint, chat_server,
                                                      recorded_grade, caplog):
    assert KEY not in endpoint.api_key_token and endpoint.api_key() == KEY
    chat_server.replies["grader"] = Reply(401, recorded("openai_wrong_key"))
    with caplog.at_level(logging.DEBUG):
        grading = grade(candidate, design_item, recorded_grade["answer"])
    assert grading.failure == client.WRONG_KEY
    assert KEY not in caplog.text and KEY not in grading.error


def test_a_slow_model_times_out_and_the_answer_is_kept(candidate, design_item, endpoint, chat_server,
                                                       recorded_grade, settings):
    settings.LLM_GRADING_TIMEOUT_S = 1
    chat_server.replies["grader"] = Reply(200, completion(recorded_grade["content"]), delay_s=2.5)
    grading = grade(candidate, design_item, recorded_grade["answer"])
    assert (grading.status, grading.failure) == (Grading.FAILED, client.TIMEOUT)
    assert grading.error == "Your model did not answer within 1 seconds."
    assert grading.answer == recorded_grade["answer"].strip()


def test_a_reply_dripping_past_the_time_bound_times_out(candidate, design_item, endpoint, chat_server,
                                                        recorded_grade, settings):
    settings.LLM_GRADING_TIMEOUT_S = 1
    chat_server.replies["grader"] = Reply(200, completion(recorded_grade["content"]), chunks=8, chunk_delay_s=0.3)
    grading = grade(candidate, design_item, recorded_grade["answer"])
    assert grading.failure == client.TIMEOUT
    assert grading.error == "Your model did not finish its reply within 1 seconds."


def test_a_refusal_is_one_sentence(candidate, design_item, endpoint, chat_server, recorded_grade):
    chat_server.replies["grader"] = Reply(200, completion(None, refusal="I'm sorry, I can't help with that."))
    grading = grade(candidate, design_item, recorded_grade["answer"])
    assert grading.failure == client.REFUSED
    assert grading.error == "Your model refused to grade this answer (it said: I'm sorry, I can't help with that)."


@pytest.mark.parametrize(("content", "said"), [
    ("Sure! The answer covers most points.",
     "the reply was not JSON (it began 'Sure! The answer covers most points.')"),
    (json.dumps({"points": [], "suggested_score": 2, "follow_ups": ["a", "b"]}),
     "points: [] is too short"),
    ("VERDICT", None),
])
def test_malformed_output_is_not_used(candidate, design_item, endpoint, chat_server, recorded_grade, content, said):
    if content == "VERDICT":  # the recorded grade with a verdict outside the schema's enum
        data = json.loads(recorded_grade["content"])
        data["points"][0]["verdict"] = "yes"
        content, said = json.dumps(data), "points/0/verdict: 'yes' is not one of ['met', 'partly', 'not']"
    chat_server.replies["grader"] = Reply(200, completion(content))
    grading = grade(candidate, design_item, recorded_grade["answer"])
    assert (grading.status, grading.failure) == (Grading.FAILED, client.MALFORMED)
    assert grading.error == (f"Your model's reply did not match the grading schema ({said}), so it was not used.")


def test_a_point_judged_twice_is_malformed(candidate, design_item, endpoint, chat_server, recorded_grade):
    data = json.loads(recorded_grade["content"])
    data["points"][1]["point"] = 1
    chat_server.replies["grader"] = Reply(200, completion(json.dumps(data)))
    grading = grade(candidate, design_item, recorded_grade["answer"])
    assert grading.failure == client.MALFORMED
    assert "the rubric points judged were [1, 1, 3, 4, 5, 6], not each of 1 to 6 once" in grading.error


def test_a_rate_limit_is_one_sentence(candidate, design_item, endpoint, chat_server, recorded_grade):
    chat_server.replies["grader"] = Reply(429, recorded("openai_rate_limit"), headers={"Retry-After": "20"})
    grading = grade(candidate, design_item, recorded_grade["answer"])
    assert grading.failure == client.RATE_LIMITED
    assert grading.error.startswith("Your endpoint is rate-limiting requests (HTTP 429): try again in a minute "
                                    "(it said: Rate limit reached for requests per min (RPM)")


def test_a_wrong_key_is_one_sentence_without_the_key(candidate, design_item, endpoint, chat_server,
                                                     recorded_grade):
    # vLLM started with --api-key answers {"error": "Unauthorized"}; OpenAI echoes part of the key it got.
    chat_server.replies["grader"] = Reply(401, {"error": "Unauthorized"})
    grading = grade(candidate, design_item, recorded_grade["answer"])
    assert grading.failure == client.WRONG_KEY
    assert grading.error == ("Your endpoint refused the API key (HTTP 401): check the key in your grading settings "
                             "(it said: Unauthorized).")
    echoed = Reply(401, {"error": {"message": f"Incorrect API key provided: {KEY}."}})
    chat_server.replies["grader"] = echoed
    again = services.run_here(services.retry(grading))
    assert KEY not in again.error and "Incorrect API key provided: ***" in again.error


def test_a_reply_over_the_size_bound_is_not_read(candidate, design_item, endpoint, chat_server, recorded_grade,
                                                 settings):
    settings.LLM_GRADING_MAX_REPLY_BYTES = 4096
    chat_server.replies["grader"] = Reply(200, completion("x" * 50_000))
    grading = grade(candidate, design_item, recorded_grade["answer"])
    assert grading.failure == client.TOO_LARGE
    assert grading.error == "Your endpoint's reply was larger than 4 KiB, so it was not read."


def test_an_unknown_model_says_so(candidate, design_item, endpoint, chat_server, recorded_grade):
    endpoint.model = "llama3.1:8b"
    endpoint.save()
    grading = grade(candidate, design_item, recorded_grade["answer"])
    assert grading.failure == client.HTTP_ERROR
    assert grading.error == ("Your endpoint answered HTTP 404: check the base URL (it usually ends in /v1) and the "
                             "model name 'llama3.1:8b' (it said: The model `llama3.1:8b` does not exist).")


def test_a_server_that_is_down_is_one_sentence(candidate, design_item, endpoint, chat_server, recorded_grade):
    chat_server.shutdown()
    chat_server.server_close()
    grading = grade(candidate, design_item, recorded_grade["answer"])
    assert grading.failure == client.UNREACHABLE
    assert grading.error.startswith("Could not reach your endpoint at 127.0.0.1 (")


def test_without_an_endpoint_nothing_is_sent(candidate, design_item, chat_server, recorded_grade):
    answer = recorded_grade["answer"]
    assert services.request(candidate, design_item, answer, Grading.DESIGN, design_item.pk, **PLACE) is None
    assert not Grading.objects.exists() and chat_server.requests == []


def test_the_same_answer_sent_twice_is_graded_once(candidate, design_item, endpoint, chat_server, recorded_grade):
    first = grade(candidate, design_item, recorded_grade["answer"])
    second = services.request(candidate, design_item, recorded_grade["answer"], Grading.DESIGN, design_item.pk,
                              **PLACE)
    assert second.pk == first.pk and len(chat_server.requests) == 1
    assert services.run(first.pk) == Grading.DONE and len(chat_server.requests) == 1  # the task is idempotent
