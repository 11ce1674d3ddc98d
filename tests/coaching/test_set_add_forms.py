"""The set page's three add forms: a rejected add keeps what was chosen and typed, the error beside its field.

Regression: the "Problem template" form used to answer an error with a message and a redirect, which emptied
the JSON box and put the select back on the first template.
"""

from __future__ import annotations

import html
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from coaching.models import SetEntry
from drills.models import BankItem, RoundTemplate

pytestmark = pytest.mark.django_db


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict, parent: "Node | None"):
        self.tag, self.attrs, self.parent, self.children, self.text = tag, attrs, parent, [], ""

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def get_text(self) -> str:
        return self.text + "".join(child.get_text() for child in self.children)


class Page(HTMLParser):
    """Just enough of a DOM to find elements by id, tag and class (the suite has no HTML library)."""

    def __init__(self, content: bytes):
        super().__init__()
        self.root = self.open = Node("#root", {}, None)
        self.feed(content.decode())

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs}, self.open)
        self.open.children.append(node)
        if tag not in VOID:
            self.open = node

    def handle_endtag(self, tag):
        node = self.open
        while node.parent is not None and node.tag != tag:
            node = node.parent
        if node.parent is not None:
            self.open = node.parent

    def handle_data(self, data):
        self.open.text += data

    def find(self, id: str) -> Node | None:
        return next((n for n in self.root.walk() if n.attrs.get("id") == id), None)

    def select(self, tag: str, cls: str | None = None) -> list[Node]:
        return [n for n in self.root.walk() if n.tag == tag and (cls is None or cls in n.classes)]

    def with_class(self, cls: str) -> list[Node]:
        return [n for n in self.root.walk() if cls in n.classes]


def _post(client, world, data):
    return client.post(reverse("coaching:set_add", args=[world.set.pk]), data)


def _template_form(response):
    page = Page(response.content)
    return page, page.find("add-template-item"), page.find("add-template-fixed_inputs")


@pytest.fixture
def coach_in(client, world):
    client.force_login(world.coach)
    return client


@pytest.fixture
def not_first_template(world):
    """A problem template that is not the first option, so a reset to the first option would show."""
    templates = list(BankItem.objects.visible_to(world.coach).filter(kind=BankItem.PROBLEM).order_by("kind", "slug"))
    assert len(templates) > 1
    return templates[-1]


@pytest.mark.parametrize("typed, message", [
    ('{"context": -1}', "Those fixed inputs do not work for"),
    ('{"context": 32768,', "Fixed inputs must be a JSON object"),
])
def test_bad_fixed_inputs_keep_the_template_and_the_json(coach_in, world, not_first_template, typed, message):
    before = SetEntry.objects.filter(question_set=world.set).count()
    response = _post(coach_in, world, {"item": not_first_template.pk, "fixed_inputs": typed})

    assert response.status_code == 200
    page, select, box = _template_form(response)
    assert box.attrs["value"] == typed
    assert "is-invalid" in box.classes
    chosen = [option.attrs["value"] for option in select.children if "selected" in option.attrs]
    assert chosen == [str(not_first_template.pk)]
    feedback = page.find("error_1_add-template-fixed_inputs")
    assert feedback is not None and message in feedback.get_text()
    assert "invalid-feedback" in feedback.parent.classes or "invalid-feedback" in feedback.classes
    assert SetEntry.objects.filter(question_set=world.set).count() == before


def test_good_fixed_inputs_still_add_the_entry(coach_in, world, not_first_template):
    response = _post(coach_in, world, {"item": not_first_template.pk, "fixed_inputs": ""})
    assert response.status_code == 302 and response["Location"] == world.set.get_absolute_url()
    entry = SetEntry.objects.filter(question_set=world.set).order_by("-position").first()
    assert (entry.item, entry.fixed_inputs, entry.position) == (not_first_template, {}, 3)

    _post(coach_in, world, {"item": world.ladder.pk, "fixed_inputs": '{"model": "llama-3.1-70b"}'})
    entry = SetEntry.objects.filter(question_set=world.set).order_by("-position").first()
    assert (entry.item, entry.fixed_inputs, entry.position) == (world.ladder, {"model": "llama-3.1-70b"}, 4)


