"""Every model of the ``drills`` app, by concept.

The app is one Django app (label ``drills``, one migration history) made of
packages by concept; each package defines its models in its own
``models.py``. Django imports this module to find them, and other apps import
the models from here (``from drills.models import Card``) or from the concept's
module.
"""

from drills.bank.models import BankItem, BankItemQuerySet
from drills.critique.models import CritiqueAttempt, CritiqueMark
from drills.followups.models import FollowUpAttempt
from drills.lab.models import LabRun
from drills.problems.models import Attempt, ProblemInstance, StepAnswer
from drills.reviews.models import Card, ReviewLog, ReviewLogErasure, ReviewSettings
from drills.rounds.models import Round, RoundItem, RoundTemplate

__all__ = [
    "Attempt", "BankItem", "BankItemQuerySet", "Card", "CritiqueAttempt", "CritiqueMark", "FollowUpAttempt", "LabRun",
    "ProblemInstance", "ReviewLog", "ReviewLogErasure", "ReviewSettings", "Round", "RoundItem", "RoundTemplate",
    "StepAnswer",
]
