"""A test app with a content reader of its own (tests/runbook/test_content_readers.py installs it)."""
