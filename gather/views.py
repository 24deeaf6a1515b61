"""The capture page. POST /api/gather lives in gather/urls.py."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def capture(request: HttpRequest) -> HttpResponse:
    # Not built yet: the page says so instead of pretending.
    return render(request, "gather/capture.html")
