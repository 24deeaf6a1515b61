"""Settings, Deep links, under /settings/links/."""

from django.urls import path

from commitments import views_links

urlpatterns = [
    path("", views_links.link_template_list, name="link_templates"),
    path("<int:link_id>/delete", views_links.link_template_delete, name="link_template_delete"),
]
