"""allauth's pages that accounts replaces, mounted at accounts/ before allauth's own."""

from django.urls import path

from accounts import views

urlpatterns = [
    path("login/", views.login, name="account_login"),
    path("email/", views.email, name="account_email"),
    path("confirm-email/", views.email_verification_code, name="account_email_verification_sent"),
]
