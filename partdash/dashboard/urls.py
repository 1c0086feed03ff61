from django.urls import path

from partdash.dashboard import views

urlpatterns = [
    path("", views.fleet, name="fleet"),
]