def test_the_other_add_forms_put_their_error_beside_the_field(coach_in, world):
    before = SetEntry.objects.filter(question_set=world.set).count()
    for data, field_id, message in (
        ({"item": "zzqx"}, "add-item", "No bank item you can see has that title or slug"),
        ({"item": ""}, "add-item", "Choose a bank item to add."),
        ({"item": "99999999"}, "add-item", "No bank item you can see has that title or slug"),
        ({"round": "nope"}, "add-round", "That round preset does not exist or is not yours."),
        ({}, "add-item", "Choose a bank item to add."),
    ):
        response = _post(coach_in, world, data)
        assert response.status_code == 200, data
        page = Page(response.content)
        assert "is-invalid" in page.find(field_id).classes, data
        assert message in page.find(f"error_1_{field_id}").get_text(), data
    assert SetEntry.objects.filter(question_set=world.set).count() == before


def test_a_rejected_add_keeps_the_rest_of_the_page(coach_in, world):
    """The entries, the title form and the two other add forms are all there, unbound."""
    response = _post(coach_in, world, {"round": "nope"})
    page = Page(response.content)
    assert len(page.select("li", "list-group-item")) == 2
    assert page.find("id_title").attrs["value"] == "Week 1"
    assert page.find("add-item") is not None and page.find("add-template-item") is not None
    assert page.with_class("is-invalid") == [page.find("add-round")]


def test_another_coachs_round_copy_is_refused(coach_in, world):
    preset = RoundTemplate.objects.filter(owner__isnull=True).first() or _sync_presets()
    theirs = preset.copy_for(world.dave)
    response = _post(coach_in, world, {"round": theirs.pk})
    assert response.status_code == 200
    assert not SetEntry.objects.filter(question_set=world.set, round_template=theirs).exists()
    mine = preset.copy_for(world.coach)
    assert _post(coach_in, world, {"round": mine.pk}).status_code == 302
    assert SetEntry.objects.filter(question_set=world.set, round_template=mine).count() == 1


def _another_question(world) -> BankItem:
    """A question of the coach's that the set does not hold yet (the world's own question is in it)."""
    from coaching import services

    return services.save_question(world.coach, {
        "prompt": "Why does paged attention waste less KV memory?", "model_answer": "Blocks, not whole contexts.",
        "rubric": ["Fixed-size blocks", "Only the last block is part-filled"], "tags": ["kv-cache"],
        "misconceptions": [], "difficulty": 2})


def _sync_presets():
    from drills.rounds.presets import sync_presets

    sync_presets()
    return RoundTemplate.objects.filter(owner__isnull=True).first()


def test_the_bank_item_picker_suggests_titles_and_takes_a_slug(coach_in, world):
    page = Page(coach_in.get(world.set.get_absolute_url()).content)
    box = page.find("add-item")
    assert box.tag == "input" and box.attrs["list"] == "bank-item-options"
    question = _another_question(world)
    found = Page(coach_in.get(reverse("coaching:item_search"), {"item": question.slug}).content)
    options = {o.attrs["value"]: o.get_text() for o in found.select("option")}
    assert options[question.slug].startswith(f"[{question.kind}] ")
    assert len(page.find("bank-item-options").children) == 20  # the first suggestions, before any typing
    response = _post(coach_in, world, {"item": question.slug})
    assert response.status_code == 302
    assert SetEntry.objects.filter(question_set=world.set).order_by("-position").first().item == question


def test_fixed_inputs_from_the_fields_not_json(coach_in, world):
    ladder = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    response = _post(coach_in, world, {"item": ladder.pk, "fixed_model": "llama-3.1-70b",
                                       "fixed_gpu": "h200-sxm-141gb", "fixed_context": "32768", "fixed_inputs": ""})
    assert response.status_code == 302
    entry = SetEntry.objects.filter(question_set=world.set).order_by("-position").first()
    assert entry.fixed_inputs == {"model": "llama-3.1-70b", "gpu": "h200-sxm-141gb", "context": 32768}
    page = Page(coach_in.get(world.set.get_absolute_url()).content)
    models = [o.attrs["value"] for o in page.find("add-template-fixed_model").children]
    assert models[0] == "" and "llama-3.1-70b" in models  # blank: drawn each time
    bad = _post(coach_in, world, {"item": ladder.pk, "fixed_context": "0", "fixed_inputs": ""})
    assert bad.status_code == 200 and "Must be at least 1." in bad.content.decode()  # the calculators' bound


