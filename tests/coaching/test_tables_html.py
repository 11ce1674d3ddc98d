"""The coach tables' rows (``templates/coaching/_tables.html``, a partial per cell): every text, URL and class
is escaped."""

from django.template.loader import render_to_string

from coaching.dashboard import Cell, Table


def _body(table: Table) -> str:
    return render_to_string("coaching/_tables.html", {"tables": [table]}).split("<tbody>")[1].split("</tbody>")[0]


def test_rows_are_escaped_and_linked():
    table = Table("t", "T", ["A", 'B "b"'], [
        [Cell('<script>alert("x")</script>', "/coach/candidates/1/?a=1&b='2'"), Cell("5 & 6", css='x" onclick="y')],
        [Cell("plain"), Cell("")],
    ])

    # Each cell carries its column's header (data-label: the phone layout's "header: value" lines), escaped too.
    assert _body(table).strip() == (
        '<tr><td class="" data-label="A"><a href="/coach/candidates/1/?a=1&amp;b=&#x27;2&#x27;">'
        '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</a></td>'
        '<td class="x&quot; onclick=&quot;y" data-label="B &quot;b&quot;">5 &amp; 6</td></tr>'
        '<tr><td class="" data-label="A">plain</td><td class="" data-label="B &quot;b&quot;"></td></tr>')


def test_a_time_reads_as_words_on_the_page_and_iso_in_the_csv(settings):
    from datetime import datetime
    from datetime import timezone as dt_timezone

    from django.utils import timezone

    from coaching.dashboard import when

    settings.TIME_ZONE = "UTC"
    with timezone.override("Europe/Paris"):  # 13:05 UTC is 14:05 in Paris in December
        cell = when(datetime(2026, 12, 3, 13, 5, tzinfo=dt_timezone.utc), "/coach/attempts/1/")
    assert (cell.text, cell.url) == ("Thu 3 Dec 2026, 14:05", "/coach/attempts/1/")
    table = Table("t", "T", ["When"], [[cell]])
    assert table.csv().splitlines()[1] == "2026-12-03 14:05"
    assert "Thu 3 Dec 2026, 14:05" in _body(table)
