"""Exports (deck and history CSV, the bank as an Anki package) and the problem templates of the bank."""

from __future__ import annotations

import csv
import html
import io
import sqlite3
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command

from calculators.families import FAMILIES
from drills.bank.problem_templates import sync_problem_templates, time_box_s
from drills.models import BankItem, Card
from drills.reviews.exports import DECK_COLUMNS, HISTORY_COLUMNS
from drills.reviews.scheduling import GOOD, add_to_deck
from drills.reviews.services import problem_for, record_open_review, record_problem_review
from tests.factories import ChapterFactory


def rows(response) -> list[dict]:
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(response.content.decode())))


class TestCsv:
    def test_the_deck_and_history_in_the_candidates_time_zone(self, client, candidate, bank, h):
        h.settings(candidate, time_zone="Asia/Tokyo")
        add_to_deck(candidate, [bank["kv-paged"], bank["kv"]], now=h.T0)
        card = Card.objects.get(user=candidate, item__slug="kv-paged")
        record_open_review(candidate, card.pk, 0, None, answer="=SUM(A1)", ticked=[0, 2],
                           started_at=h.T0 - timedelta(seconds=42), now=h.T0)
        template = Card.objects.get(user=candidate, item__slug="kv")
        problem = problem_for(template)
        record_problem_review(candidate, template.pk, 0, h.answers(problem), now=h.T0 + timedelta(minutes=1))
        client.force_login(candidate)

        response = client.get("/review/export/deck.csv")
        assert response["Content-Disposition"] == 'attachment; filename="deck.csv"'
        deck = rows(response)
        assert list(deck[0]) == DECK_COLUMNS
        by_item = {row["item"]: row for row in deck}
        assert by_item["kv-paged"]["state"] == "Learning" and by_item["kv-paged"]["reps"] == "1"
        assert by_item["kv-paged"]["chapter"] == "06-kv-cache" and by_item["kv-paged"]["added_via"] == "item"
        assert by_item["kv-paged"]["last_review"] == "2026-03-02T17:00:00+09:00"  # 08:00 UTC in Tokyo

        history = rows(client.get("/review/export/history.csv"))
        assert list(history[0]) == HISTORY_COLUMNS
        first, second = history
        assert (first["item"], first["rating"], first["suggested_rating"], first["grade"]) == (
            "kv-paged", "Hard", "Hard", "0.6667")
        assert (first["duration_s"], first["rubric_ticked"], first["state_before"]) == ("42.0", "1 3", "Learning")
        assert first["answer"] == "'=SUM(A1)"  # a formula is not left for a spreadsheet to run
        assert (second["item"], second["grade"], second["problem_seed"]) == ("kv", "1.0", str(problem.seed))


class TestAnki:
    def notes(self, content: bytes, tmp_path: Path) -> list[tuple[list[str], str]]:
        archive = zipfile.ZipFile(io.BytesIO(content))
        assert "collection.anki2" in archive.namelist()
        path = tmp_path / "collection.anki2"
        path.write_bytes(archive.read("collection.anki2"))
        with sqlite3.connect(path) as db:
            return [(fields.split("\x1f"), tags.strip()) for fields, tags in
                    db.execute("select flds, tags from notes order by sfld")]

    def test_a_chapter_as_an_anki_deck_with_the_model_answers_on_the_back(self, client, bank, tmp_path):
        response = client.get("/bank/export.apkg?chapter=06-kv-cache&kind=open")
        assert response.status_code == 200
        assert response["Content-Disposition"] == 'attachment; filename="llm-serving-prep-06-kv-cache.apkg"'
        notes = self.notes(response.content, tmp_path)
        assert [fields[3] for fields, _ in notes] == ["kv-formula", "kv-fp8", "kv-paged"]
        front, back, meta, slug = notes[2][0]
        assert "Explain kv-paged." in front
        assert "The model answer of kv-paged" in back and "<strong>53 users</strong>" in back
        assert "Which to quote" in back and "Rubric" in back
        assert "06 · The KV cache" in meta and "Stretch" in meta
        assert set(notes[2][1].split()) == {"open", "06-kv-cache", "paging"}

    def test_the_whole_bank_holds_every_published_item_including_templates(self, client, bank, tmp_path):
        notes = self.notes(client.get("/bank/export.apkg").content, tmp_path)
        assert len(notes) == BankItem.objects.published().count()
        ladder = next(fields for fields, _ in notes if fields[3] == "ladder")
        assert "Capacity ladder" in ladder[0] and "users_paged" in ladder[1] and "Steps" in ladder[1]

    def test_an_export_of_nothing_is_a_404(self, client, bank):
        assert client.get("/bank/export.apkg?q=zzzzzz-nothing").status_code == 404

    def test_an_unknown_chapter_is_refused_on_the_bank_page_not_exported_whole(self, client, bank):
        # Regression: ?chapter=nope answered 200 with every item. The two chapters with published items, in
        # chapter order, are what a chapter filter accepts.
        response = client.get("/bank/export.apkg?chapter=nope")
        assert response.status_code == 400 and "Content-Disposition" not in response
        text = html.unescape(response.content.decode())
        assert "The chapter filter read “nope”; expected one of 04-gpu-roofline, 06-kv-cache." in text
        assert 'class="bank-filters' in text  # the filter form the download link came from, to fix it there

    def test_an_unknown_difficulty_is_refused_too(self, client, bank):
        response = client.get("/bank/export.apkg?kind=open&difficulty=9")
        assert response.status_code == 400
        assert "The difficulty filter read “9”; expected one of 1, 2, 3." in html.unescape(response.content.decode())


