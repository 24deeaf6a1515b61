"""How the pages answer the domain errors of commitments' services, in one
place, as config/api_errors.py does for the API: a view decorated with
`maps_domain_errors` calls the services and lets their errors rise.

- CommitmentNotFound: 404 "No such commitment." (someone who cannot see a
  commitment learns nothing about it);
- NotPermitted: 403 with the error's sentence;
- InvalidTransition: back to the page (`back`, else the commitment's page)
  with "Could not <move> this commitment: its status is <status>.";
- TermsChanged: the view's own answer (`on_terms_changed`), which shows the
  current terms; without one, back to the page with the error's sentence;
- every other error of the services (a proposal answered already or one
  open already, a blank comment, a reassignment to the person asked, an
  address that cannot be asked, nothing changed, ...): back to the page with
  the error's sentence. No domain error answers 500.

A view may answer NotPermitted itself too (`on_not_permitted`: the
commitment's page, saying why, with 403), for a person who sees the
commitment but may not make this move on it (a page left open from before
a reassignment).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from commitments.errors import (
    CommitmentError,
    CommitmentNotFound,
    InvalidTransition,
    NotPermitted,
    TermsChanged,
)
from commitments.models import Status

__all__ = ["maps_domain_errors"]

View = Callable[..., HttpResponse]
Back = Callable[[HttpRequest, dict[str, Any]], str]
OnTermsChanged = Callable[[HttpRequest, TermsChanged, dict[str, Any]], HttpResponse]
OnNotPermitted = Callable[[HttpRequest, NotPermitted, dict[str, Any]], HttpResponse]


def _commitment_page(request: HttpRequest, view_kwargs: dict[str, Any]) -> str:
    return reverse("commitment_detail", args=[view_kwargs["commitment_id"]])


def maps_domain_errors(
    view: View | None = None,
    *,
    back: Back = _commitment_page,
    on_terms_changed: OnTermsChanged | None = None,
    on_not_permitted: OnNotPermitted | None = None,
) -> Any:
    """Decorate a page view (bare, or with `back`, `on_terms_changed` and
    `on_not_permitted`, which receive the request and the view's keyword
    arguments)."""

    def decorate(view: View) -> View:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            answer: Callable[[], HttpResponse]
            try:
                return view(request, *args, **kwargs)
            except CommitmentNotFound:
                raise Http404("No such commitment.") from None
            except NotPermitted as exc:
                if on_not_permitted is None:
                    raise PermissionDenied(str(exc)) from None
                answer = functools.partial(on_not_permitted, request, exc, kwargs)
            except InvalidTransition as exc:
                status = Status(exc.current_status).label
                messages.error(
                    request, f"Could not {exc.action} this commitment: its status is {status}."
                )
                return redirect(back(request, kwargs))
            except TermsChanged as exc:
                if on_terms_changed is None:
                    messages.error(request, str(exc))
                    return redirect(back(request, kwargs))
                answer = functools.partial(on_terms_changed, request, exc, kwargs)
            except CommitmentError as exc:
                messages.error(request, str(exc))
                return redirect(back(request, kwargs))
            # Outside the handlers above, so the answer's own reads are mapped
            # too (the commitment may have gone from sight meanwhile).
            try:
                return answer()
            except CommitmentNotFound:
                raise Http404("No such commitment.") from None

        return wrapped

    return decorate(view) if view is not None else decorate
