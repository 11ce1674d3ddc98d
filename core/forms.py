"""Form fields every app's forms share (no app's models: this is the bottom floor, docs/architecture.md)."""

from __future__ import annotations

from django import forms


class CheckedLengthField(forms.CharField):
    """A text field whose length limit the server checks and reports, with no ``maxlength`` on the input.

    A browser's ``maxlength`` cuts a long paste silently (a 200-character title kept its first 160 with no
    word said); without it the form comes back with what was typed and "at most 160 characters (it has 200)".
    """

    def widget_attrs(self, widget):
        """The widget's attributes without ``maxlength`` (the server reports the length instead)."""
        attrs = super().widget_attrs(widget)
        attrs.pop("maxlength", None)
        return attrs
