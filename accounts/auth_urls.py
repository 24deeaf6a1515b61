"""allauth's pages that accounts replaces, mounted at accounts/ before allauth's own."""

from django.urls import path

from accounts import views

urlpatterns = [
    path("email/", views.email, name="account_email"),
    path("confirm-email/resend/", views.verification_resend, name="account_verification_resend"),
]
