"""A default is assigned on its quantity and nowhere else (docs/architecture.md §11).

The tuning inputs' defaults (bandwidth efficiency, MFU, prefill MFU, all-reduce latency, memory utilisation,
a fleet's busy fraction, reserve, block size, average conversation) live on their quantities in
``calculators/engine/quantities.py`` (:data:`INPUTS`), each with its source. This test reads the project's code
with :mod:`ast` and fails on a default assigned anywhere else: an ``InputSpec`` with a literal default for such a
key, a keyword or dataclass default of that name, a ``.get(key, literal)`` fallback, a constant named after the
key; and on a docstring, comment or ``docs/`` sentence that states the value beside the quantity's name. (Chapters
and question files quote defaults by shortcode; the runbook's own lint covers them.)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from calculators.engine.quantities import INPUTS

ROOT = Path(__file__).resolve().parents[2]
CODE = ("calculators", "drills", "api", "coaching", "runbook", "core", "home", "accounts", "config")
DEFAULTED = {key: q for key, q in INPUTS.items() if q.default is not None}


def _number(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
        node.value, bool)


def _called(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def assigned_defaults(source: str, keys=tuple(DEFAULTED)) -> list[str]:
    """Where ``source`` (Python) assigns a literal default to one of ``keys``: one line per finding."""
    keys = set(keys)
    found = []
    for node in ast.walk(ast.parse(source)):
        where = f"line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call):
            name = _called(node)
            words = {kw.arg: kw.value for kw in node.keywords}
            if name == "InputSpec":
                key = node.args[0] if node.args else words.get("name")
                value = node.args[2] if len(node.args) > 2 else words.get("default")
                if isinstance(key, ast.Constant) and key.value in keys and _number(value):
                    found.append(f"{where}: InputSpec {key.value!r} with a literal default")
            if name == "get" and len(node.args) == 2 and isinstance(node.args[0], ast.Constant) and (
                    node.args[0].value in keys) and _number(node.args[1]):
                found.append(f"{where}: .get({node.args[0].value!r}, literal)")
            first = node.args[0] if node.args else None
            named = (first.value if isinstance(first, ast.Constant) else first.id.lower()
                     if isinstance(first, ast.Name) else None)
            if name in ("of", "replace") and named in keys and _number(words.get("default")):
                found.append(f"{where}: {name}({named}, default=literal)")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
            pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
            found += [f"{where}: keyword default {a.arg}=literal" for a, d in pairs if a.arg in keys and _number(d)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and (
                node.target.id.lower() in keys) and _number(node.value):
            found.append(f"{where}: field {node.target.id} = literal")
        if isinstance(node, ast.Assign) and _number(node.value):
            found += [f"{where}: {t.id} = literal" for t in node.targets
                      if isinstance(t, ast.Name) and t.id.lower() in keys]
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
            for target in node.targets:
                if isinstance(target, ast.Tuple):
                    found += [f"{where}: {t.id} = literal" for t, v in zip(target.elts, node.value.elts)
                              if isinstance(t, ast.Name) and t.id.lower() in keys and _number(v)]
    return found


def _renderings(value: float) -> list[str]:
    """How prose writes ``value``: 0.75, 75 %, 75%, 10 µs …"""
    text = f"{value:g}"
    shown = [re.escape(text) + r"(?![\d.])"]
    if 0 < value <= 1:
        percent = f"{value * 100:g}"
        shown.append(re.escape(percent) + r"\s?%")
    return shown


def stated_defaults(text: str, quantities=DEFAULTED) -> list[str]:
    """The sentences of ``text`` that name a defaulted quantity (its key or label) and state its default value
    within a few words after the name ("``mfu`` (0.5)", "bandwidth efficiency, 0.75 by default")."""
    found = []
    for sentence in re.split(r"(?<=[.;])\s+|\n\s*\n", text):
        flat = " ".join(sentence.split())
        lowered = flat.lower()
        for key, quantity in quantities.items():
            for name in {key, key.replace("_", " "), quantity.label.lower()}:
                for at in (m.end() for m in re.finditer(r"(?<![\w])" + re.escape(name) + r"(?![\w])", lowered)):
                    after = lowered[at: at + 45]
                    if any(re.search(r"(?<![\w.,])" + shown, after) for shown in _renderings(quantity.default)):
                        found.append(f"{key} = {quantity.default:g} stated: {flat[max(0, at - 60): at + 60]!r}")
    return found


def _docstrings_and_comments(source: str) -> str:
    texts = [ast.get_docstring(node) or "" for node in ast.walk(ast.parse(source))
             if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    texts += [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]
    return "\n\n".join(texts)


def _project_sources():
    for package in CODE:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts and path.name != "quantities.py":
                yield path


def test_no_default_is_assigned_outside_its_quantity():
    found = {str(path.relative_to(ROOT)): hits for path in _project_sources()
             if (hits := assigned_defaults(path.read_text()))}
    assert found == {}


def test_no_docstring_comment_or_doc_states_a_default():
    found = {str(path.relative_to(ROOT)): hits for path in _project_sources()
             if (hits := stated_defaults(_docstrings_and_comments(path.read_text())))}
    found.update({str(path.relative_to(ROOT)): hits for path in sorted((ROOT / "docs").rglob("*.md"))
                  if (hits := stated_defaults(path.read_text()))})
    assert found == {}


def test_every_default_has_a_source_and_lies_in_its_bounds():
    for key, quantity in DEFAULTED.items():
        assert quantity.source, key
        assert quantity.minimum is None or quantity.default >= quantity.minimum, key
        assert quantity.maximum is None or quantity.default <= quantity.maximum, key


def test_the_checks_find_each_way_of_assigning_a_default():
    source = '''
from dataclasses import dataclass
EFFICIENCY = InputSpec("bandwidth_efficiency", "float", 0.75, "help")
NAMED = InputSpec(name="mfu", kind="float", default=0.5, help="help")
OTHER = InputSpec("batch", "int", 1, "not a defaulted quantity")
BANDWIDTH_EFFICIENCY = 0.75
UTILIZATION, RESERVE_GIB = 0.9, 3.0
CHEAP = replace(OTHER, default=4)
LOOSE = replace(UTILIZATION, default=0.8)

@dataclass
class Replica:
    mfu: float = 0.5
    tp: int = 1

def step(batch, bandwidth_efficiency=0.75, *, allreduce_latency_us=10.0):
    return inputs.get("reserve_gib", 3.0) + inputs.get("batch", 1)
'''
    found = assigned_defaults(source)
    assert len(found) == 10, found
    assert any("InputSpec 'bandwidth_efficiency'" in f for f in found)
    assert any("InputSpec 'mfu'" in f for f in found)
    assert any("field mfu" in f for f in found) and any(".get('reserve_gib'" in f for f in found)
    assert any("RESERVE_GIB = literal" in f for f in found) and any("replace(" in f for f in found)
    assert stated_defaults("Memory time uses the bandwidth efficiency (0.75 by default).")
    assert stated_defaults("``mfu`` (0.5) and ``allreduce_latency_us`` (10)")
    assert not stated_defaults("Real kernels reach 0.75 of peak bandwidth.")  # no quantity named
    assert not stated_defaults("The bandwidth efficiency defaults to its quantity's default.")
