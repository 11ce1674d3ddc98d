"""The repository's own content (``fixtures/``): it loads, and every page renders with no shortcode left.

Content is written a file at a time, so these tests load whatever exists when
they run; a file with a bad shortcode or a missing field fails them with its
path and line.
"""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.core.cache import cache

from runbook.loading import ContentError, load_content
from runbook.models import Chapter, ErratumEntry, GlossaryTerm
from runbook.search import search
from runbook.shortcodes import resolve

pytestmark = pytest.mark.django_db

FIXTURES = settings.BASE_DIR / "fixtures"


@pytest.fixture
def real_content():
    cache.clear()
    try:
        return load_content(FIXTURES)
    except ContentError as exc:  # pragma: no cover - shown when a content file is broken
        pytest.fail("fixtures/ does not load:\n" + "\n".join(exc.errors))


def test_the_real_content_loads_and_a_second_load_changes_nothing(real_content):
    again = load_content(FIXTURES)

    assert not again.changed, {kind: str(tally) for kind, tally in again.tallies.items() if tally.changed}


def test_every_chapter_renders_with_every_shortcode_resolved(client, real_content):
    chapters = list(Chapter.objects.all())
    if not chapters:
        pytest.skip("no chapter has been written yet")
    for chapter in chapters:
        response = client.get(chapter.get_absolute_url())

        assert response.status_code == 200, chapter.slug
        page = response.content.decode()
        assert "{{" not in page, f"{chapter.slug}: an unresolved shortcode"
        assert "rbsc" not in page, f"{chapter.slug}: a block placeholder left in the page"


def test_every_question_answer_renders_inside_its_chapter(client, real_content):
    for chapter in Chapter.objects.all():
        questions = list(chapter.questions.filter(published=True))
        page = client.get(chapter.get_absolute_url()).content.decode()
        assert page.count('<details class="rb-answer">') == len(questions), chapter.slug


@pytest.mark.parametrize("url", ["/runbook/", "/glossary/", "/errata/", "/reading/"])
def test_the_reference_pages_render_with_every_shortcode_resolved(client, real_content, url):
    response = client.get(url)

    assert response.status_code == 200
    assert "{{" not in response.content.decode()


def test_the_errata_show_the_engines_corrected_values(client, real_content):
    if not ErratumEntry.objects.filter(slug="gb-gib-mix").exists():
        pytest.skip("the errata register is not written yet")
    page = client.get("/errata/").content.decode()

    assert resolve("convert", "52 GB GiB").text in page  # 52 GB = 48.43 GiB
    assert resolve("value", "ladder.users_worst_case").text in page  # the ladder run in GiB


def test_search_finds_preemption_in_the_glossary_and_in_the_map(real_content):
    if not GlossaryTerm.objects.filter(slug="preemption").exists() or not Chapter.objects.filter(
            slug="00-map").exists():
        pytest.skip("the glossary or the map is not written yet")

    hits = search("preemption")

    assert any(hit.kind == "glossary" and hit.url == "/glossary/#preemption" for hit in hits)
    assert any(hit.kind == "chapter" and hit.url == "/runbook/00-map/" for hit in hits)


def test_every_misconception_links_to_an_erratum_or_a_written_section_that_exists(real_content):
    """docs/architecture.md §4: a misconception's link leads to its errata entry or chapter section."""
    import calculators.engine.procedures  # noqa: F401 - registers the families' own misconceptions
    from calculators.engine.mistakes import MISCONCEPTIONS
    from runbook.content import heading_anchors

    errata = set(ErratumEntry.objects.values_list("slug", flat=True))
    anchors = {chapter.slug: set(heading_anchors(chapter.body)) for chapter in Chapter.objects.all()}
    broken = []
    for info in MISCONCEPTIONS.values():
        link = info.link or ""
        erratum = re.fullmatch(r"/errata/#([\w-]+)", link)
        section = re.fullmatch(r"/runbook/([\w-]+)/#([\w-]+)", link)
        if erratum and errata and erratum.group(1) not in errata:
            broken.append(f"{info.id} → {link} (no such erratum)")
        elif section and section.group(1) in anchors and section.group(2) not in anchors[section.group(1)]:
            broken.append(f"{info.id} → {link} (no such section)")
    assert not broken, "misconception links that lead nowhere:\n" + "\n".join(broken)
