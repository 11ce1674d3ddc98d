"""URLs of the timed mock rounds (namespace ``rounds``), mounted at ``/rounds/``."""

from django.urls import path

from drills.rounds import views

app_name = "rounds"

urlpatterns = [
    path("", views.index, name="index"),
    path("start/<slug:slug>/", views.start, name="start"),
    path("<int:pk>/", views.round_page, name="round"),
    path("<int:pk>/clock/", views.clock, name="clock"),
    path("<int:pk>/finish/", views.finish, name="finish"),
    path("<int:pk>/finish/confirm/", views.confirm_finish, name="confirm_finish"),
    path("<int:pk>/report/", views.report, name="report"),
    path("<int:pk>/report/deck/", views.deck, name="deck"),
    path("<int:pk>/<int:position>/", views.item_page, name="item"),
    path("<int:pk>/<int:position>/save/", views.save, name="save"),
    path("<int:pk>/<int:position>/reveal/", views.reveal, name="reveal"),
    path("<int:pk>/<int:position>/submit/", views.submit, name="submit"),
    path("<int:pk>/<int:position>/again/", views.again, name="again"),
]
