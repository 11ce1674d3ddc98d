"""URLs of the question bank, reviews and progress (namespace ``reviews``), mounted at the site's root."""

from django.urls import path

from . import views_bank, views_reviews

app_name = "reviews"

urlpatterns = [
    path("bank/", views_bank.bank, name="bank"),
    path("bank/export.apkg", views_bank.bank_apkg, name="bank_apkg"),
    path("bank/deck/add/", views_bank.deck_add, name="deck_add"),
    path("bank/deck/remove/", views_bank.deck_remove, name="deck_remove"),
    path("bank/<slug:slug>/", views_bank.bank_item, name="bank_item"),
    path("review/", views_reviews.review, name="review"),
    path("review/card/<int:pk>/", views_reviews.card, name="card"),
    path("review/card/<int:pk>/reveal/", views_reviews.reveal, name="reveal"),
    path("review/card/<int:pk>/suggest/", views_reviews.suggest, name="suggest"),
    path("review/card/<int:pk>/rate/", views_reviews.rate, name="rate"),
    path("review/card/<int:pk>/answer/", views_reviews.answer, name="answer"),
    path("review/result/<int:pk>/", views_reviews.result, name="result"),
    path("review/settings/", views_reviews.review_settings, name="settings"),
    path("review/export/deck.csv", views_reviews.export_deck, name="export_deck"),
    path("review/export/history.csv", views_reviews.export_history, name="export_history"),
    path("progress/", views_reviews.progress, name="progress"),
]
