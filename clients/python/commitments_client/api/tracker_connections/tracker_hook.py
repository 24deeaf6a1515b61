from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.error_envelope import ErrorEnvelope
from ...models.git_hub_form_delivery_request import GitHubFormDeliveryRequest
from ...models.hook_result import HookResult
from ...models.tracker_hook_json_body import TrackerHookJsonBody
from ...types import UNSET, Response, Unset


def _get_kwargs(
    hook_id: str,
    *,
    body: TrackerHookJsonBody | GitHubFormDeliveryRequest | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/hooks/{hook_id}".format(
            hook_id=quote(str(hook_id), safe=""),
        ),
    }

    if isinstance(body, TrackerHookJsonBody):
        if not isinstance(body, Unset):
            _kwargs["json"] = body.to_dict()

        headers["Content-Type"] = "application/json"
    if isinstance(body, GitHubFormDeliveryRequest):
        if not isinstance(body, Unset):
            _kwargs["data"] = body.to_dict()
        headers["Content-Type"] = "application/x-www-form-urlencoded"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ErrorEnvelope | HookResult | None:
    if response.status_code == 200:
        response_200 = HookResult.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = HookResult.from_dict(response.json())

        return response_202

    if response.status_code == 400:
        response_400 = ErrorEnvelope.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = ErrorEnvelope.from_dict(response.json())

        return response_401

    if response.status_code == 413:
        response_413 = ErrorEnvelope.from_dict(response.json())

        return response_413

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[ErrorEnvelope | HookResult]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    hook_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TrackerHookJsonBody | GitHubFormDeliveryRequest | Unset = UNSET,
) -> Response[ErrorEnvelope | HookResult]:
    """Receive a tracker connection's webhook (GitHub, GitLab, Linear, Jira)

     The receiving URL of a tracker connection (Settings, Tracker connections, or `manage.py
    add_tracker_connection`). The body is the tracker's own webhook payload; the delivery is
    authenticated by the tracker's signature with the connection's secret, checked before the body is
    read: GitHub `X-Hub-Signature-256`, GitLab `X-Gitlab-Token`, Linear `Linear-Signature` (and
    `webhookTimestamp` within a minute), Jira `X-Hub-Signature`. An authentic delivery is always
    answered 2xx, saying what was done; its delivery id (`X-GitHub-Delivery`, `Idempotency-Key`,
    `Linear-Delivery`, `X-Atlassian-Webhook-Identifier`) makes a redelivery a no-op, and so does the
    same body under another delivery id (a replay: the id is not signed, the body is). The body is JSON,
    or GitHub's `application/x-www-form-urlencoded` form (`payload=<the JSON>`; the signature is over
    the raw body either way), of up to 25 MiB (not the 1 MiB of the other routes); an authentic body
    over that is answered 202 and logged as too large. What each event does: docs/trackers.md.

    Args:
        hook_id (str):
        body (TrackerHookJsonBody | Unset):
        body (GitHubFormDeliveryRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | HookResult]
    """

    kwargs = _get_kwargs(
        hook_id=hook_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    hook_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TrackerHookJsonBody | GitHubFormDeliveryRequest | Unset = UNSET,
) -> ErrorEnvelope | HookResult | None:
    """Receive a tracker connection's webhook (GitHub, GitLab, Linear, Jira)

     The receiving URL of a tracker connection (Settings, Tracker connections, or `manage.py
    add_tracker_connection`). The body is the tracker's own webhook payload; the delivery is
    authenticated by the tracker's signature with the connection's secret, checked before the body is
    read: GitHub `X-Hub-Signature-256`, GitLab `X-Gitlab-Token`, Linear `Linear-Signature` (and
    `webhookTimestamp` within a minute), Jira `X-Hub-Signature`. An authentic delivery is always
    answered 2xx, saying what was done; its delivery id (`X-GitHub-Delivery`, `Idempotency-Key`,
    `Linear-Delivery`, `X-Atlassian-Webhook-Identifier`) makes a redelivery a no-op, and so does the
    same body under another delivery id (a replay: the id is not signed, the body is). The body is JSON,
    or GitHub's `application/x-www-form-urlencoded` form (`payload=<the JSON>`; the signature is over
    the raw body either way), of up to 25 MiB (not the 1 MiB of the other routes); an authentic body
    over that is answered 202 and logged as too large. What each event does: docs/trackers.md.

    Args:
        hook_id (str):
        body (TrackerHookJsonBody | Unset):
        body (GitHubFormDeliveryRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | HookResult
    """

    return sync_detailed(
        hook_id=hook_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    hook_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TrackerHookJsonBody | GitHubFormDeliveryRequest | Unset = UNSET,
) -> Response[ErrorEnvelope | HookResult]:
    """Receive a tracker connection's webhook (GitHub, GitLab, Linear, Jira)

     The receiving URL of a tracker connection (Settings, Tracker connections, or `manage.py
    add_tracker_connection`). The body is the tracker's own webhook payload; the delivery is
    authenticated by the tracker's signature with the connection's secret, checked before the body is
    read: GitHub `X-Hub-Signature-256`, GitLab `X-Gitlab-Token`, Linear `Linear-Signature` (and
    `webhookTimestamp` within a minute), Jira `X-Hub-Signature`. An authentic delivery is always
    answered 2xx, saying what was done; its delivery id (`X-GitHub-Delivery`, `Idempotency-Key`,
    `Linear-Delivery`, `X-Atlassian-Webhook-Identifier`) makes a redelivery a no-op, and so does the
    same body under another delivery id (a replay: the id is not signed, the body is). The body is JSON,
    or GitHub's `application/x-www-form-urlencoded` form (`payload=<the JSON>`; the signature is over
    the raw body either way), of up to 25 MiB (not the 1 MiB of the other routes); an authentic body
    over that is answered 202 and logged as too large. What each event does: docs/trackers.md.

    Args:
        hook_id (str):
        body (TrackerHookJsonBody | Unset):
        body (GitHubFormDeliveryRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorEnvelope | HookResult]
    """

    kwargs = _get_kwargs(
        hook_id=hook_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    hook_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: TrackerHookJsonBody | GitHubFormDeliveryRequest | Unset = UNSET,
) -> ErrorEnvelope | HookResult | None:
    """Receive a tracker connection's webhook (GitHub, GitLab, Linear, Jira)

     The receiving URL of a tracker connection (Settings, Tracker connections, or `manage.py
    add_tracker_connection`). The body is the tracker's own webhook payload; the delivery is
    authenticated by the tracker's signature with the connection's secret, checked before the body is
    read: GitHub `X-Hub-Signature-256`, GitLab `X-Gitlab-Token`, Linear `Linear-Signature` (and
    `webhookTimestamp` within a minute), Jira `X-Hub-Signature`. An authentic delivery is always
    answered 2xx, saying what was done; its delivery id (`X-GitHub-Delivery`, `Idempotency-Key`,
    `Linear-Delivery`, `X-Atlassian-Webhook-Identifier`) makes a redelivery a no-op, and so does the
    same body under another delivery id (a replay: the id is not signed, the body is). The body is JSON,
    or GitHub's `application/x-www-form-urlencoded` form (`payload=<the JSON>`; the signature is over
    the raw body either way), of up to 25 MiB (not the 1 MiB of the other routes); an authentic body
    over that is answered 202 and logged as too large. What each event does: docs/trackers.md.

    Args:
        hook_id (str):
        body (TrackerHookJsonBody | Unset):
        body (GitHubFormDeliveryRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorEnvelope | HookResult
    """

    return (
        await asyncio_detailed(
            hook_id=hook_id,
            client=client,
            body=body,
        )
    ).parsed
