from tests.harness.settings import run_django  # noqa: F401  (the fixture, for tests here)
