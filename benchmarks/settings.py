"""Settings of the benchmark's server and worker (benchmarks/run.py): the
production settings (DEBUG=0 comes from the environment run.py gives), plus

- the framework floor's route (benchmarks/urls.py), served only while the
  benchmark runs: the production URLconf never names it;
- outbound requests allowed to loopback, where the benchmark's own webhook
  receiver and fake language-model provider listen. Production refuses that
  (deployment check commitments.E004, which would stop the server and worker
  at start); this module silences that one check, as any settings module
  silences a check, and nothing but the benchmark loads it.
"""

from config.settings import *  # noqa: F403
from config.settings import SILENCED_SYSTEM_CHECKS

ROOT_URLCONF = "benchmarks.urls"
OUTBOUND_ALLOW_LOOPBACK = True
SILENCED_SYSTEM_CHECKS = [*SILENCED_SYSTEM_CHECKS, "commitments.E004"]
