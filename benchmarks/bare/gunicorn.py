"""gunicorn's settings for the bare floor: the service's (config/gunicorn.py:
sync workers, the application preloaded, the same bind), without its access
log and its logging configuration: the bare project logs nothing for a
successful call."""

from config.gunicorn import bind, control_socket_disable, preload_app

__all__ = ["bind", "control_socket_disable", "preload_app"]
accesslog = None
