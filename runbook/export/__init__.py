"""The offline runbook: ``manage.py export_runbook OUT_DIR`` (issue 12).

:mod:`.calculators` turns each calculator family into data a small JavaScript
driver can run (the step formulas printed from the engine's own sympy
expressions, the numbers a family resolves from its catalog inputs as tables);
:mod:`.pages` writes each chapter as one self-contained HTML file.
"""
