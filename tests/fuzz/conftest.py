"""Hypothesis profiles for the fuzz tests: `bounded` in `make test`, `long` in `make fuzz` (CI).

KIT_FUZZ picks the profile (default `bounded`); KIT_FUZZ_EXAMPLES overrides its case count. Tests
that are cheap per case run `more(3)` times the count. The bounded profile is derandomized, so `make test` runs the same cases every time; the long one
draws new cases on each run, which is what finds new crashes.
"""

import os

from hypothesis import HealthCheck, settings

_QUIET = [
    HealthCheck.too_slow,
    HealthCheck.function_scoped_fixture,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
]
_COUNT = os.environ.get("KIT_FUZZ_EXAMPLES")

settings.register_profile(
    "bounded",
    max_examples=int(_COUNT or 20),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_QUIET,
    print_blob=True,
)
settings.register_profile(
    "long",
    max_examples=int(_COUNT or 350),
    deadline=None,
    database=None,
    suppress_health_check=_QUIET,
    print_blob=True,
)
settings.load_profile(os.environ.get("KIT_FUZZ", "bounded"))
