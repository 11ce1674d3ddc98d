"""Exceptions raised by the formula engine.

Every engine error is a ``ValueError`` whose message is one plain sentence fit to
show a user as it is (the ``calc`` command prints it on stderr and exits 2; the
pages show it beside the offending field).
"""


class EngineError(ValueError):
    """Base class of every error the engine raises on bad input."""


class ConfigError(EngineError):
    """A model ``config.json`` is missing a required field or contradicts itself.

    ``field`` names the offending key (as spelled in Hugging Face configs) when
    there is one.
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class CatalogError(EngineError):
    """An unknown model or GPU id, or an unreadable catalog file.

    ``field`` names the input (``model`` or ``gpu``) when the error is about one.
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class InputError(EngineError):
    """A procedure input outside its valid range (negative context, utilisation above 1, …).

    ``field`` names the input in snake case, as in ``--inputs`` JSON.
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class AnswerError(EngineError):
    """A typed answer that cannot be read, or is in a unit of the wrong dimension.

    The message says what was read and what was expected.
    """
