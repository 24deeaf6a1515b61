"""Remove the requests allauth's re-authentication parked in sessions.

Before `accounts.reauth` asked for the password on the GET, a POST to a page
that needs a recent sign-in (a provider key, a webhook URL, a token) after an
old sign-in was suspended whole into the session (its POST and META, the
session cookie included) until the password was given, for as long as the
session lived. This takes every such parked request out of every session
row; the rest of each session (the sign-in itself) is kept. Rows that do not
decode (another SECRET_KEY) are left alone: nobody can read them either.
"""

from django.conf import settings
from django.db import migrations

PARKED = "account_reauthentication_state"  # allauth's key; {"request": ...} when parked


def drop_parked_requests(apps, schema_editor):
    if settings.SESSION_ENGINE != "django.contrib.sessions.backends.db":
        return
    from django.contrib.sessions.backends.db import SessionStore

    Session = apps.get_model("sessions", "Session")
    store = SessionStore()
    rows = Session.objects.using(schema_editor.connection.alias)
    for row in rows.iterator(chunk_size=500):
        data = store.decode(row.session_data)
        state = data.get(PARKED)
        if not isinstance(state, dict) or "request" not in state:
            continue
        del data[PARKED]
        row.session_data = store.encode(data)
        row.save(update_fields=["session_data"])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_primary_email_rows_unverified"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(drop_parked_requests, migrations.RunPython.noop)]