@pytest.mark.parametrize(("typed", "tokens"), [("8k", 8_000), ("2^13", 8_192), ("8,192 tok", 8_192)])
def test_a_fixed_context_is_read_as_the_calculators_read_it_and_echoed(coach_in, world, typed, tokens):
    """ "8k" was refused with "Enter a whole number."; the field is the calculators' own (k is a thousand)."""
    ladder = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    response = _post(coach_in, world, {"item": ladder.pk, "fixed_context": typed, "fixed_inputs": ""})
    assert response.status_code == 302
    entry = SetEntry.objects.filter(question_set=world.set).order_by("-position").first()
    assert entry.fixed_inputs == {"context": tokens}
    page = coach_in.get(response["Location"]).content.decode()
    assert html.escape(f"Context limit: “{typed}” read as {tokens:,} tokens.") in page


def test_typing_roofline_and_add_adds_the_roofline_template_and_the_box_searches_as_typed(coach_in, world):
    """Issue 28 item 5: typing "roofline" then Add was a 400; it resolves the slug, a title resolves too, and
    what matches several items or none is a form error (200) that keeps what was typed."""
    roofline = BankItem.objects.get(kind=BankItem.PROBLEM, family="roofline")
    box = Page(coach_in.get(world.set.get_absolute_url()).content).find("add-item")
    assert box.attrs["hx-get"] == reverse("coaching:item_search") and box.attrs["hx-target"] == "#bank-item-options"
    suggestions = coach_in.get(reverse("coaching:item_search"), {"item": "roof"}, headers={"HX-Request": "true"})
    assert suggestions.status_code == 200 and "<html" not in suggestions.content.decode()
    assert "roofline" in [o.attrs["value"] for o in Page(suggestions.content).select("option")]
    response = _post(coach_in, world, {"item": "roofline"})
    assert response.status_code == 302
    entry = SetEntry.objects.filter(question_set=world.set).order_by("-position").first()
    assert (entry.item, entry.fixed_inputs) == (roofline, {})
    # A typed title resolves: carol's own question by its prompt's words.
    other = _another_question(world)
    response = _post(coach_in, world, {"item": "Why does paged attention waste less KV memory?"})
    assert response.status_code == 302
    assert SetEntry.objects.filter(question_set=world.set).order_by("-position").first().item == other
    before = SetEntry.objects.filter(question_set=world.set).count()
    for typed, message in (("a", "matches"), ("no-such-thing-at-all", "No bank item you can see")):
        response = _post(coach_in, world, {"item": typed})
        page = Page(response.content)
        assert response.status_code == 200
        assert message in page.find("error_1_add-item").get_text()
        assert page.find("add-item").attrs["value"] == typed  # kept in the box
    assert SetEntry.objects.filter(question_set=world.set).count() == before


def test_the_same_item_twice_is_refused_beside_the_box(coach_in, world):
    """A question already in the set is not added again (a candidate would be asked it twice); the same
    template with other fixed inputs is another entry (issue 28's new-user pass)."""
    question = _another_question(world)
    assert _post(coach_in, world, {"item": question.slug}).status_code == 302
    before = SetEntry.objects.filter(question_set=world.set).count()

    response = _post(coach_in, world, {"item": question.slug})

    assert response.status_code == 200
    page = Page(response.content)
    assert page.find("add-item").attrs["value"] == question.slug
    assert "This set already holds" in page.find("error_1_add-item").get_text()
    assert SetEntry.objects.filter(question_set=world.set).count() == before
    ladder = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    for fixed in ('{"context": 4096}', '{"context": 16384}'):
        assert _post(coach_in, world, {"item": ladder.pk, "fixed_inputs": fixed}).status_code == 302
    again = _post(coach_in, world, {"item": ladder.pk, "fixed_inputs": '{"context": 4096}'})
    assert again.status_code == 200 and "with these fixed inputs" in again.content.decode()
    assert SetEntry.objects.filter(question_set=world.set).count() == before + 2
