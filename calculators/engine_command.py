"""A management-command base for the engine commands (`calc`, `simulate`, `grade`): bad input exits 2 with one sentence.

docs/architecture.md §10: ``calc`` and ``grade`` exit 0 on success and 2 with one sentence
on stderr for bad input (an unknown model, a value out of range, an unreadable
file, a malformed flag), never a traceback.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, handle_default_options
from django.db import connections

from calculators.engine.errors import EngineError

BAD_INPUT = 2
_NEGATIVE_VALUE = re.compile(r"^[-−–]\s*[0-9.(]")


class EngineCommand(BaseCommand):
    """Base class: argparse errors and :class:`EngineError` become exit 2 and one sentence.

    System checks are skipped: the engine commands need no web app to be importable.
    """

    requires_system_checks = []

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        _route_errors(parser)
        return parser

    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except EngineError as exc:
            raise CommandError(str(exc), returncode=BAD_INPUT) from exc

    def run_from_argv(self, argv):
        """Like Django's, but a :class:`CommandError` prints its sentence alone (no class name)."""
        self._called_from_command_line = True
        try:
            parser = self.create_parser(argv[0], argv[1])
            options = parser.parse_args(argv[2:])
            cmd_options = vars(options)
            args = cmd_options.pop("args", ())
            handle_default_options(options)
            self.execute(*args, **cmd_options)
        except CommandError as exc:
            self.stderr.write(str(exc))
            sys.exit(exc.returncode)
        finally:
            connections.close_all()

    def read_json_file(self, path: str, what: str):
        """Load a JSON file or raise a one-sentence :class:`CommandError` (exit 2)."""
        try:
            return json.loads(Path(path).read_text())
        except OSError as exc:
            raise CommandError(f"Cannot read the {what} file {path}: {exc.strerror}.", returncode=BAD_INPUT)
        except json.JSONDecodeError as exc:
            raise CommandError(f"The {what} file {path} is not valid JSON (line {exc.lineno}: {exc.msg}).",
                               returncode=BAD_INPUT)
        except RecursionError:
            raise CommandError(f"The {what} file {path} is nested too deeply.", returncode=BAD_INPUT)


def _route_errors(parser) -> None:
    """Make a parser (and its sub-parsers) raise a one-sentence CommandError on bad flags."""

    def error(message):
        raise CommandError(f"{message[0].upper()}{message[1:]}.", returncode=BAD_INPUT)

    parser.error = error
    # A value with a leading minus is a value, not a flag: argparse knows -1 and -0.5 but not -1e3, -1_000,
    # -2^10, -90% or −1 (U+2212), which it would take for an unknown option and leave the flag without its
    # value. No flag of these commands starts with a digit, a point, a bracket or a second minus sign.
    parser._negative_number_matcher = _NEGATIVE_VALUE
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict):  # a sub-parser action: name → parser
            for subparser in choices.values():
                _route_errors(subparser)
