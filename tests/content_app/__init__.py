"""A test app with a content reader of its own (tests/test_content_readers.py installs it)."""
