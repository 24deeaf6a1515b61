"""What tests share: fake services and real processes (a Redis server, Celery
workers, servers), API and page helpers, fixtures' building blocks. Test
modules import from here and never from one another
(tests/test_harness_imports.py keeps it so)."""
