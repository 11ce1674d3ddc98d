"""The drill page's answer steps built in Python are byte for byte what the template loop they replaced gave."""

from types import SimpleNamespace

import pytest
from django.template import Context, Template

from calculators.engine.grader import grade
from drills.problems.answer_steps import answer_steps_html
from drills.problems.forms import AnswerForm
from drills.problems.generation import draw_problem

# The loop of templates/drills/problem.html before drills/problems/answer_steps.py replaced it (commit 5de4f13).
TEMPLATE_LOOP = """{% load drills_tags %}{% for row in rows %}
            <li class="answer-step py-2 border-top{% if row.grade %} verdict-{{ row.grade.verdict }}{% endif %}" id="step-{{ row.spec.key }}">
              <label class="form-label mb-1 d-flex justify-content-between gap-2" for="{{ row.field.id_for_label }}">
                <span><span class="step-number">{{ forloop.counter }}.</span> {{ row.spec.label }} <code class="small">{{ row.spec.key }}</code></span>
                <span class="text-body-secondary small step-unit">{{ row.spec.unit|step_unit }}</span>
              </label>
              <div class="input-group">
                {{ row.field }}
                {% if row.grade %}<span class="input-group-text bg-{{ row.grade.verdict|verdict_style }}-subtle text-{{ row.grade.verdict|verdict_style }}-emphasis verdict-badge">{% if row.grade.given %}{{ row.grade.verdict|verdict_label }}{% else %}No answer{% endif %}</span>{% endif %}
              </div>
              {% for error in row.field.errors %}<div class="invalid-feedback d-block">{{ error }}</div>{% endfor %}
              {% if row.grade %}
              <div class="small mt-1 grade-message">
                <p class="mb-1">{{ row.grade.message }}{% if row.grade.misconception_info %} <a href="{{ row.grade.misconception_info.link }}">Read why</a>.{% endif %}</p>
                <p class="mb-0 text-body-secondary worked"><span class="visually-hidden">Worked: </span>{{ row.step.substituted }}</p>
              </div>
              {% endif %}
            </li>
          {% endfor %}"""  # noqa: E501 (the template as it was, byte for byte)


def _rows(solution, form, graded):
    return [{"field": form[spec.key], "spec": spec, "grade": graded.steps[i] if graded else None,
             "step": solution.steps[i]} for i, spec in enumerate(solution.specs)]


def _both(rows):
    return Template(TEMPLATE_LOOP).render(Context({"rows": rows})), str(answer_steps_html(rows))


@pytest.mark.parametrize("family, seed", [("ladder", 20260), ("kv", 7), ("roofline", 11), ("decode", 3)])
def test_fresh_and_graded_steps_match_the_template(family, seed):
    solution = draw_problem(family, seed).solve()
    fresh = AnswerForm(solution.specs, initial={"started": "x"})
    template_html, python_html = _both(_rows(solution, fresh, None))
    assert python_html == template_html and 'class="answer-step py-2 border-top" id="step-' in python_html

    # Right, wrong, blank, unreadable and "<script>" answers, in turn over the steps.
    typed = ["{!r}", "<script>x</script>", "", "1", "7O GiB"]
    answers = {spec.key: typed[i % len(typed)].format(step.value)
               for i, (spec, step) in enumerate(zip(solution.specs, solution.steps))}
    posted = AnswerForm(solution.specs, {**answers, "started": ""})
    posted.is_valid()
    graded = grade(solution, posted.answers())
    posted.add_error(solution.specs[-1].key, "Could not read '<b>' & more")
    template_html, python_html = _both(_rows(solution, posted, graded))
    assert python_html == template_html
    assert "verdict-correct" in python_html and "&lt;script&gt;" in python_html and "<script>" not in python_html
    assert ("No answer" in python_html) == (len(solution.specs) >= 3)
    assert "Could not read &#x27;&lt;b&gt;&#x27; &amp; more" in python_html


def test_a_misconception_links_its_page_and_labels_are_escaped():
    solution = draw_problem("kv", 7).solve()
    key = solution.specs[0].key
    form = AnswerForm(solution.specs, {key: repr(solution.steps[0].value / 2)})  # K and V counted once
    form.is_valid()
    graded = grade(solution, form.answers())
    assert graded.steps[0].misconception == "missing-kv-factor-2"
    spec = SimpleNamespace(key=key, label='Bytes <per> "token" & co', unit="B")
    rows = [{"field": form[key], "spec": spec, "grade": graded.steps[0], "step": solution.steps[0]}]
    template_html, python_html = _both(rows)
    assert python_html == template_html
    assert "Bytes &lt;per&gt; &quot;token&quot; &amp; co" in python_html and "Read why</a>." in python_html
