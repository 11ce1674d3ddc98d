"""``manage.py grade FAMILY (--seed N | --inputs JSON) --answers FILE [--json]``.

Grades typed answers exactly as the problem pages do. ``--seed`` draws the
problem the generator makes for that seed; ``--inputs`` gives the family's
inputs in snake case (and may carry ``"config": {...}`` for a pasted model).
FILE is JSON mapping step keys to the typed text. Exit 2 and one sentence on
stderr for bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import CommandError

from calculators.engine.grader import grade
from calculators.engine_command import BAD_INPUT, EngineCommand
from calculators.families import FAMILIES
from drills.problems.generation import MAX_SEED, drill_families, generate_inputs


class Command(EngineCommand):
    help = "Grade typed answers to a problem of a calculator family, step by step."

    def add_arguments(self, parser):
        slugs = [family.slug for family in drill_families()]
        parser.add_argument("family", choices=slugs, metavar="FAMILY", help=f"one of {', '.join(slugs)}")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--seed", type=int, help="the seed of a generated problem")
        source.add_argument("--inputs", help="the family's inputs as JSON (or a path to a JSON file)")
        parser.add_argument("--answers", required=True, metavar="FILE",
                            help="JSON file mapping step keys to typed answers")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, **options):
        family = FAMILIES[options["family"]]
        if options["seed"] is not None:
            if not 0 <= options["seed"] < MAX_SEED:
                raise CommandError("--seed must be a whole number from 0 to 2^63 − 1, as on the problem pages.",
                                   returncode=BAD_INPUT)
            inputs = generate_inputs(family.slug, options["seed"])
        else:
            inputs = self._inputs(options["inputs"])
        answers = self.read_json_file(options["answers"], "answers")
        if not isinstance(answers, dict):
            raise CommandError("The answers file must hold a JSON object mapping step keys to answers.",
                               returncode=BAD_INPUT)
        answers = {str(k): (v if isinstance(v, str) or v is None else json.dumps(v)) for k, v in answers.items()}
        result = grade(family.run(inputs), answers)
        if options["json"]:
            self.stdout.write(json.dumps(result.to_json(), indent=2))
            return
        width = max(len(step.key) for step in result.steps)
        for step in result.steps:
            self.stdout.write(f"{step.key.ljust(width)}  {step.verdict:<16} {step.given!r:<24} {step.message}")
        self.stdout.write(f"score: {result.score:.3f}")

    def _inputs(self, text: str) -> dict:
        stripped = text.strip()
        if not stripped.startswith("{") and Path(stripped).is_file():
            data = self.read_json_file(stripped, "inputs")
        else:
            try:
                data = json.loads(stripped)
            except json.JSONDecodeError as exc:
                raise CommandError(f"--inputs is not valid JSON ({exc.msg} at column {exc.colno}).",
                                   returncode=BAD_INPUT)
        if not isinstance(data, dict):
            raise CommandError("--inputs must be a JSON object of the family's inputs.", returncode=BAD_INPUT)
        return data
