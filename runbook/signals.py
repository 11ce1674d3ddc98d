"""Signals of the runbook app, for apps that build on its content without the runbook importing them."""

from django.dispatch import Signal

# Sent by ``manage.py load_content`` after the content files were loaded, with
# ``report`` (a :class:`runbook.loading.LoadReport`) and ``stdout`` (the
# command's output stream, for a receiver's one-line report). The drills app
# connects :func:`drills.bank.problem_templates.on_content_loaded` to it.
content_loaded = Signal()
