"""The drills app's content readers, found by :meth:`runbook.loading.ReaderRegistry.installed`, in load order."""

from drills.bank.problem_templates import PROBLEM_TEMPLATES
from drills.bank.readers import QUESTIONS
from drills.critique.readers import CRITIQUES
from drills.rounds.presets import ROUND_PRESETS

READERS = (QUESTIONS, CRITIQUES, PROBLEM_TEMPLATES, ROUND_PRESETS)
