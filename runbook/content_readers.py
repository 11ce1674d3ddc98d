"""The runbook's content readers, found by :meth:`runbook.loading.ReaderRegistry.installed`, in load order."""

from runbook.readers.documents import DOCUMENTS
from runbook.readers.reference import ERRATA, GLOSSARY, READING_LIST

READERS = (DOCUMENTS, GLOSSARY, ERRATA, READING_LIST)
