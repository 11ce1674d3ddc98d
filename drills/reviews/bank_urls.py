"""URLs of the question bank's pages, at the site's root in the ``reviews`` namespace (see :mod:`drills.urls`)."""

from django.urls import path

from drills.reviews import bank_views as views

urlpatterns = [
    path("bank/", views.bank, name="bank"),
    path("bank/export.apkg", views.bank_apkg, name="bank_apkg"),
    path("bank/deck/add/", views.deck_add, name="deck_add"),
    path("bank/deck/remove/", views.deck_remove, name="deck_remove"),
    path("bank/deck/undo/", views.deck_undo, name="deck_undo"),
    path("bank/<slug:slug>/", views.bank_item, name="bank_item"),
]
