"""The tests' settings: config.settings in development mode.

DEBUG is off unless set (config/settings.py); the tests run as a developer
does on this machine, with DEBUG=1 (unless the environment says otherwise):
the development keys, loopback webhooks, static files from the finders. Set
here, before config.settings reads it, and in this process's environment, so
the workers and servers the tests start (tests/harness/services.py) run the
same way. Tests of the defaults and of production mode build their own
settings (tests/harness/settings.py).
"""

import os

os.environ.setdefault("DEBUG", "1")
# Each move's nudge goes at once, as the tests of the cap, the order and the
# pages count them; the tests of moves close together set the window (and
# pass it to the workers they start, which inherit this environment).
os.environ.setdefault("NUDGE_COALESCE_WINDOW", "0")

from config.settings import *  # noqa: F403

# lib.db keeps each statement's compiled text by its shape: in the tests,
# every kept text is compared with Django's own compile on every call.
DB_CHECK_STATEMENTS = True
