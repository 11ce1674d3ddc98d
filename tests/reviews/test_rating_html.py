"""The review card's rating buttons and rubric checkboxes built in Python are byte for byte the template loops'."""

import pytest
from django.template import Context, Template

from drills.models import ReviewLog
from drills.reviews.rating_html import rating_buttons_html, rubric_checkboxes_html

# The loop of templates/reviews/review.html#ratings before drills/reviews/rating_html.py replaced it.
RATINGS_LOOP = """{% load reviews_tags %}{% for value, label, interval in rating_buttons %}
      <button type="submit" name="rating" value="{{ value }}"
              class="btn btn-{% if suggested != value %}outline-{% endif %}{{ value|rating_style }} rating-button rating-{{ label|lower }}{% if suggested == value %} is-suggested{% endif %}">{{ label }}<span class="rating-interval"><span class="visually-hidden">, next review in </span>{{ interval }}</span>{% if suggested == value %} <span class="visually-hidden">(suggested)</span>{% endif %}</button>
    {% endfor %}"""  # noqa: E501 (the template as it was, byte for byte)

# The rubric loop of templates/reviews/_card_open.html before drills/reviews/rating_html.py replaced it.
RUBRIC_LOOP = """{% load runbook_tags %}{% for index, point, ticked in rubric_points %}
                <div class="form-check">
                  <input class="form-check-input" type="checkbox" name="ticked" value="{{ index }}" id="point-{{ index }}"{% if ticked %} checked{% endif %}>
                  <label class="form-check-label" for="point-{{ index }}">{{ point|markdown_inline }}</label>
                </div>
                {% endfor %}"""  # noqa: E501 (the template as it was, byte for byte)

INTERVALS = [["10 min", "1 day", "3 days", "8 days"], ["1 day", "6 days", "2 weeks", "1 month"],
             ["<1 min", "2 mo & 3 d", '"soon"', "4.5 months"]]


@pytest.mark.parametrize("intervals", INTERVALS)
@pytest.mark.parametrize("suggested", [None, "", 1, 2, 3, 4])
def test_rating_buttons_match_the_template(intervals, suggested):
    buttons = [(value, label, interval) for (value, label), interval in zip(ReviewLog.RATINGS, intervals)]
    context = {"rating_buttons": buttons}
    if suggested != "":  # "" stands for a context without the name, as the template then sees it
        context["suggested"] = suggested
    template_html = Template(RATINGS_LOOP).render(Context(context))
    python_html = str(rating_buttons_html(buttons, suggested))
    assert python_html == template_html
    assert python_html.count("<button") == 4 and python_html.count("is-suggested") == (suggested in (1, 2, 3, 4))
    assert "<1 min" not in python_html and '"soon"' not in python_html


def test_odd_labels_and_no_buttons_match_the_template():
    buttons = [(1, "Again <b>", "1 & 2"), (9, "ÉASY 'x'", "3 days")]
    for suggested in (None, 1, 9):
        context = Context({"rating_buttons": buttons, "suggested": suggested})
        assert str(rating_buttons_html(buttons, suggested)) == Template(RATINGS_LOOP).render(context)
    for empty in ([], None):
        assert str(rating_buttons_html(empty, None)) == Template(RATINGS_LOOP).render(Context({})) == ""


@pytest.mark.django_db
@pytest.mark.parametrize("ticked", [(), ("0",), ("1", "3"), ("0", "1", "2", "3")])
def test_rubric_checkboxes_match_the_template(ticked):
    rubric = ["Names **KV cache** size & batch", "Says <script>alert('x')</script> is `code`",
              'Quotes "the roofline" > memory bound', ""]
    points = [(str(index), point, str(index) in ticked) for index, point in enumerate(rubric)]
    template_html = Template(RUBRIC_LOOP).render(Context({"rubric_points": points}))
    python_html = str(rubric_checkboxes_html(points))
    assert python_html == template_html
    assert python_html.count(" checked>") == len(ticked) and "<script>" not in python_html
    assert str(rubric_checkboxes_html([])) == Template(RUBRIC_LOOP).render(Context({"rubric_points": []})) == ""
