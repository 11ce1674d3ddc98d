"""``manage.py calc FAMILY [flags] [--json]``: run a calculator family from the shell.

Flags are the family's inputs in kebab case (``--reserve-gib 3``); ``--config
FILE`` reads a model's ``config.json`` instead of ``--model``. Without
``--json`` it prints a table; with it, docs/architecture.md §10's JSON. Exit 2 and one
sentence on stderr for bad input.
"""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from calculators import simulation
from calculators.engine.answers import parse_answer
from calculators.engine.errors import AnswerError
from calculators.engine.procedures.base import format_number
from calculators.engine.units import get_unit
from calculators.engine_command import BAD_INPUT, EngineCommand
from calculators.families import FAMILIES


class Command(EngineCommand):
    help = "Run a calculator family (ladder, kv, params, weights) and print its steps; or parse an answer."

    def add_arguments(self, parser):
        families = parser.add_subparsers(dest="family", required=True, metavar="FAMILY")
        for family in FAMILIES.values():
            sub = families.add_parser(family.slug, help=family.summary)
            names = {spec.name for spec in family.inputs}
            for spec in family.inputs:
                choices = f" ({', '.join(spec.choices)})" if spec.choices else ""
                default = "" if spec.default is None else f"; default {spec.default}"
                # An older name of the input (cost's --utilization for --busy-fraction) is read as it.
                older = ["--" + old.replace("_", "-") for old in spec.aliases if old not in names]
                sub.add_argument(spec.flag, *older, dest=spec.name, help=f"{spec.help}{choices}{default}")
                if spec.kind == "model":
                    sub.add_argument("--config", dest="config_file", metavar="FILE",
                                     help="a model's config.json instead of --model")
            sub.add_argument("--json", action="store_true", help="print JSON")
        self.add_extra_subcommands(families)

    def add_extra_subcommands(self, families):
        """``calc parse TEXT --unit UNIT [--json]``: read a typed answer as the grader does."""
        sub = families.add_parser("parse", help="read a typed answer in a unit, as the grader does")
        sub.add_argument("text", help="the typed answer, e.g. '52 GB' or '2*32*8*128*2'")
        sub.add_argument("--unit", required=True, help="the unit to convert to (GiB, B, GB/s, TB/s, users, …)")
        sub.add_argument("--json", action="store_true", help='print {"value", "unit", "error"}')

    def handle_parse(self, options):
        """Print the parsed value; an unreadable answer is an error sentence (exit 2 without --json)."""
        get_unit(options["unit"])  # an unknown target unit is bad input: AnswerError → exit 2
        try:
            parsed = parse_answer(options["text"], options["unit"])
        except AnswerError as exc:
            if not options["json"]:
                raise
            self.stdout.write(json.dumps({"value": None, "unit": options["unit"], "error": str(exc)}))
            return
        if options["json"]:
            self.stdout.write(json.dumps({"value": parsed.value, "unit": parsed.unit, "error": None}))
        else:
            self.stdout.write(format_number(parsed.value, parsed.unit)
                              + (f"  ({parsed.conversion})" if parsed.conversion else ""))

    def handle(self, *args, **options):
        if options["family"] == "parse":
            return self.handle_parse(options)
        family = FAMILIES[options["family"]]
        raw = {spec.name: options.get(spec.name) for spec in family.inputs}
        if options.get("config_file"):
            if raw.get("model"):
                raise CommandError("Give --model or --config, not both.", returncode=BAD_INPUT)
            raw.pop("model")
            raw["config"] = self.read_json_file(options["config_file"], "config")
        raw = {name: value for name, value in raw.items() if value is not None}
        result = simulation.run_drill(family, raw)
        if options["json"]:
            self.stdout.write(json.dumps(result.to_json(), indent=2))
            return
        self.stdout.write(self.table(result))

    def table(self, result) -> str:
        """A readable table of the steps, then the notes."""
        rows = [(s.key, s.label, format_number(s.value, s.unit), s.substituted) for s in result.steps]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        shown = {k: v for k, v in result.inputs.items() if v is not None and k != "config"}
        if "config" in result.inputs:
            shown = {"model": "(config file)", **shown}
        lines = [f"{result.family}: " + ", ".join(f"{k}={v}" for k, v in shown.items())]
        for row in rows:
            lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])
        lines += [f"note: {note}" for note in result.notes]
        if "curve" in result.extra:
            lines += self.curve_table(result.extra["curve"])
        return "\n".join(lines)

    def curve_table(self, curve) -> list[str]:
        """The pareto family's curve, one line per grid point (the page's table)."""
        lines = [f"curve (TPOT target {curve['target_ms']:g} ms): gpus  batch  step  tok/s per user  tok/s per card"]
        for degree in curve["degrees"]:
            for point in degree["points"]:
                mark = "" if point["meets_target"] else "  (misses the target)"
                if curve["marked"] == {"gpus": degree["gpus"], "batch": point["batch"]}:
                    mark += "  <- the target's point"
                lines.append(f"  {degree['gpus']:>4}  {point['batch']:>5}  {format_number(point['step_ms'], 'ms'):>9}  "
                             f"{format_number(point['tok_s_per_user'], 'tok/s'):>12}  "
                             f"{format_number(point['tok_s_per_card'], 'tok/s'):>14}{mark}")
        return lines
