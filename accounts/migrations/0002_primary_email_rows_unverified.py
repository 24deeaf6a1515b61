"""Give every user a primary e-mail address row, unverified unless one says otherwise.

Verification becomes mandatory with this release. Nobody is grandfathered: a
user whose address was never verified (every sign-up so far, since verification
was off, and users made by `create_user` before it vouched for them) gets a
primary, *unverified* address row, receives nothing through the inbox or nudges,
and is mailed a verification link at the next sign-in. Rows allauth already
has are kept as they are (an address verified earlier stays verified).
"""

from django.db import migrations


def add_primary_rows(apps, schema_editor):
    User = apps.get_model("accounts", "User")
    EmailAddress = apps.get_model("account", "EmailAddress")
    with_primary = EmailAddress.objects.filter(primary=True).values("user_id")
    for user in User.objects.exclude(pk__in=with_primary).only("pk", "email").iterator():
        address = EmailAddress.objects.filter(user_id=user.pk, email__iexact=user.email).first()
        if address is None:
            EmailAddress.objects.create(
                user_id=user.pk, email=user.email.lower(), primary=True, verified=False
            )
        else:
            address.primary = True
            address.save(update_fields=["primary"])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("account", "0009_emailaddress_unique_primary_email"),
    ]

    operations = [migrations.RunPython(add_primary_rows, migrations.RunPython.noop)]
