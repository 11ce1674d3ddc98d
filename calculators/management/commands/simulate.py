"""``manage.py simulate [flags] [--json]``: run the serving simulator (docs/architecture.md §13) from the shell.

Flags are the simulator's inputs in kebab case (``--rate 20 --duration-s 600``);
``--config FILE`` reads a model's ``config.json`` instead of ``--model``;
``--trace FILE`` reads a CSV of ``arrival_s,prompt_tokens,output_tokens``;
``--sweep 5,10,20`` runs one simulation per rate and reports the knee;
``--concurrency-sweep 1,8,32`` one closed loop per concurrency (with
``--think-time-s``) and its knee in clients. With ``--json`` it prints
``{"inputs", "summary", "series"}`` (or ``{"inputs", "sweep", "knee_req_s"}``,
``"knee_concurrency"`` for a concurrency sweep); without, a short table. Exit 2
and one sentence on stderr for bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import CommandError

from calculators.engine_command import BAD_INPUT, EngineCommand
from calculators.sim.config import INPUTS
from calculators.sim.run import simulate


class Command(EngineCommand):
    help = "Simulate a serving fleet under load: latency percentiles, throughput, goodput, KV use."

    def add_arguments(self, parser):
        for spec in INPUTS:
            choices = f" ({', '.join(spec.choices)})" if spec.choices else ""
            default = "" if spec.default is None else f"; default {spec.default}"
            parser.add_argument(spec.flag, dest=spec.name, help=f"{spec.help}{choices}{default}")
        parser.add_argument("--config", dest="config_file", metavar="FILE",
                            help="a model's config.json instead of --model")
        parser.add_argument("--trace", dest="trace_file", metavar="FILE",
                            help="a CSV trace with the header arrival_s,prompt_tokens,output_tokens")
        parser.add_argument("--sweep", metavar="R1,R2,...", help="arrival rates to sweep, req/s (at most 12)")
        parser.add_argument("--concurrency-sweep", metavar="C1,C2,...",
                            help="closed-loop concurrencies to sweep, clients (at most 12; with --think-time-s)")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, **options):
        raw = {spec.name: options.get(spec.name) for spec in INPUTS}
        if options.get("config_file"):
            if raw.get("model"):
                raise CommandError("Give --model or --config, not both.", returncode=BAD_INPUT)
            raw.pop("model")
            raw["config"] = self.read_json_file(options["config_file"], "config")
        if options.get("trace_file"):
            try:
                raw["trace"] = Path(options["trace_file"]).read_text()
            except (OSError, UnicodeDecodeError) as exc:
                why = getattr(exc, "strerror", None) or "not UTF-8 text"
                raise CommandError(f"Cannot read the trace file {options['trace_file']}: {why}.",
                                   returncode=BAD_INPUT)
        for name in ("sweep", "concurrency_sweep"):
            if options.get(name) is not None:
                raw[name] = options[name]
        result = simulate({name: value for name, value in raw.items() if value is not None})
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2))
            return
        summaries = result["sweep"] if "sweep" in result else [result["summary"]]
        self.stdout.write(self.table(summaries))
        if "knee_concurrency" in result:
            knee = result["knee_concurrency"]
            self.stdout.write(f"knee: {knee} clients" if knee is not None
                              else "knee: no swept concurrency meets both targets")
        elif "sweep" in result:
            growing = [f"{s['rate_req_s']:g}" for s in result["sweep"] if s.get("queue_growing")]
            if growing:
                self.stdout.write(f"queue growing (not sustained over this run) at {', '.join(growing)} req/s")
            self.stdout.write(f"knee: {result['knee_text']}")

    @staticmethod
    def table(summaries: list[dict]) -> str:
        """One line per run: its load (a rate, ``N clients`` or ``trace``), completed, TTFT and TPOT p50/p99,
        goodput, preemptions, KV peak."""
        header = ("load", "done", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms",
                  "goodput req/s", "preempt", "KV peak")
        rows = [header]
        for s in summaries:
            if s.get("concurrency"):
                rate = f"{s['concurrency']} clients"
            else:
                rate = "trace" if s["rate_req_s"] is None else f"{s['rate_req_s']:g} req/s"
            cells = [s["ttft_ms"]["p50"], s["ttft_ms"]["p99"], s["tpot_ms"]["p50"], s["tpot_ms"]["p99"]]
            rows.append((rate, f"{s['completed']}/{s['arrived']}",
                         *("–" if v is None else f"{v:,.1f}" for v in cells),
                         f"{s['goodput_req_s']:.2f}", str(s["preemptions"]), f"{s['kv_peak_fraction']:.0%}"))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        return "\n".join("  ".join(cell.rjust(widths[i]) for i, cell in enumerate(row)) for row in rows)
