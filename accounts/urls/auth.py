"""allauth's pages that accounts replaces, mounted at accounts/ before allauth's own."""

from django.urls import path

from accounts import views

urlpatterns = [
    path("login/", views.login, name="account_login"),
    path("signup/", views.signup, name="account_signup"),
    path("email/", views.email, name="account_email"),
    path("confirm-email/", views.email_verification_code, name="account_email_verification_sent"),
    # allauth.mfa's pages that change a factor, behind accounts.reauth.
    path("2fa/", views.second_factor_index, name="mfa_index"),
    path("2fa/totp/activate/", views.activate_totp, name="mfa_activate_totp"),
    path("2fa/totp/deactivate/", views.deactivate_totp, name="mfa_deactivate_totp"),
    # The service's own recovery codes (accounts.recovery_codes), where
    # allauth's pages for its own were: shown once, then only counted.
    path("2fa/recovery-codes/", views.recovery_codes_index, name="mfa_view_recovery_codes"),
    path(
        "2fa/recovery-codes/generate/",
        views.generate_recovery_codes,
        name="mfa_generate_recovery_codes",
    ),
    path("2fa/webauthn/", views.second_factor_index, name="mfa_list_webauthn"),
    path("2fa/webauthn/add/", views.add_webauthn, name="mfa_add_webauthn"),
    path("2fa/webauthn/keys/<int:pk>/edit/", views.edit_webauthn, name="mfa_edit_webauthn"),
    path("2fa/webauthn/keys/<int:pk>/remove/", views.remove_webauthn, name="mfa_remove_webauthn"),
]
