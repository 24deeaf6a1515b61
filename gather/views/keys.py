"""Settings, Model keys: store, replace and delete the user's own OpenAI and
Anthropic keys, pick the model of each and which one capture uses.

A key is never shown back, not even masked beyond its last four characters;
the key field is never re-rendered with a value. A key stored under an
encryption key that is no longer configured is listed as unreadable, with a
request to enter it again.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts.reauth import recent_sign_in_required
from accounts.requests import AuthenticatedRequest
from gather import errors, selectors, services
from gather.models import MODEL_MAX, ModelKey, Provider


def _default_models_help() -> str:
    defaults = ", ".join(
        f"{label}: {settings.GATHER_DEFAULT_MODELS[value]}" for value, label in Provider.choices
    )
    return f"Leave it empty for the provider's default ({defaults})."


class ModelKeyForm(forms.Form):
    provider = forms.ChoiceField(choices=Provider.choices, widget=forms.RadioSelect)
    key = forms.CharField(
        label="API key",
        max_length=services.KEY_MAX,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text="Stored encrypted; afterwards only its last four characters are shown.",
    )
    model = forms.CharField(label="Model (optional)", max_length=MODEL_MAX, required=False)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model"].help_text = _default_models_help()


class KeyModelForm(forms.Form):
    """The model of one stored key (empty: the provider's default)."""

    model = forms.CharField(
        label="Model",
        max_length=MODEL_MAX,
        required=False,
        widget=forms.TextInput(attrs={"aria-label": "Model"}),
    )


def _provider_or_404(provider: str) -> str:
    if provider not in Provider.values:
        raise Http404("No such provider.")
    return provider


def _render(request: AuthenticatedRequest, form: ModelKeyForm, status: int = 200) -> HttpResponse:
    stored = selectors.model_keys_of(user=request.user)
    rows = [
        {"key": key, "model_form": KeyModelForm(initial={"model": key.model}, prefix=key.provider)}
        for key in stored
    ]
    return render(
        request,
        "gather/model_keys.html",
        {
            "form": form,
            "rows": rows,
            "gather_key": selectors.model_key_for_gather(user=request.user),
        },
        status=status,
    )


@never_cache
@login_required
# Storing a key decides where the text people paste goes (a key of someone
# else's account would hand it to them): a fresh sign-in, as for a token.
@recent_sign_in_required
@require_http_methods(["GET", "POST"])
def model_keys(request: AuthenticatedRequest) -> HttpResponse:
    """GET lists the stored keys; POST stores (or replaces) one, which becomes the default."""
    if request.method == "GET":
        return _render(request, ModelKeyForm())
    form = ModelKeyForm(request.POST)
    if not form.is_valid():
        return _render(request, ModelKeyForm(_without_key(request.POST)), status=400)
    try:
        stored = services.model_key_set(
            user=request.user,
            provider=form.cleaned_data["provider"],
            key=form.cleaned_data["key"],
            model=form.cleaned_data["model"],
        )
    except errors.ModelKeyError as exc:
        refused = ModelKeyForm(_without_key(request.POST))
        refused.is_valid()
        refused.add_error(exc.field if exc.field in refused.fields else None, exc.message)
        return _render(request, refused, status=400)
    messages.success(
        request,
        f"Stored your {stored.get_provider_display()} key …{stored.last4} "
        f"(model {stored.model}). Capture uses it now.",
    )
    return redirect("model_keys")


def _without_key(data):
    """The sent form without the key: a secret is never rendered back."""
    data = data.copy()
    data.pop("key", None)
    return data


@login_required
@require_POST
def model_key_model(request: AuthenticatedRequest, provider: str) -> HttpResponse:
    provider = _provider_or_404(provider)
    form = KeyModelForm(request.POST, prefix=provider)
    if not form.is_valid():
        messages.error(request, f"A model name has at most {MODEL_MAX} characters.")
        return redirect("model_keys")
    try:
        stored = services.model_key_change_model(
            user=request.user, provider=provider, model=form.cleaned_data["model"]
        )
    except ModelKey.DoesNotExist:
        raise Http404("No such key.") from None
    except errors.ModelKeyError as exc:
        messages.error(request, exc.message)
        return redirect("model_keys")
    messages.success(request, f"Your {stored.get_provider_display()} key calls {stored.model}.")
    return redirect("model_keys")


@login_required
@require_POST
def model_key_default(request: AuthenticatedRequest, provider: str) -> HttpResponse:
    provider = _provider_or_404(provider)
    try:
        stored = services.model_key_make_default(user=request.user, provider=provider)
    except ModelKey.DoesNotExist:
        raise Http404("No such key.") from None
    messages.success(request, f"Capture uses your {stored.get_provider_display()} key now.")
    return redirect("model_keys")


@login_required
@require_http_methods(["GET", "POST"])
def model_key_delete(request: AuthenticatedRequest, provider: str) -> HttpResponse:
    """GET asks for confirmation; POST deletes the key."""
    provider = _provider_or_404(provider)
    stored = ModelKey.objects.filter(user=request.user, provider=provider).first()
    if request.method == "GET":
        if stored is None:
            raise Http404("No such key.")
        return render(request, "gather/model_key_delete.html", {"key": stored})
    label = Provider(provider).label
    if services.model_key_delete(user=request.user, provider=provider):
        messages.success(request, f"Deleted your {label} key.")
    else:
        messages.info(request, f"You have no {label} key stored.")
    return redirect("model_keys")
