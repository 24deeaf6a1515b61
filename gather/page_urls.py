"""The capture page, mounted at /capture/ (the API route is in gather/urls.py)."""

from django.urls import path

from gather import views

urlpatterns = [
    path("", views.capture, name="capture"),
]
