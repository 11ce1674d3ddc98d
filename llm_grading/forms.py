"""The endpoint form: base URL, model name and API key (a candidate's own, or a coach's for a cohort)."""

from __future__ import annotations

from django import forms

from .addresses import MAX_URL, EndpointRefused, pinned_address
from .models import Endpoint


class EndpointForm(forms.ModelForm):
    """An OpenAI-compatible endpoint. The key is write-only: left blank it keeps the one stored."""

    api_key = forms.CharField(required=False, max_length=500, label="API key", strip=True,
                              widget=forms.PasswordInput(render_value=False, attrs={"class": "form-control",
                                                                                     "autocomplete": "off"}))
    forget_key = forms.BooleanField(required=False, label="Remove the stored key (a server that needs none)")

    class Meta:
        model = Endpoint
        fields = ["base_url", "model"]
        labels = {"base_url": "Base URL", "model": "Model name"}
        widgets = {
            "base_url": forms.TextInput(attrs={"class": "form-control", "inputmode": "url", "spellcheck": "false",
                                               "placeholder": "http://127.0.0.1:8000/v1"}),
            "model": forms.TextInput(attrs={"class": "form-control", "spellcheck": "false",
                                            "placeholder": "Qwen/Qwen2.5-7B-Instruct"}),
        }
        help_texts = {
            "base_url": "The address before /chat/completions, usually ending in /v1. https://, or http:// for a "
                        "server on your own machine or network where this site allows it.",
            "model": "As your server names it (vLLM and SGLang: the served model; Ollama: e.g. llama3.1:8b).",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["base_url"].max_length = MAX_URL
        stored = self.instance.pk and self.instance.has_key
        self.fields["api_key"].help_text = (
            "A key is stored (encrypted; it is never shown). Leave this blank to keep it, or type a new one."
            if stored else "Optional: local servers often need none. Stored encrypted and never shown again.")
        if not stored:
            del self.fields["forget_key"]

    def clean_base_url(self) -> str:
        url = self.cleaned_data["base_url"].strip()
        try:
            pinned_address(url)
        except EndpointRefused as refused:
            raise forms.ValidationError(str(refused)) from None
        return url.rstrip("/")

    def clean_model(self) -> str:
        model = self.cleaned_data["model"].strip()
        if not model:
            raise forms.ValidationError("Give the model's name as your server lists it (GET /v1/models).")
        return model

    def save(self, commit: bool = True) -> Endpoint:
        endpoint = super().save(commit=False)
        if self.cleaned_data.get("api_key"):
            endpoint.set_api_key(self.cleaned_data["api_key"])
        elif self.cleaned_data.get("forget_key"):
            endpoint.api_key_token = ""
        if commit:
            endpoint.save()
        return endpoint
