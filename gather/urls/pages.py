"""The capture page, mounted at /capture/ (the API route is in gather/urls/api.py)."""

from django.urls import path

from gather.views import capture

urlpatterns = [
    path("", capture.capture, name="capture"),
]
