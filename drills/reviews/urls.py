"""URLs of reviews and progress, at the site's root in the ``reviews`` namespace (see :mod:`drills.urls`)."""

from django.urls import path

from drills.reviews import views

urlpatterns = [
    path("review/", views.review, name="review"),
    path("review/card/<int:pk>/", views.card, name="card"),
    path("review/card/<int:pk>/reveal/", views.reveal, name="reveal"),
    path("review/card/<int:pk>/suggest/", views.suggest, name="suggest"),
    path("review/card/<int:pk>/rate/", views.rate, name="rate"),
    path("review/card/<int:pk>/answer/", views.answer, name="answer"),
    path("review/result/<int:pk>/", views.result, name="result"),
    path("review/settings/", views.review_settings, name="settings"),
    path("review/export/deck.csv", views.export_deck, name="export_deck"),
    path("review/export/history.csv", views.export_history, name="export_history"),
    path("progress/", views.progress, name="progress"),
]
