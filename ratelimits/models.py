"""The tables behind the shared limits: the token buckets kept in the
database (when no Redis is configured), and Django's database cache.

`CacheEntry` is the table of `django.core.cache.backends.db.DatabaseCache`
(settings.CACHES without REDIS_URL), declared as a model so that `migrate`
creates it wherever the service starts (`./scripts/serve`, the container,
tests); Django's `createcachetable` then finds it and does nothing. Its
columns are the ones `createcachetable` makes. Nothing reads it through the
ORM: the cache backend does.
"""

from __future__ import annotations

from django.db import models

CACHE_TABLE = "django_cache"


class Bucket(models.Model):
    """One token bucket: `tokens` as of `updated_at` (refilled on read)."""

    key = models.CharField(max_length=200, primary_key=True)
    tokens = models.FloatField()
    updated_at = models.FloatField()  # seconds since the epoch (time.time())

    def __str__(self) -> str:
        return f"{self.key}: {self.tokens:.2f}"


class CacheEntry(models.Model):
    cache_key = models.CharField(max_length=255, primary_key=True)
    value = models.TextField()
    expires = models.DateTimeField(db_index=True)

    class Meta:
        db_table = CACHE_TABLE
        verbose_name_plural = "cache entries"

    def __str__(self) -> str:
        return self.cache_key
