"""POST /api/gather and the capture page."""

urlpatterns: list = []
