"""What is sent to the user's model for one open answer, and what its reply must be.

:func:`build` gives the chat messages (a system message with the grading rules, a user message with the
question, the rubric numbered from 1 and the candidate's answer) and the JSON schema the reply must match,
sent as ``response_format: {"type": "json_schema", ...}`` (structured output, understood by OpenAI, vLLM,
SGLang and Ollama). :func:`read_reply` validates a reply against that same schema with ``jsonschema`` and
checks what a schema cannot say (every rubric point judged once); it raises :class:`Malformed` with one
sentence otherwise.

The reply: per rubric point a verdict (``met``, ``partly``, ``not``) and a short quote from the answer as
evidence; a suggested score 1–4 on the review scale (Again, Hard, Good, Easy) following the rule the caller
gives (a point met partly counting half; the drills pages give :data:`drills.reviews.scheduling.RUBRIC_RULE`:
this module knows no app above it); and exactly two follow-up questions a strict interviewer would ask next.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import jsonschema

VERDICTS = ("met", "partly", "not")
#: Credit of each verdict toward the share of the rubric covered.
CREDIT = {"met": 1.0, "partly": 0.5, "not": 0.0}
#: Longest evidence quote and follow-up question accepted, in characters.
MAX_QUOTE = 400
MAX_FOLLOW_UP = 400
FOLLOW_UPS = 2
SCHEMA_NAME = "rubric_grade"

SYSTEM = (
    "You are a strict interviewer for senior engineering interviews about serving large language models. "
    "Grade the candidate's answer against the numbered rubric only: for each point say whether the answer meets "
    "it (met), meets it in part or with an error (partly), or not at all (not). As evidence, quote the answer's "
    "own words (at most a sentence, copied exactly); when the point is not met, quote the closest passage or "
    "give an empty string. Do not reward length or confidence, and do not invent content the answer lacks. "
    "Suggest a score on the review scale 1 = Again, 2 = Hard, 3 = Good, 4 = Easy from the share of the rubric "
    "covered, a point met counting 1 and a point met partly 1/2. {rule} Then ask the two follow-up questions a "
    "strict interviewer would ask next about this answer's weakest places. Reply with JSON matching the schema, "
    "nothing else."
)


class Malformed(Exception):
    """A reply that is not the structured grade asked for; the message is one sentence saying what was wrong."""


@dataclass(frozen=True)
class Request:
    """The chat messages and the reply's JSON schema for one answer."""

    messages: list[dict]
    schema: dict

    def response_format(self) -> dict:
        """The ``response_format`` of the chat-completions request (strict JSON-schema structured output)."""
        return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": self.schema}}


def schema(points: int) -> dict:
    """The JSON schema of a grade of an answer against ``points`` rubric points (at least 1)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["points", "suggested_score", "follow_ups"],
        "properties": {
            "points": {
                "type": "array", "minItems": points, "maxItems": points,
                "items": {
                    "type": "object", "additionalProperties": False,
                    "required": ["point", "verdict", "evidence"],
                    "properties": {
                        "point": {"type": "integer", "minimum": 1, "maximum": points},
                        "verdict": {"type": "string", "enum": list(VERDICTS)},
                        "evidence": {"type": "string", "maxLength": MAX_QUOTE},
                    },
                },
            },
            "suggested_score": {"type": "integer", "minimum": 1, "maximum": 4},
            "follow_ups": {"type": "array", "minItems": FOLLOW_UPS, "maxItems": FOLLOW_UPS,
                           "items": {"type": "string", "minLength": 1, "maxLength": MAX_FOLLOW_UP}},
        },
    }


def build(question: str, rubric: list[str], answer: str, score_rule: str) -> Request:
    """The request grading ``answer`` to ``question`` (plain text) against ``rubric`` (plain-text points);
    ``score_rule`` is the sentence mapping the share of the rubric covered to the scores 1–4."""
    numbered = "\n".join(f"{number}. {point}" for number, point in enumerate(rubric, start=1))
    user = (f"QUESTION\n{question.strip()}\n\nRUBRIC ({len(rubric)} point{'s' if len(rubric) != 1 else ''})\n"
            f"{numbered}\n\nCANDIDATE'S ANSWER\n{answer.strip()}")
    system = SYSTEM.format(rule=score_rule.strip())
    return Request([{"role": "system", "content": system}, {"role": "user", "content": user}], schema(len(rubric)))


def _normalise(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .,:;\"'“”‘’…")


def quote_found(quote: str, answer: str) -> bool:
    """Whether ``quote`` is in ``answer`` (case, spacing and surrounding punctuation ignored); empty: True."""
    wanted = _normalise(quote)
    return not wanted or wanted in _normalise(answer)


def read_reply(content: str, request: Request, answer: str) -> dict:
    """The validated grade in ``content`` (the reply message's text), each point with ``quote_found`` added.

    Raises :class:`Malformed`: not JSON, not matching :attr:`Request.schema`, or a rubric point judged twice
    (so another is missing).
    """
    try:
        data = json.loads(content)
    except (TypeError, ValueError):
        start = (content or "").strip()[:60]
        raise Malformed(f"the reply was not JSON (it began {start!r})") from None
    try:
        jsonschema.validate(data, request.schema)
    except jsonschema.ValidationError as error:
        where = "/".join(str(part) for part in error.absolute_path) or "the reply"
        raise Malformed(f"{where}: {error.message[:160]}") from None
    numbers = sorted(point["point"] for point in data["points"])
    if numbers != list(range(1, len(numbers) + 1)):
        raise Malformed(f"the rubric points judged were {numbers}, not each of 1 to {len(numbers)} once")
    data["points"] = sorted(({**point, "quote_found": quote_found(point["evidence"], answer)}
                             for point in data["points"]), key=lambda point: point["point"])
    return data


def covered_share(points: list[dict]) -> float:
    """The share of the rubric covered by a validated grade's points (met 1, partly 1/2, not 0)."""
    return sum(CREDIT[point["verdict"]] for point in points) / len(points) if points else 0.0
