"""The repository's root, for tests that read files beside the code (settings, templates, fixtures, bin/, .ci/).

Declared once so that a test file can move in the mirrored tree without counting its ``parents``.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
