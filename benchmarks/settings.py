"""Settings of the benchmark's server and worker (benchmarks/run.py): the
production settings (DEBUG=0 comes from the environment run.py gives), plus

- the framework floor's route (benchmarks/urls.py), served only while the
  benchmark runs: the production URLconf never names it;
- outbound requests allowed to loopback, where the benchmark's own webhook
  receiver and fake language-model provider listen. Production refuses that
  (deployment check commitments.E004); this module is the one place that
  turns the check off, and nothing but the benchmark loads it.
"""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "benchmarks.urls"
OUTBOUND_ALLOW_LOOPBACK = True

import config.checks as _checks  # noqa: E402

_checks._outbound_loopback = lambda: []
