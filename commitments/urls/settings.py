"""Settings, Deep links, under /settings/links/."""

from django.urls import path

from commitments.views import links

urlpatterns = [
    path("", links.link_template_list, name="link_templates"),
    path("<int:link_id>/delete", links.link_template_delete, name="link_template_delete"),
]
