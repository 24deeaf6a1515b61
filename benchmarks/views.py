"""The in-stack floor: the least an authenticated API call can cost here.

A DRF view behind the same bearer-token authentication as the inbox (one
indexed SELECT: the token by its digest, with its user), the same parser,
renderer, settings and middleware, answering a small JSON body. The same view
in a bare Django project is the bare floor (benchmarks/bare/); the endpoints'
figures are read as ratios of both (docs/benchmarks.md, "The floors").
"""

from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from integrations.authentication import BearerTokenAuthentication


class FloorView(APIView):
    authentication_classes = [BearerTokenAuthentication]
    permission_classes = [permissions.IsAuthenticated]
    renderer_classes = [JSONRenderer]

    # Not the service's API: left out of the OpenAPI document a benchmark's
    # server serves, which the fault run's schemathesis checks the API by
    # (in it, the floor's 401 read as a mismatch of the contract).
    @extend_schema(exclude=True)
    def post(self, request: Request) -> Response:
        return Response({"user": str(request.user.pk)})
