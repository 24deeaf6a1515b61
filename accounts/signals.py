"""Signals of the accounts app: the one hook other apps have on changes to the
credentials that prove who a person is.

`credentials_changed` is sent by `User.save()` once a changed password or
e-mail address is stored, however the change was made: allauth's password
change, set and reset and its e-mail change, Django admin, `manage.py
changepassword`, a shell. Not sent for a new user.

Arguments: `user` (the saved instance) and `change` ("password" or "email").
A receiver may return a sentence for the person who made the change (or None);
`User.save()` keeps the sentences in `user.security_notices`, and the pages of
allauth's flows show them (accounts.receivers).
"""

from django.dispatch import Signal

credentials_changed = Signal()

# Sent when a user's address is proved (allauth's mailed code typed, or an operator
# vouching for it through `user_email_mark_verified`), after the change is
# stored. Arguments: `user`. Commitments waiting for that address (an
# invitation) are attached to the user by the commitments app's receiver.
email_verified = Signal()