class TestProblemTemplates:
    def test_one_template_per_drill_family_created_once(self, db):
        first = sync_problem_templates()
        families = [slug for slug, family in FAMILIES.items() if family.generate is not None]
        assert first.created == len(families) == 24  # with preempt, disagg, pareto and the four simulated drills
        templates = BankItem.objects.filter(kind=BankItem.PROBLEM)
        assert sorted(templates.values_list("slug", flat=True)) == sorted(families)
        assert all(item.family == item.slug and item.source_path == f"engine:{item.slug}" for item in templates)
        ladder = templates.get(slug="ladder")
        assert ladder.details == {"time_box_s": 360, "steps": 8}
        # Every family has a written rubric: its points, not its step labels.
        assert ladder.rubric == list(FAMILIES["ladder"].rubric) and "driver reports" in ladder.rubric[0]
        fleet = templates.get(slug="fleet")
        assert fleet.rubric == list(FAMILIES["fleet"].rubric) and "Little's law" in fleet.rubric[0]
        again = sync_problem_templates()
        assert (again.created, again.updated, again.unchanged) == (0, 0, 24)

    @pytest.mark.parametrize("steps, seconds", [(1, 120), (2, 120), (3, 150), (8, 360), (11, 510)])
    def test_the_time_box(self, steps, seconds):
        assert time_box_s(steps) == seconds

    def test_templates_join_their_chapter_once_it_is_written(self, db, h):
        sync_problem_templates()
        assert BankItem.objects.get(slug="roofline").chapter is None
        ChapterFactory(number=4, slug="04-gpu-roofline", track="B", title="The GPU and the roofline")
        assert sync_problem_templates().updated == 1
        item = BankItem.objects.get(slug="roofline")
        assert (item.chapter.slug, item.track) == ("04-gpu-roofline", "B")

    def test_load_content_adds_them_and_a_reload_keeps_the_cards_on_them(self, tmp_path, candidate):
        root = tmp_path / "fixtures"
        (root / "questions").mkdir(parents=True)
        (root / "questions" / "00-map.yaml").write_text(
            "- slug: map-one\n  prompt: Why GiB?\n  model_answer: Because.\n  rubric: [Says 2^30]\n")
        out = io.StringIO()
        call_command("load_content", "--path", str(root), stdout=out, stderr=io.StringIO())
        assert "problem templates  24 created, 0 updated, 0 unchanged" in out.getvalue()
        add_to_deck(candidate, [BankItem.objects.get(slug="ladder"), BankItem.objects.get(slug="map-one")])
        card = Card.objects.get(user=candidate, item__slug="ladder")
        record_open_review(candidate, Card.objects.get(item__slug="map-one").pk, 0, GOOD)

        out = io.StringIO()
        call_command("load_content", "--path", str(root), stdout=out, stderr=io.StringIO())
        assert "problem templates  0 created, 0 updated, 24 unchanged" in out.getvalue()
        assert "Everything unchanged." in out.getvalue()
        assert Card.objects.filter(pk=card.pk).exists()
        assert BankItem.objects.filter(kind=BankItem.PROBLEM).count() == 24
