"""Settings, Deep links: each person's URL template per `externalSystem`,
which turns a commitment's external reference into a link on its page
(commitments.links has the rules; docs/pages.md, "Deep links")."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.requests import AuthenticatedRequest
from commitments import links, selectors
from commitments.errors import LinkTemplateInvalid
from commitments.models import EXTERNAL_SYSTEM_MAX, LINK_TEMPLATE_MAX
from lib.forms import TextField


class LinkTemplateForm(forms.Form):
    system = TextField(
        label="External system",
        max_length=EXTERNAL_SYSTEM_MAX,
        strip=True,
        help_text="The externalSystem your tracker sends with each commitment, e.g. jira.",
        widget=forms.TextInput(attrs={"list": "known-systems", "autocomplete": "off"}),
    )
    template = TextField(
        label="Link address",
        max_length=LINK_TEMPLATE_MAX,
        strip=True,
        help_text=(
            "An https:// address with {externalId} where the id goes, e.g. "
            "https://example.atlassian.net/browse/{externalId}."
        ),
        # Text, not type="url": the browser need not judge "{externalId}".
        widget=forms.TextInput(
            attrs={
                "inputmode": "url",
                "spellcheck": "false",
                "autocomplete": "off",
                "placeholder": "https://example.atlassian.net/browse/{externalId}",
            }
        ),
    )


def _render(
    request: AuthenticatedRequest, form: LinkTemplateForm, status: int = 200
) -> HttpResponse:
    return render(
        request,
        "commitments/link_templates.html",
        {
            "form": form,
            "links": selectors.link_template_list(owner=request.user),
            "known_systems": selectors.external_systems_seen_by(user=request.user),
        },
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def link_template_list(request: AuthenticatedRequest) -> HttpResponse:
    if request.method == "GET":
        # The commitment page's "Link jira ids…" names the system to link.
        system = request.GET.get("system", "")[:EXTERNAL_SYSTEM_MAX]
        return _render(request, LinkTemplateForm(initial={"system": system}))
    form = LinkTemplateForm(request.POST)
    if not form.is_valid():
        return _render(request, form, status=400)
    try:
        link = links.link_template_add(owner=request.user, **form.cleaned_data)
    except LinkTemplateInvalid as exc:
        form.add_error(exc.field, str(exc))
        return _render(request, form, status=400)
    messages.success(request, f"Commitments from “{link.system}” now link to it.")
    return redirect("link_templates")


@login_required
@require_POST
def link_template_delete(request: AuthenticatedRequest, link_id: int) -> HttpResponse:
    if links.link_template_delete(owner=request.user, link_id=link_id):
        messages.success(request, "Link deleted.")
    else:
        messages.info(request, "That link was already gone.")
    return redirect("link_templates")
