"""The HTTP layer every HTTP connector uses: timeouts, error mapping, redaction, idempotency.

A connector builds one :class:`HttpClient` per backend and calls :meth:`HttpClient.request`
from its tools. The client hides ``httpx`` entirely: a call returns an
:class:`HttpResponse` or raises one of the core exceptions, never an ``httpx`` one::

    client = HttpClient(
        "https://api.github.com",
        vendor="github",
        headers={"Authorization": f"Bearer {token}", "X-GitHub-Api-Version": "2022-11-28"},
        secrets=[token],
    )
    resp = await client.request("POST", url_path("/repos/{owner}/{repo}/issues", owner=o, repo=r),
                                json={"title": title}, timeouts=client.timeouts.capped_at(ctx.timeout))
    number = resp.json["number"]

How a failure is reported depends on whether the request could have reached the server
and on whether the call writes (``write`` defaults to true for every method except
``GET``, ``HEAD`` and ``OPTIONS``):

- could not connect (refused, DNS, TLS verification, connect timeout, no free pooled
  connection): nothing was sent, so ``ToolError(code="connect")`` for reads and writes;
- the connection was lost after the request was sent (reset, closed without a reply,
  body cut off): ``EffectUncertainError`` for a write, ``ToolError(code="connection_lost")``
  for a read;
- a read timeout, or ``Timeouts.total`` exceeded, after the request was sent:
  ``EffectUncertainError`` for a write, ``ToolError(code="timeout")`` for a read;
- the server answered a status that is neither 2xx nor in ``ok_statuses``:
  ``ToolError(status=<status>, code=<vendor code>)``, for reads and writes alike, with a
  message such as ``github: POST /repos/o/r/issues failed: HTTP 422 (validation_failed):
  Validation Failed`` (the path is shown without its query string).

A 5xx on a write is a :class:`~reversi_core.errors.ToolError`, not an uncertain outcome:
the server answered, so the call is treated as failed. For a gateway error (502, 504) a
proxy answered for a backend that may in fact have applied the write; a connector or a
person should check before retrying. Only a lost connection or a timeout is uncertain.

No retries are made, not even on a connect error: the engine owns retry semantics
(a retried write must carry the same idempotency key, which only the caller knows).
Redirects are not followed and no cookies are kept between calls.

Credentials given in ``secrets`` (and the credential part of an ``Authorization``
header) are registered with :func:`reversi_core.redact.register_secret`, scrubbed from
every error message, from the returned JSON, text and headers, and never sent in a URL
or a request body: a request whose URL or body would carry one is refused before it is
sent. A ``base_url`` that embeds ``user:password@`` is refused.

httpx references: https://www.python-httpx.org/advanced/timeouts/ (the connect and read
timeouts) and https://www.python-httpx.org/exceptions/ (the transport errors mapped above).
"""

from ._client import READ_METHODS, HttpClient, HttpResponse, Timeouts, check_base_url, url_path
from ._connector import (
    AuthScheme,
    BaseUrl,
    Basic,
    Bearer,
    HeaderToken,
    HttpConnector,
    RawAuthorization,
    Setting,
)
from ._errors import (
    RATE_LIMITED,
    ErrorCodeHook,
    ErrorTable,
    RateLimit,
    body_value,
    default_error_code,
)
from ._tools import AlreadyDone, RequestTool

__all__ = [
    "RATE_LIMITED",
    "READ_METHODS",
    "AlreadyDone",
    "AuthScheme",
    "BaseUrl",
    "Basic",
    "Bearer",
    "ErrorCodeHook",
    "ErrorTable",
    "HeaderToken",
    "HttpClient",
    "HttpConnector",
    "HttpResponse",
    "RateLimit",
    "RawAuthorization",
    "RequestTool",
    "Setting",
    "Timeouts",
    "body_value",
    "check_base_url",
    "default_error_code",
    "url_path",
]
