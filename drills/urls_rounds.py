"""URLs of the timed mock rounds (namespace ``rounds``), mounted at ``/rounds/``."""

from django.urls import path

from . import views_rounds

app_name = "rounds"

urlpatterns = [
    path("", views_rounds.index, name="index"),
    path("start/<slug:slug>/", views_rounds.start, name="start"),
    path("<int:pk>/", views_rounds.round_page, name="round"),
    path("<int:pk>/clock/", views_rounds.clock, name="clock"),
    path("<int:pk>/finish/", views_rounds.finish, name="finish"),
    path("<int:pk>/report/", views_rounds.report, name="report"),
    path("<int:pk>/report/deck/", views_rounds.deck, name="deck"),
    path("<int:pk>/<int:position>/", views_rounds.item_page, name="item"),
    path("<int:pk>/<int:position>/save/", views_rounds.save, name="save"),
    path("<int:pk>/<int:position>/reveal/", views_rounds.reveal, name="reveal"),
    path("<int:pk>/<int:position>/submit/", views_rounds.submit, name="submit"),
]
