"""The pages map the domain errors of commitments' services in one place
(commitments.views.errors.maps_domain_errors), as config/api_errors.py does
for the API: a view lets CommitmentNotFound, NotPermitted,
InvalidTransition, TermsChanged and the other errors of the services rise,
and no view catches the first four by hand."""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

import pytest
from django.contrib.messages import get_messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.signed_cookies import SessionStore
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.test import RequestFactory

import commitments.views
from commitments.errors import (
    AddressNotAskable,
    CommentInvalid,
    CommitmentNotFound,
    InvalidTransition,
    NothingChanged,
    NotPermitted,
    ProposalAlreadyOpen,
    ProposalInvalid,
    ProposalNotOpen,
    ReassignInvalid,
    TermsChanged,
)
from commitments.models import Status
from commitments.views.errors import maps_domain_errors

MAPPED = {"CommitmentNotFound", "NotPermitted", "InvalidTransition", "TermsChanged"}
VIEWS = Path(commitments.views.__file__).parent
COMMITMENT_ID = uuid.uuid4()


def _request():
    request = RequestFactory().post("/", {"next": "/?status=active"})
    request.session = SessionStore()
    request._messages = FallbackStorage(request)
    return request


def _raising(error: Exception):
    def view(request, commitment_id):
        raise error

    return view


def test_not_found_is_a_404_that_says_no_such_commitment():
    view = maps_domain_errors(_raising(CommitmentNotFound()))
    with pytest.raises(Http404, match=r"No such commitment\."):
        view(_request(), commitment_id=COMMITMENT_ID)


def test_not_permitted_is_a_403_with_the_errors_sentence():
    view = maps_domain_errors(_raising(NotPermitted(action="accept", reason="not yours")))
    with pytest.raises(PermissionDenied, match="Not allowed to accept: not yours"):
        view(_request(), commitment_id=COMMITMENT_ID)


def test_invalid_transition_goes_back_with_the_status_said():
    error = InvalidTransition(action="complete", current_status=Status.REFUSED)
    request = _request()
    response = maps_domain_errors(_raising(error))(request, commitment_id=COMMITMENT_ID)
    assert response.status_code == 302
    assert response["Location"] == f"/commitments/{COMMITMENT_ID}"
    said = [str(message) for message in get_messages(request)]
    assert said == ["Could not complete this commitment: its status is Declined."]


def test_invalid_transition_goes_back_where_the_view_says():
    error = InvalidTransition(action="accept", current_status=Status.ACTIVE)
    view = maps_domain_errors(_raising(error), back=lambda request, kwargs: request.POST["next"])
    response = view(_request(), commitment_id=COMMITMENT_ID)
    assert response["Location"] == "/?status=active"


def test_terms_changed_is_the_views_own_answer():
    error = TermsChanged(action="accept", shown_version=1, current_version=2)
    seen = []

    def answer(request, exc, kwargs):
        seen.append((exc, kwargs))
        return HttpResponse("new terms", status=409)

    view = maps_domain_errors(_raising(error), on_terms_changed=answer)
    response = view(_request(), commitment_id=COMMITMENT_ID)
    assert (response.status_code, response.content) == (409, b"new terms")
    assert seen == [(error, {"commitment_id": COMMITMENT_ID})]


def test_terms_changed_answer_that_finds_the_commitment_gone_is_a_404():
    error = TermsChanged(action="edit", shown_version=1, current_version=2)

    def answer(request, exc, kwargs):
        raise CommitmentNotFound()

    view = maps_domain_errors(_raising(error), on_terms_changed=answer)
    with pytest.raises(Http404, match=r"No such commitment\."):
        view(_request(), commitment_id=COMMITMENT_ID)


def test_terms_changed_without_an_answer_goes_back_with_the_errors_sentence():
    error = TermsChanged(action="propose other terms for", shown_version=1, current_version=2)
    request = _request()
    response = maps_domain_errors(_raising(error))(request, commitment_id=COMMITMENT_ID)
    assert response.status_code == 302
    assert response["Location"] == f"/commitments/{COMMITMENT_ID}"
    assert [str(m) for m in get_messages(request)] == [str(error)]


@pytest.mark.parametrize(
    "error",
    [
        ProposalNotOpen(),
        ProposalAlreadyOpen(),
        ProposalInvalid("More time needs a deadline later than the current one."),
        CommentInvalid("Write something to comment."),
        ReassignInvalid("It is asked of that person already."),
        AddressNotAskable("This address belongs to a closed account."),
        NothingChanged(),
    ],
    ids=lambda error: type(error).__name__,
)
def test_every_other_domain_error_goes_back_with_its_sentence(error):
    request = _request()
    view = maps_domain_errors(_raising(error), back=lambda request, kwargs: request.POST["next"])
    response = view(request, commitment_id=COMMITMENT_ID)
    assert (response.status_code, response["Location"]) == (302, "/?status=active")
    assert [str(m) for m in get_messages(request)] == [str(error)]


def _caught_by_hand(path: Path) -> list[str]:
    """`except <mapped error>` and `Http404("No such commitment.")` in `path`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            types = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            names = {getattr(kind, "id", getattr(kind, "attr", "")) for kind in types}
            found += [f"{path.name}:{node.lineno} except {name}" for name in names & MAPPED]
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "Http404"
            and any(
                isinstance(arg, ast.Constant) and arg.value == "No such commitment."
                for arg in node.args
            )
        ):
            found.append(f"{path.name}:{node.lineno} Http404")
    return found


def test_no_page_view_maps_the_domain_errors_by_hand():
    modules = [path for path in sorted(VIEWS.glob("*.py")) if path.name != "errors.py"]
    assert {path.name for path in modules} >= {"accord.py", "commitment.py"}
    assert [found for path in modules for found in _caught_by_hand(path)] == []
